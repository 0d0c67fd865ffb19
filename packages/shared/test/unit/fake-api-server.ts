import { Agent, createServer } from 'node:http';
import type { IncomingHttpHeaders, Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { ApiEndpoint } from '../../src/client/endpoint.js';
import { KubeClient } from '../../src/client/kube-client.js';

// A local API server on Node's own http (no nock: nock-isolation.test.ts) for the *-edges.test.ts
// files of the client, and the small helpers they share.

export interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

export interface Answer {
  status: number;
  /** Drop the connection instead of answering (a reset before any answer). */
  reset?: boolean;
  body?: string;
  headers?: Record<string, string>;
}

export interface FakeApi {
  client: KubeClient;
  seen: Seen[];
  close: () => Promise<void>;
}

/**
 * A local API server answering each request with `answer(request)`, recording every request, and a
 * client of it without rate limits. `answer` returning undefined leaves that request unanswered
 * (until close).
 */
export async function fakeApi(answer: (s: Seen) => Answer | undefined = () => ({ status: 200, body: '{}' })): Promise<FakeApi> {
  const seen: Seen[] = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const s: Seen = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      seen.push(s);
      const a = answer(s);
      if (!a) return;
      if (a.reset) return void req.socket.destroy();
      res.writeHead(a.status, { 'Content-Type': 'application/json', ...(a.headers ?? {}) });
      res.end(a.body ?? '');
    });
  });
  server.on('connection', (sock: Socket) => {
    sockets.add(sock);
    sock.on('close', () => sockets.delete(sock));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  const client = KubeClient.forEndpoint({ server: `http://127.0.0.1:${port}` }, { qps: 0, burst: 1 });
  return {
    client,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        client.close();
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** A client whose endpoint counts the connection pools (agents) asked of it. */
export function countingAgents(server: string): { client: KubeClient; agents: () => number } {
  let agents = 0;
  const auth = Object.freeze({});
  const endpoint: ApiEndpoint = {
    server,
    agent: () => {
      agents++;
      return Promise.resolve(new Agent({ keepAlive: true }));
    },
    authHeaders: () => Promise.resolve(auth),
  };
  return { client: KubeClient.forEndpoint(endpoint, { qps: 0, burst: 1 }), agents: () => agents };
}

export const query = (s: Seen): URLSearchParams => new URL(s.url, 'http://x').searchParams;
export const pathOf = (s: Seen): string => new URL(s.url, 'http://x').pathname;

/**
 * Errors thrown out of the process from here on, instead of mocha's handler (which would report
 * them against whichever test runs then).
 */
export function catchUncaught(): { errors: unknown[]; restore: () => void } {
  const errors: unknown[] = [];
  const onUncaught = (e: unknown): number => errors.push(e);
  const mochas = process.listeners('uncaughtException');
  process.removeAllListeners('uncaughtException');
  process.on('uncaughtException', onUncaught);
  return {
    errors,
    restore: () => {
      process.removeListener('uncaughtException', onUncaught);
      for (const l of mochas) process.on('uncaughtException', l);
    },
  };
}

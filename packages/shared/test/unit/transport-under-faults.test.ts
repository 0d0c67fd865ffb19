import { expect } from 'chai';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { seededRandom } from '@topovol/testing';
import { send } from '../../src/client/http-transport.js';
import { originOf } from '../../src/client/http-request.js';
import type { HttpAnswer } from '../../src/client/http-request.js';
import { MAX_SOCKETS } from '../../src/client/endpoint.js';
import { keepAliveAgent } from '../../src/client/keep-alive-agent.js';

// Both transports under the faults the integration suites' fault proxy injects (reset before an
// answer, an answer lost after the request was read, 429 and 5xx, delays), plus what a Node server
// does on its own (closing idle connections after its keep-alive timeout, closing after an answer
// that says `Connection: close`), with many requests at once on few connections. Whatever happens,
// every request settles, every answer is its own request's (never one meant for another request
// on the same connection), and the pool has all its connections again afterwards.

type Fault = 'reset' | 'lost' | 'throttle' | 'error' | 'delay' | 'close' | 'ok';

interface Storm {
  url: string;
  faults: Record<Fault, number>;
  /** Connections open on the server now. */
  open: () => number;
  /** Turn faults off. */
  calm: () => void;
  close: () => Promise<void>;
}

async function stormServer(seed: number): Promise<Storm> {
  const random = seededRandom(seed);
  const faults: Record<Fault, number> = { reset: 0, lost: 0, throttle: 0, error: 0, delay: 0, close: 0, ok: 0 };
  let calm = false;
  const sockets = new Set<Socket>();
  const server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (d: string) => (body += d));
    const r = calm ? 1 : random();
    const fault: Fault = r < 0.06 ? 'reset' : r < 0.12 ? 'lost' : r < 0.2 ? 'throttle' : r < 0.28 ? 'error' : r < 0.4 ? 'delay' : r < 0.45 ? 'close' : 'ok';
    faults[fault]++;
    // As the fault proxy's reset: the connection goes before the request is read.
    if (fault === 'reset') return void req.socket.destroy();
    req.on('end', () => {
      const echo = JSON.stringify({ path: req.url, method: req.method, body });
      if (fault === 'lost') return void req.socket.destroy();
      if (fault === 'throttle') return void res.writeHead(429, { 'Retry-After': '1', 'Content-Type': 'application/json' }).end('{"kind":"Status","code":429}');
      if (fault === 'error') return void res.writeHead(503, { 'Content-Type': 'application/json' }).end('{"kind":"Status","code":503}');
      const answer = (): void => void res.writeHead(200, { 'Content-Type': 'application/json', ...(fault === 'close' ? { Connection: 'close' } : {}) }).end(echo);
      if (fault === 'delay') setTimeout(answer, Math.floor(random() * 30));
      else answer();
    });
  });
  // Idle connections close soon: requests race the server's close of a pooled connection.
  server.keepAliveTimeout = 20;
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    faults,
    open: () => sockets.size,
    calm: () => (calm = true),
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

const TRANSPORTS = [
  { name: 'direct', nodeHttp: false },
  { name: "Node's http", nodeHttp: true },
];

describe('the transports under faults', function () {
  this.timeout(60_000);
  for (const t of TRANSPORTS) {
    it(`${t.name}: 1,500 requests, 96 at once on a pool of 64, every fault: each settles with its own answer, and the pool recovers`, async function () {
      const srv = await stormServer(20261201);
      const agent = keepAliveAgent(srv.url);
      const origin = originOf(srv.url);
      const sendOne = (i: number): Promise<HttpAnswer> => {
        const method = i % 3 === 0 ? 'GET' : i % 3 === 1 ? 'PUT' : 'POST';
        // Bodies past ASCII: Content-Length counts bytes.
        const body = method === 'GET' ? undefined : JSON.stringify({ i, note: 'é→'.repeat(i % 50) });
        return send({ method, origin, path: `/r/${i}`, headers: { 'Content-Type': 'application/json' }, agent, body, nodeHttp: t.nodeHttp, timeoutMs: 20_000 });
      };
      try {
        let next = 0;
        const outcomes: { i: number; answer?: HttpAnswer; error?: Error }[] = [];
        const worker = async (): Promise<void> => {
          for (let i = next++; i < 1_500; i = next++) {
            try {
              outcomes.push({ i, answer: await sendOne(i) });
            } catch (err) {
              outcomes.push({ i, error: err as Error });
            }
          }
        };
        await Promise.all(Array.from({ length: 96 }, worker));
        expect(outcomes).to.have.length(1_500);
        const kinds = new Map<string, number>();
        for (const o of outcomes) {
          if (o.error) {
            const code = (o.error as Error & { code?: string }).code ?? o.error.message;
            kinds.set(code, (kinds.get(code) ?? 0) + 1);
            continue;
          }
          const a = o.answer!;
          kinds.set(String(a.status), (kinds.get(String(a.status)) ?? 0) + 1);
          if (a.status !== 200) continue;
          const echo = JSON.parse(a.body) as { path: string; body: string };
          expect(echo.path, 'its own answer').to.equal(`/r/${o.i}`);
          if (o.i % 3 !== 0) expect((JSON.parse(echo.body) as { i: number }).i).to.equal(o.i);
        }
        // Failures are the connection's, never a timeout (nothing waits for an answer that cannot come).
        expect([...kinds.keys()].filter((k) => !/^(200|429|503|ECONNRESET|EPIPE)$/.test(k)), JSON.stringify([...kinds])).to.deep.equal([]);
        expect(srv.faults.reset + srv.faults.lost, 'faults happened').to.be.greaterThan(100);

        // Calm again: the pool has every connection back (none left counted as busy), all at once.
        srv.calm();
        const after = await Promise.all(Array.from({ length: 128 }, (_, k) => sendOne(10_000 + 3 * k)));
        expect(after.map((a) => a.status)).to.deep.equal(after.map(() => 200));
        expect(srv.open(), 'at most the pool size').to.be.at.most(MAX_SOCKETS);
      } finally {
        agent.destroy();
        await srv.close();
      }
    });
  }
});

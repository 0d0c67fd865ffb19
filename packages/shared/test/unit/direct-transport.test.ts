import { expect } from 'chai';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { classifyError } from '../../src/client/errors.js';
import { DirectPool } from '../../src/client/direct-pool.js';
import { requestHead, sendDirect } from '../../src/client/direct-transport.js';
import { originOf } from '../../src/client/http-request.js';
import type { HttpRequest } from '../../src/client/http-request.js';
import { keepAliveAgent } from '../../src/client/keep-alive-agent.js';
import { catchUncaught } from './fake-api-server.js';

// The direct transport against a server written on raw sockets, for what a well-behaved Node or Go
// server never does: answer late, write to an idle connection, split an answer anywhere. What it
// shares with Node's http path (limits, aborts, stale connections) is in http-transport.test.ts.

interface RawServer {
  url: string;
  /** Requests seen, as "<connection number> <request line>". */
  seen: string[];
  connections: () => number;
  sockets: net.Socket[];
  close: () => void;
}

/** Answers each request by `answer(requestLine, socket)`; requests carry no body or a Content-Length one. */
async function rawServer(answer: (line: string, socket: net.Socket, n: number) => void): Promise<RawServer> {
  const seen: string[] = [];
  const sockets: net.Socket[] = [];
  const server = net.createServer((socket) => {
    sockets.push(socket);
    const n = sockets.length;
    let buf = '';
    socket.on('error', () => undefined);
    socket.on('data', (d: Buffer) => {
      buf += d.toString('latin1');
      for (;;) {
        const end = buf.indexOf('\r\n\r\n');
        if (end === -1) return;
        const head = buf.slice(0, end);
        const length = Number(/\r\ncontent-length: (\d+)/i.exec(head)?.[1] ?? 0);
        if (buf.length < end + 4 + length) return;
        buf = buf.slice(end + 4 + length);
        const line = head.split('\r\n')[0] ?? '';
        seen.push(`${n} ${line}`);
        answer(line, socket, n);
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    sockets,
    connections: () => sockets.length,
    close: () => {
      for (const s of sockets) s.destroy();
      server.close();
    },
  };
}

const ok = (body: string): string => `HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
const pathOf = (line: string): string => line.split(' ')[1] ?? '';

function request(srv: RawServer, path: string, extra: Partial<HttpRequest> = {}): HttpRequest {
  return { method: 'GET', origin: originOf(srv.url), path, headers: {}, agent: keepAliveAgent(srv.url), ...extra };
}

describe('the direct transport', function () {
  it('a request that timed out closes its connection: its late answer is never read as the next request\'s', async function () {
    const srv = await rawServer((line, socket) => {
      const p = pathOf(line);
      setTimeout(() => socket.write(ok(JSON.stringify({ path: p }))), p === '/slow' ? 150 : 0);
    });
    const pool = new DirectPool({ host: '127.0.0.1', port: Number(new URL(srv.url).port) }, 1);
    try {
      const err = await sendDirect(pool, request(srv, '/slow', { timeoutMs: 50 })).then(() => undefined, (e: unknown) => e);
      expect(classifyError(err).kind).to.equal('Timeout');
      const next = await sendDirect(pool, request(srv, '/fast'));
      expect(JSON.parse(next.body)).to.deep.equal({ path: '/fast' });
      await new Promise((r) => setTimeout(r, 200));
      const again = await sendDirect(pool, request(srv, '/again'));
      expect(JSON.parse(again.body)).to.deep.equal({ path: '/again' });
      expect(srv.connections()).to.equal(2);
    } finally {
      pool.destroy();
      srv.close();
    }
  });

  it('bytes written to an idle connection close it; the next request goes on a new one', async function () {
    const srv = await rawServer((line, socket) => {
      socket.write(ok('{}'));
      // Something nobody asked for, after the answer: the framing of this connection is lost.
      setTimeout(() => socket.write(ok('{"unasked":true}')), 20);
    });
    const pool = new DirectPool({ host: '127.0.0.1', port: Number(new URL(srv.url).port) }, 4);
    try {
      expect((await sendDirect(pool, request(srv, '/a'))).body).to.equal('{}');
      await new Promise((r) => setTimeout(r, 60));
      expect((await sendDirect(pool, request(srv, '/b'))).body).to.equal('{}');
      expect(srv.seen).to.deep.equal(['1 GET /a HTTP/1.1', '2 GET /b HTTP/1.1']);
    } finally {
      pool.destroy();
      srv.close();
    }
  });

  it('an answer sent a byte at a time, chunked, is read whole', async function () {
    const body = JSON.stringify({ kind: 'PersistentVolume', metadata: { name: 'pv-ü' } });
    const wire = `HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n${Buffer.byteLength(body).toString(16)}\r\n${body}\r\n0\r\n\r\n`;
    const srv = await rawServer((_line, socket) => {
      const bytes = Buffer.from(wire);
      let i = 0;
      const next = (): void => {
        if (i >= bytes.length) return;
        socket.write(bytes.subarray(i, ++i));
        setImmediate(next);
      };
      next();
    });
    const pool = new DirectPool({ host: '127.0.0.1', port: Number(new URL(srv.url).port) }, 1);
    try {
      for (let k = 0; k < 2; k++) expect((await sendDirect(pool, request(srv, '/x'))).body).to.equal(body);
      expect(srv.connections()).to.equal(1);
    } finally {
      pool.destroy();
      srv.close();
    }
  });

  it('an answer that breaks HTTP framing fails the request and its connection is not reused', async function () {
    const srv = await rawServer((line, socket) => {
      if (pathOf(line) === '/bad') socket.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok');
      else socket.write(ok('{}'));
    });
    const pool = new DirectPool({ host: '127.0.0.1', port: Number(new URL(srv.url).port) }, 1);
    try {
      const err = await sendDirect(pool, request(srv, '/bad')).then(() => undefined, (e: unknown) => e);
      expect((err as Error).message).to.include('bad Content-Length');
      expect((await sendDirect(pool, request(srv, '/good'))).body).to.equal('{}');
      expect(srv.connections()).to.equal(2);
    } finally {
      pool.destroy();
      srv.close();
    }
  });

  it('at most maxSockets connections; requests past them wait their turn, and one that gives up leaves the queue', async function () {
    const srv = await rawServer((line, socket) => setTimeout(() => socket.write(ok(JSON.stringify(pathOf(line)))), 30));
    const pool = new DirectPool({ host: '127.0.0.1', port: Number(new URL(srv.url).port) }, 2);
    try {
      const ac = new AbortController();
      const paths = ['/1', '/2', '/3', '/4', '/5'];
      const sent = paths.map((p) => sendDirect(pool, request(srv, p, p === '/4' ? { signal: ac.signal } : {})).then((a) => JSON.parse(a.body) as string, (e: unknown) => classifyError(e).kind));
      ac.abort();
      expect(await Promise.all(sent)).to.deep.equal(['/1', '/2', '/3', 'Aborted', '/5']);
      expect(srv.connections()).to.equal(2);
      expect(srv.seen.map((s) => pathOf(s.split(' ').slice(1).join(' ')))).to.have.members(['/1', '/2', '/3', '/5']);
    } finally {
      pool.destroy();
      srv.close();
    }
  });

  it('a write its beforeWrite refuses is not sent, and its connection serves the next request', async function () {
    const srv = await rawServer((_line, socket) => socket.write(ok('{}')));
    const pool = new DirectPool({ host: '127.0.0.1', port: Number(new URL(srv.url).port) }, 1);
    try {
      await sendDirect(pool, request(srv, '/warm'));
      const refused = new Error('fenced');
      const err = await sendDirect(pool, request(srv, '/w', { method: 'PUT', body: '{}', beforeWrite: () => refused })).then(() => undefined, (e: unknown) => e);
      expect(err).to.equal(refused);
      await sendDirect(pool, request(srv, '/after'));
      expect(srv.seen).to.deep.equal(['1 GET /warm HTTP/1.1', '1 GET /after HTTP/1.1']);
    } finally {
      pool.destroy();
      srv.close();
    }
  });

  it('destroy closes every connection, as Node\'s agent.destroy(): in-flight requests fail as lost, queued and later ones get new connections', async function () {
    let answer = false;
    const srv = await rawServer((line, socket) => {
      if (answer) socket.write(ok(JSON.stringify(pathOf(line))));
    });
    const pool = new DirectPool({ host: '127.0.0.1', port: Number(new URL(srv.url).port) }, 1);
    try {
      const first = sendDirect(pool, request(srv, '/never')).then(() => undefined, (e: unknown) => e);
      const waiting = sendDirect(pool, request(srv, '/waits')).then((a) => a.body, (e: unknown) => e);
      await new Promise((r) => setTimeout(r, 30));
      answer = true;
      pool.destroy();
      expect(classifyError(await first).kind).to.equal('Connection');
      expect(await waiting).to.equal('"/waits"');
      expect((await sendDirect(pool, request(srv, '/later'))).body).to.equal('"/later"');
    } finally {
      pool.destroy();
      srv.close();
    }
  });

  it('an answer read to the connection\'s end is an answer only if the server ended it cleanly: a reset, or our own close, fails it', async function () {
    const srv = await rawServer((line, socket) => {
      socket.write('HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{"items":[');
      if (pathOf(line) === '/reset') setTimeout(() => socket.resetAndDestroy(), 20);
      else if (pathOf(line) === '/clean') setTimeout(() => socket.end(']}'), 20);
    });
    const pool = new DirectPool({ host: '127.0.0.1', port: Number(new URL(srv.url).port) }, 3);
    try {
      expect((await sendDirect(pool, request(srv, '/clean'))).body).to.equal('{"items":[]}');
      const err = await sendDirect(pool, request(srv, '/reset')).then(() => undefined, (e: unknown) => e);
      expect(classifyError(err).kind).to.equal('Connection');
      // dropConnections while the answer is being read: cut, not a shorter list.
      const dropped = sendDirect(pool, request(srv, '/dropped')).then(() => undefined, (e: unknown) => e);
      await new Promise((r) => setTimeout(r, 30));
      pool.destroy();
      expect(classifyError(await dropped).kind).to.equal('Connection');
    } finally {
      pool.destroy();
      srv.close();
    }
  });

  it('honours the server\'s Keep-Alive timeout as Node\'s agent does: a connection is retired a second before it', async function () {
    const srv = await rawServer((line, socket) => {
      const hint = pathOf(line) === '/short' ? 1 : 5;
      socket.write(`HTTP/1.1 200 OK\r\nKeep-Alive: timeout=${hint}\r\nContent-Length: 2\r\n\r\n{}`);
    });
    const pool = new DirectPool({ host: '127.0.0.1', port: Number(new URL(srv.url).port) }, 4);
    try {
      for (const p of ['/long', '/long', '/short', '/long']) await sendDirect(pool, request(srv, p));
      expect(srv.seen).to.deep.equal(['1 GET /long HTTP/1.1', '1 GET /long HTTP/1.1', '1 GET /short HTTP/1.1', '2 GET /long HTTP/1.1']);
    } finally {
      pool.destroy();
      srv.close();
    }
  });

  it('a fence that throws fails its request with that error, inside another request\'s socket listener too; nothing leaves the process', async function () {
    const srv = await rawServer((_line, socket) => setTimeout(() => socket.write(ok('{}')), 20));
    const pool = new DirectPool({ host: '127.0.0.1', port: Number(new URL(srv.url).port) }, 1);
    const thrown = catchUncaught();
    try {
      const broken = new Error('fence broke');
      const fence = (): Error | undefined => {
        throw broken;
      };
      const first = sendDirect(pool, request(srv, '/first'));
      // Queued behind /first: handed its connection from inside /first's answer listener.
      const queued = sendDirect(pool, request(srv, '/queued', { method: 'PUT', body: '{}', beforeWrite: fence })).then(() => undefined, (e: unknown) => e);
      expect((await first).body).to.equal('{}');
      expect(await queued).to.equal(broken);
      expect((await sendDirect(pool, request(srv, '/after'))).body).to.equal('{}');
      await new Promise((r) => setTimeout(r, 20));
      expect(thrown.errors).to.deep.equal([]);
      expect(srv.seen).to.deep.equal(['1 GET /first HTTP/1.1', '1 GET /after HTTP/1.1']);
    } finally {
      thrown.restore();
      pool.destroy();
      srv.close();
    }
  });
});

describe('request heads of the direct transport', function () {
  const origin = originOf('https://user:pa%20ss@api.example:6443/base');
  const base: HttpRequest = { method: 'PUT', origin, path: '/api/v1/nodes/n?x=1', headers: { Accept: 'application/json', 'Impersonate-Group': ['a', 'b'] }, agent: keepAliveAgent('https://api.example:6443') };

  it('as Node writes them: one line per value, Host and basic credentials from the server URL, a Content-Length', function () {
    expect(requestHead({ ...base, body: '{"ü":1}' })).to.equal(
      'PUT /base/api/v1/nodes/n?x=1 HTTP/1.1\r\nAccept: application/json\r\nImpersonate-Group: a\r\nImpersonate-Group: b\r\n' +
        `Host: api.example:6443\r\nAuthorization: Basic ${Buffer.from('user:pa ss').toString('base64')}\r\nContent-Length: 8\r\nConnection: keep-alive\r\n\r\n`,
    );
    expect(requestHead({ ...base, method: 'POST' })).to.include('Content-Length: 0\r\n');
    expect(requestHead({ ...base, method: 'GET' })).not.to.include('Content-Length');
    expect(requestHead({ ...base, origin: originOf('http://[::1]:8080'), headers: {} })).to.include('Host: [::1]:8080\r\n');
  });

  it('refuses what would split the head, as Node does: CR or LF in a value, a bad name, a space in the path', function () {
    const codes = [
      { ...base, headers: { 'Impersonate-User': 'x\r\nImpersonate-Group: system:masters' } },
      { ...base, headers: { 'Bad Name': 'x' } },
      { ...base, path: '/api/v1/nodes/a b' },
      { ...base, path: '/api/v1/nodes/a\r\nX: y' },
    ].map((r) => {
      try {
        requestHead(r);
        return 'sent';
      } catch (err) {
        return (err as { code?: string }).code;
      }
    });
    expect(codes).to.deep.equal(['ERR_INVALID_CHAR', 'ERR_INVALID_HTTP_TOKEN', 'ERR_UNESCAPED_CHARACTERS', 'ERR_UNESCAPED_CHARACTERS']);
  });
});

import { expect } from 'chai';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { constants } from 'node:buffer';
import { AnswerTooLargeError, MAX_ANSWER_BYTES, openStream, originOf, send } from '../../src/client/http-transport.js';
import { classifyError, writeMayHaveApplied } from '../../src/client/errors.js';
import { keepAliveAgent } from '../../src/client/keep-alive-agent.js';
import { KubeClient } from '../../src/client/kube-client.js';
import { StaticEndpoint } from '../../src/client/static-endpoint.js';
import { catchUncaught } from './fake-api-server.js';
import { Resources } from '../../src/informer/resources.js';

// A throwaway PEM is enough: the pool name only concatenates it, nothing verifies it here.
const pem = (label: string, n: number): Buffer => Buffer.from(`-----BEGIN ${label}-----\n${'A'.repeat(n)}\n-----END ${label}-----\n`);
const tls = { ca: pem('CERTIFICATE', 1200), cert: pem('CERTIFICATE', 1100), key: pem('PRIVATE KEY', 1600) };

describe('the keep-alive agent', function () {
  it('names a pool as Node does, once per host, port and server name', function () {
    const ours = keepAliveAgent('https://api.example:6443', tls) as https.Agent;
    const node = new https.Agent({ ...tls, keepAlive: true });
    const requests = [
      { host: '10.0.0.1', port: 6443 },
      { host: '10.0.0.2', port: 6443 },
      { host: '10.0.0.1', port: 443 },
      { host: '10.0.0.1', port: 6443, servername: 'kubernetes.default' },
    ];
    // eslint-disable-next-line @typescript-eslint/unbound-method -- only ever called with an agent as `this`, and restored below
    const base = https.Agent.prototype.getName;
    let built = 0;
    https.Agent.prototype.getName = function (this: https.Agent, o?: https.RequestOptions): string {
      built++;
      return base.call(this, o);
    };
    try {
      for (let round = 0; round < 50; round++) {
        for (const r of requests) expect(ours.getName({ ...ours.options, ...r })).to.equal(base.call(node, { ...node.options, ...r }));
      }
      // Node's own getName runs once per distinct request, not on every request (and every socket freed).
      expect(built).to.equal(requests.length);
      expect(new Set(requests.map((r) => ours.getName({ ...ours.options, ...r }))).size).to.equal(requests.length);
    } finally {
      https.Agent.prototype.getName = base;
    }
  });
  // TLS through this agent (its watches) and through the direct transport's pool that goes with it
  // (every other request), and connection reuse, are what every integration test does against the
  // real kube-apiserver.
});

describe('request paths', function () {
  it('encodes a query the server decodes back to the same values, dropping unset ones', function () {
    const query = {
      labelSelector: 'app in (a,b),!legacy,tier!=db',
      fieldSelector: 'metadata.name=pv-1',
      continue: 'eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MTIzfQ==',
      limit: 500,
      watch: true,
      dryRun: undefined,
      fieldManager: '',
    };
    const p = KubeClient.pathWithQuery('/api/v1/persistentvolumes', query);
    const [path, q] = p.split('?');
    expect(path).to.equal('/api/v1/persistentvolumes');
    expect([...new URLSearchParams(q)]).to.deep.equal([
      ['labelSelector', query.labelSelector],
      ['fieldSelector', query.fieldSelector],
      ['continue', query.continue],
      ['limit', '500'],
      ['watch', 'true'],
    ]);
    expect(KubeClient.pathWithQuery('/api', { a: undefined })).to.equal('/api');
    expect(KubeClient.pathWithQuery('/api')).to.equal('/api');
  });

  it('resolves the server once: IPv6 literals, default ports and a base path behind a proxy', function () {
    expect(originOf('https://[::1]:6443')).to.deep.equal({ protocol: 'https:', hostname: '::1', port: '6443', basePath: '' });
    expect(originOf('https://kubernetes.default.svc')).to.deep.equal({ protocol: 'https:', hostname: 'kubernetes.default.svc', port: undefined, basePath: '' });
    expect(originOf('https://rancher.example/k8s/clusters/c-1/')).to.deep.equal({ protocol: 'https:', hostname: 'rancher.example', port: undefined, basePath: '/k8s/clusters/c-1' });
    expect(originOf('https://jane:s%40cret@api.example:6443')).to.deep.equal({ protocol: 'https:', hostname: 'api.example', port: '6443', basePath: '', auth: 'jane:s@cret' });
    expect(() => originOf('unix:///var/run/x')).to.throw(/not an http\(s\) URL/);
  });

  it('sends requests below a base path, with the credentials a server URL carries', async function () {
    const seen: string[] = [];
    const server = createServer((req, res) => {
      seen.push(`${req.url ?? ''} ${req.headers.authorization ?? ''}`);
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end('{"items":[]}');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as AddressInfo;
    const client = KubeClient.forEndpoint({ server: `http://jane:s%40cret@127.0.0.1:${port}/k8s/clusters/c-1/` }, { qps: 0, burst: 1 });
    try {
      await client.request('GET', '/api/v1/persistentvolumes', { query: { labelSelector: 'a=b' } });
      expect(seen).to.deep.equal([`/k8s/clusters/c-1/api/v1/persistentvolumes?labelSelector=a%3Db Basic ${Buffer.from('jane:s@cret').toString('base64')}`]);
    } finally {
      client.close();
      server.close();
    }
  });
});

describe('request heads and bodies', function () {
  it('each request gets its own content type and length over shared heads, a DELETE body included, and a new token is used', async function () {
    const seen: { method?: string; type?: string; length?: string; auth?: string; as?: string; body: string }[] = [];
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        const h = req.headers;
        seen.push({ method: req.method, type: h['content-type'], length: h['content-length'], auth: h.authorization, as: h['impersonate-user'] as string | undefined, body });
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.end('{}');
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const dir = mkdtempSync(path.join(os.tmpdir(), 'topovol-heads-'));
    try {
      const { port } = server.address() as AddressInfo;
      const tokenFile = path.join(dir, 'token');
      writeFileSync(tokenFile, 'one');
      let now = 0;
      const endpoint = new StaticEndpoint({ server: `http://127.0.0.1:${port}`, tokenFile }, () => now);
      const client = KubeClient.forEndpoint(endpoint, { qps: 0, burst: 1 });
      const r = { ...Resources.configMaps };
      await client.get(r, 'a', 'ns');
      await client.replace(r, { metadata: { name: 'a', namespace: 'ns' }, data: { k: 'é' } });
      await client.patch(r, 'a', 'ns', 'merge', { data: { k: 'v' } });
      await client.delete(r, 'a', 'ns', { preconditions: { uid: 'u-1', resourceVersion: '7' } });
      writeFileSync(tokenFile, 'two');
      now += 61_000;
      await client.get(r, 'a', 'ns');
      await client.forUser('jane').get(r, 'a', 'ns');
      expect(seen.map((s) => [s.method, s.type, s.auth, s.as])).to.deep.equal([
        ['GET', undefined, 'Bearer one', undefined],
        ['PUT', 'application/json', 'Bearer one', undefined],
        ['PATCH', 'application/merge-patch+json', 'Bearer one', undefined],
        ['DELETE', 'application/json', 'Bearer one', undefined],
        ['GET', undefined, 'Bearer two', undefined],
        ['GET', undefined, 'Bearer two', 'jane'],
      ]);
      for (const s of seen.filter((x) => x.body)) expect(Number(s.length)).to.equal(Buffer.byteLength(s.body));
      expect(JSON.parse(seen[1]!.body)).to.deep.equal({ metadata: { name: 'a', namespace: 'ns' }, data: { k: 'é' } });
      expect(JSON.parse(seen[3]!.body)).to.deep.include({ preconditions: { uid: 'u-1', resourceVersion: '7' } });
      client.close();
    } finally {
      server.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/** The two ways `send` goes: the direct transport (agents of keepAliveAgent), and Node's http (any other agent, or nodeHttp). */
const TRANSPORTS = [
  { name: 'direct transport', nodeHttp: false },
  { name: "Node's http", nodeHttp: true },
];

/** A server that answers /big in the given pieces (a pause between them), /small with `{}`, and counts its connections. */
async function answering(pieces: string[]): Promise<{ url: string; connections: () => number; close: () => void }> {
  let connections = 0;
  const server = createServer((req, res) => {
    const sent = req.url === '/small' ? ['{}'] : pieces;
    res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': sent.join('').length });
    const next = (i: number): void => {
      if (i === sent.length - 1) return void res.end(sent[i]);
      res.write(sent[i]);
      setTimeout(() => next(i + 1), 20);
    };
    next(0);
  });
  server.on('connection', () => connections++);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, connections: () => connections, close: () => server.close() };
}

describe('answers over the byte limit', function () {
  it('with no limit given, an answer is read to MAX_ANSWER_BYTES, short of the longest string V8 makes of it', function () {
    // Decoding a longer body threw ERR_STRING_TOO_LONG out of the answer's 'end' listener. UTF-8
    // never has fewer bytes than the string it decodes to has code units.
    expect(MAX_ANSWER_BYTES).to.be.at.most(constants.MAX_STRING_LENGTH);
    expect(MAX_ANSWER_BYTES).to.be.at.least(64 * 1024 * 1024);
  });

  const cases = [
    // The whole answer is in when the limit is passed: its socket is already back in the pool.
    { name: 'cut on its last chunk: fails, nothing thrown out of the process, the connection is reused', pieces: ['x'.repeat(5000)], connections: 1 },
    // Cut while more is coming: the connection cannot be reused and is closed.
    { name: 'cut while more is on its way: fails and closes the connection', pieces: ['x'.repeat(3000), 'x'.repeat(3000), 'y'], connections: 2 },
  ];
  for (const c of cases) for (const via of TRANSPORTS) {
    it(`${c.name} (${via.name})`, async function () {
      const srv = await answering(c.pieces);
      const agent = keepAliveAgent(srv.url);
      const thrown = catchUncaught();
      try {
        const req = { method: 'GET', origin: originOf(srv.url), headers: {}, agent, maxBodyBytes: 1000, nodeHttp: via.nodeHttp };
        for (let i = 0; i < 3; i++) {
          const err = await send({ ...req, path: '/big' }).then(() => undefined, (e: unknown) => e);
          expect(err).to.be.instanceOf(AnswerTooLargeError);
          await new Promise((r) => setTimeout(r, 50));
        }
        const small = await send({ ...req, path: '/small', maxBodyBytes: 10_000 });
        expect(small.status).to.equal(200);
        expect(thrown.errors).to.deep.equal([]);
        expect(srv.connections()).to.equal(c.connections === 1 ? 1 : 4);
      } finally {
        thrown.restore();
        agent.destroy();
        srv.close();
      }
    });
  }
});

describe('aborted requests', function () {
  it('a stream aborted from a handler of its last chunk: nothing thrown out of the process, the connection is reused', async function () {
    // The watch loop aborts from an event's handler, and kube-apiserver sends a 410's ERROR event
    // and the end of the answer in one read: Node's own abort destroyed the pooled socket with an error.
    const srv = await answering(['{"type":"ERROR"}\n']);
    const agent = keepAliveAgent(srv.url);
    const thrown = catchUncaught();
    try {
      for (let i = 0; i < 5; i++) {
        const ac = new AbortController();
        const res = await openStream({ method: 'GET', origin: originOf(srv.url), path: '/big', headers: {}, agent, signal: ac.signal });
        await new Promise<void>((resolve) => {
          res.on('data', () => ac.abort());
          res.on('error', () => resolve());
          res.on('close', () => resolve());
        });
        await new Promise((r) => setTimeout(r, 20));
      }
      expect(thrown.errors).to.deep.equal([]);
      expect(srv.connections()).to.equal(1);
    } finally {
      thrown.restore();
      agent.destroy();
      srv.close();
    }
  });

  it('a stream aborted while more is on its way ends with an AbortError and closes its connection', async function () {
    const srv = await answering(['a', 'b', 'c']);
    const agent = keepAliveAgent(srv.url);
    try {
      const ac = new AbortController();
      const res = await openStream({ method: 'GET', origin: originOf(srv.url), path: '/big', headers: {}, agent, signal: ac.signal });
      const err = await new Promise<unknown>((resolve) => {
        res.once('data', () => ac.abort());
        res.on('error', resolve);
        res.on('end', () => resolve(undefined));
      });
      expect(classifyError(err).kind).to.equal('Aborted');
      await send({ method: 'GET', origin: originOf(srv.url), path: '/small', headers: {}, agent });
      expect(srv.connections()).to.equal(2);
    } finally {
      agent.destroy();
      srv.close();
    }
  });

  for (const via of TRANSPORTS) it(`a request aborted before or while its answer comes fails as Aborted, whose write may have applied; one aborted before is not sent (${via.name})`, async function () {
    const srv = await answering(['a', 'b', 'c']);
    const agent = keepAliveAgent(srv.url);
    try {
      const base = { method: 'PUT', origin: originOf(srv.url), path: '/big', headers: {}, agent, body: '{}', nodeHttp: via.nodeHttp };
      const early = new AbortController();
      early.abort();
      const before = await send({ ...base, signal: early.signal }).then(() => undefined, (e: unknown) => e);
      const streamBefore = await openStream({ ...base, signal: early.signal }).then(() => undefined, (e: unknown) => e);
      expect(srv.connections()).to.equal(0);
      const during = new AbortController();
      setTimeout(() => during.abort(), 30);
      const midway = await send({ ...base, signal: during.signal }).then(() => undefined, (e: unknown) => e);
      for (const e of [before, streamBefore, midway]) {
        expect(classifyError(e).kind).to.equal('Aborted');
        expect(writeMayHaveApplied(e)).to.equal(true);
      }
      expect(srv.connections()).to.equal(1);
    } finally {
      agent.destroy();
      srv.close();
    }
  });
});

describe('a pooled connection the server has closed', function () {
  /**
   * A server that answers the first request of each connection and resets the connection when a
   * second one arrives on it: what a client meets when it picks an idle keep-alive connection the
   * server closed a moment before (kube-apiserver, like any Go server, closes idle ones).
   */
  async function closingServer(): Promise<{ url: string; seen: string[]; close(): void }> {
    const served = new WeakSet<object>();
    const seen: string[] = [];
    const server = createServer((req, res) => {
      seen.push(`${req.method ?? ''} ${served.has(req.socket) ? 'reused' : 'new'}`);
      if (served.has(req.socket)) return void req.socket.destroy();
      served.add(req.socket);
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end('{"kind":"Status"}');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as AddressInfo;
    return { url: `http://127.0.0.1:${port}`, seen, close: () => server.close() };
  }

  for (const via of TRANSPORTS) it(`a read is sent again on another connection, as Go's transport does for client-go; a write fails as a lost connection, its outcome unknown (${via.name})`, async function () {
    const s = await closingServer();
    const agent = keepAliveAgent(s.url);
    const at = (method: string, body?: string) => send({ method, origin: originOf(s.url), path: '/api/v1/pods', headers: { 'Content-Type': 'application/json' }, agent, nodeHttp: via.nodeHttp, ...(body === undefined ? {} : { body }) });
    try {
      expect((await at('GET')).status).to.equal(200);
      expect((await at('GET')).status, 'the second read, on the pooled connection').to.equal(200);
      expect(s.seen).to.deep.equal(['GET new', 'GET reused', 'GET new']);
      s.seen.length = 0;
      const err = await at('POST', '{}').then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(s.seen, 'the write is not sent again').to.deep.equal(['POST reused']);
      expect(classifyError(err).kind).to.equal('Connection');
      expect(writeMayHaveApplied(err)).to.equal(true);
    } finally {
      agent.destroy();
      s.close();
    }
  });
});

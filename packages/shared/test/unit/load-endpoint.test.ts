import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type http from 'node:http';
import type https from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { KubeConfig } from '@kubernetes/client-node';
import { ClientNodeEndpoint } from '../../src/client/client-node-endpoint.js';
import type { ApiEndpoint } from '../../src/client/endpoint.js';
import { endpointFromKubeconfig, inClusterEndpoint, loadEndpoint } from '../../src/client/load-endpoint.js';
import { StaticEndpoint } from '../../src/client/static-endpoint.js';
import { directPoolOf } from '../../src/client/keep-alive-agent.js';
import { KubeClient } from '../../src/client/kube-client.js';
import { Resources } from '../../src/informer/resources.js';

const b64 = (s: string): string => Buffer.from(s).toString('base64');

interface Tls {
  ca?: string;
  cert?: string;
  key?: string;
  rejectUnauthorized?: boolean;
  servername?: string;
}

const text = (v: unknown): string | undefined => (v === undefined || v === null ? undefined : Buffer.from(v as Buffer).toString());

async function ours(endpoint: ApiEndpoint): Promise<{ headers: Record<string, unknown>; tls: Tls }> {
  const agent = (await endpoint.agent()) as https.Agent;
  const o = agent.options;
  return {
    headers: { ...(await endpoint.authHeaders()) },
    tls: { ca: text(o.ca), cert: text(o.cert), key: text(o.key), rejectUnauthorized: o.rejectUnauthorized !== false, servername: o.servername },
  };
}

/** What client-node 1.x makes of the same file: the behaviour the loader must keep. */
async function theirs(file: string): Promise<{ headers: Record<string, unknown>; tls: Tls }> {
  const kc = new KubeConfig();
  kc.loadFromFile(file);
  const opts: https.RequestOptions = {};
  await kc.applyToHTTPSOptions(opts);
  const headers: Record<string, unknown> = { ...opts.headers };
  if (opts.auth) headers.Authorization = `Basic ${Buffer.from(opts.auth).toString('base64')}`;
  return {
    headers,
    tls: { ca: text(opts.ca), cert: text(opts.cert), key: text(opts.key), rejectUnauthorized: opts.rejectUnauthorized !== false, servername: opts.servername ?? undefined },
  };
}

describe('loading the API endpoint without client-node', function () {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'topovol-kubeconfig-'));
    writeFileSync(path.join(dir, 'ca.pem'), 'CA-FROM-FILE');
    writeFileSync(path.join(dir, 'client.pem'), 'CERT-FROM-FILE');
    writeFileSync(path.join(dir, 'client.key'), 'KEY-FROM-FILE');
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  function kubeconfig(cluster: Record<string, unknown>, user: Record<string, unknown>): string {
    const file = path.join(dir, 'kubeconfig');
    const doc = {
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'other', cluster: { server: 'https://wrong.invalid' } }, { name: 'c', cluster: { server: 'https://api.example:6443/', ...cluster } }],
      users: [{ name: 'u', user }],
      contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
      'current-context': 'x',
    };
    writeFileSync(file, JSON.stringify(doc));
    return file;
  }

  // Each row: the same kubeconfig read by the loader and by client-node must give the same
  // authentication headers and TLS material.
  const table: [string, Record<string, unknown>, Record<string, unknown>][] = [
    ['bearer token, CA data', { 'certificate-authority-data': b64('CA-DATA') }, { token: 'tok-1' }],
    ['client certificate data', { 'certificate-authority-data': b64('CA-DATA') }, { 'client-certificate-data': b64('CERT'), 'client-key-data': b64('KEY') }],
    ['files relative to the kubeconfig', { 'certificate-authority': 'ca.pem' }, { 'client-certificate': 'client.pem', 'client-key': 'client.key' }],
    ['insecure, tls-server-name', { 'insecure-skip-tls-verify': true, 'tls-server-name': 'kubernetes.default' }, { token: 'tok-2' }],
    ['basic credentials', {}, { username: 'admin', password: 's3cret' }],
    ['impersonation by the kubeconfig', {}, { token: 'tok-3', as: 'alice' }],
    ['no credentials at all', {}, {}],
  ];
  for (const [what, cluster, user] of table) {
    it(`matches client-node: ${what}`, async function () {
      const file = kubeconfig(cluster, user);
      const endpoint = endpointFromKubeconfig(file);
      expect(endpoint).to.be.instanceOf(StaticEndpoint);
      expect(endpoint.server).to.equal('https://api.example:6443');
      expect(await ours(endpoint)).to.deep.equal(await theirs(file));
    });
  }

  it('reads tokenFile (client-go) and token-file (client-node), trimmed, relative to the kubeconfig', async function () {
    writeFileSync(path.join(dir, 'token'), 'file-token\n');
    for (const key of ['tokenFile', 'token-file']) {
      const endpoint = endpointFromKubeconfig(kubeconfig({}, { [key]: 'token' }));
      expect(await endpoint.authHeaders()).to.deep.equal({ Authorization: 'Bearer file-token' });
    }
  });

  it('re-reads a token file once a minute and keeps the last token while the file is missing', async function () {
    const file = path.join(dir, 'token');
    writeFileSync(file, 'first');
    let now = 0;
    const endpoint = new StaticEndpoint({ server: 'https://x', tokenFile: file }, () => now);
    expect((await endpoint.authHeaders()).Authorization).to.equal('Bearer first');
    writeFileSync(file, 'second');
    now = 59_000;
    expect((await endpoint.authHeaders()).Authorization).to.equal('Bearer first');
    now = 60_000;
    expect((await endpoint.authHeaders()).Authorization).to.equal('Bearer second');
    rmSync(file);
    now = 120_000;
    expect((await endpoint.authHeaders()).Authorization).to.equal('Bearer second');
  });

  it('sends every as-groups entry as its own Impersonate-Group header', async function () {
    const endpoint = endpointFromKubeconfig(kubeconfig({}, { token: 't', as: 'bob', 'as-groups': ['g1', 'g2'] }));
    expect(await endpoint.authHeaders()).to.deep.equal({ Authorization: 'Bearer t', 'Impersonate-User': 'bob', 'Impersonate-Group': ['g1', 'g2'] });
  });

  for (const [what, cluster, user] of [
    ['an exec plugin', {}, { exec: { apiVersion: 'client.authentication.k8s.io/v1', command: 'true' } }],
    ['an auth-provider plugin', {}, { 'auth-provider': { name: 'oidc', config: {} } }],
    ['a proxy', { 'proxy-url': 'http://proxy.invalid:3128' }, { token: 't' }],
  ] as const) {
    it(`hands ${what} to client-node`, function () {
      const endpoint = endpointFromKubeconfig(kubeconfig(cluster, user));
      expect(endpoint).to.be.instanceOf(ClientNodeEndpoint);
      expect(endpoint.server).to.equal('https://api.example:6443');
    });
  }

  it('a proxy-url: requests go through the proxy, not the direct transport, for http and https servers', async function () {
    // A CONNECT proxy on loopback (hpagent tunnels http servers' requests too) that plays the
    // server itself at the tunnel's far end: the unresolvable server name proves the proxy carried it.
    const seen: string[] = [];
    const server = createServer((req, res) => {
      seen.push(`${req.method ?? ''} ${req.url ?? ''} ${req.headers.authorization ?? ''}`);
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end('{"kind":"Node"}');
    });
    const proxy = createServer();
    proxy.on('connect', (req: http.IncomingMessage, socket: Duplex) => {
      seen.push(`CONNECT ${req.url ?? ''}`);
      socket.write('HTTP/1.1 200 Connection established\r\n\r\n');
      server.emit('connection', socket);
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    const proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    try {
      const client = KubeClient.load(kubeconfig({ server: 'http://kube.invalid:8080', 'proxy-url': proxyUrl }, { token: 't' }), { qps: 0, burst: 1 });
      expect(await client.get(Resources.nodes, 'n')).to.deep.equal({ kind: 'Node' });
      expect(await client.get(Resources.nodes, 'n')).to.deep.equal({ kind: 'Node' });
      // One tunnel, kept alive: client-node's agent alone would open one per request.
      expect(seen).to.deep.equal(['CONNECT kube.invalid:8080', 'GET /api/v1/nodes/n Bearer t', 'GET /api/v1/nodes/n Bearer t']);
      client.close();
      // An https server's goes through a CONNECT tunnel (hpagent's agent, an https.Agent too): kept as client-node built it.
      const tunnelled = endpointFromKubeconfig(kubeconfig({ 'proxy-url': proxyUrl }, { token: 't' }));
      const agent = await tunnelled.agent();
      expect(directPoolOf(agent), 'no direct connections to the server').to.equal(undefined);
      expect((agent as http.Agent & { proxy?: URL }).proxy?.href).to.equal(`${proxyUrl}/`);
    } finally {
      proxy.closeAllConnections();
      proxy.close();
      server.closeAllConnections();
    }
  });

  it('names what is missing in a broken kubeconfig', function () {
    const file = path.join(dir, 'broken');
    writeFileSync(file, JSON.stringify({ contexts: [{ name: 'x', context: { cluster: 'gone', user: 'u' } }], 'current-context': 'x' }));
    expect(() => endpointFromKubeconfig(file)).to.throw('no cluster named "gone"');
    writeFileSync(file, 'clusters: []');
    expect(() => endpointFromKubeconfig(file)).to.throw('no current-context');
  });

  it('in cluster: the service host and port, the mounted CA and the mounted token', async function () {
    writeFileSync(path.join(dir, 'token'), 'sa-token\n');
    writeFileSync(path.join(dir, 'ca.crt'), 'SA-CA');
    const endpoint = inClusterEndpoint({ KUBERNETES_SERVICE_HOST: 'fd00::1', KUBERNETES_SERVICE_PORT: '443' }, dir);
    expect(endpoint.server).to.equal('https://[fd00::1]:443');
    const seen = await ours(endpoint);
    expect(seen.headers).to.deep.equal({ Authorization: 'Bearer sa-token' });
    expect(seen.tls.ca).to.equal('SA-CA');
    expect(seen.tls.rejectUnauthorized).to.equal(true);
  });

  it('in cluster without the environment or the token: a clear error', function () {
    expect(() => inClusterEndpoint({}, dir)).to.throw('KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be defined');
    expect(() => inClusterEndpoint({ KUBERNETES_SERVICE_HOST: '10.0.0.1', KUBERNETES_SERVICE_PORT: '443' }, dir)).to.throw('token does not exist');
  });

  it('--kubeconfig wins over $KUBECONFIG', function () {
    const file = kubeconfig({}, { token: 't' });
    expect(loadEndpoint(file, { KUBECONFIG: '/nonexistent' }).server).to.equal('https://api.example:6443');
    expect(loadEndpoint(undefined, { KUBECONFIG: file }).server).to.equal('https://api.example:6443');
  });
});

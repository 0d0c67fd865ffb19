import { expect } from 'chai';
import net from 'node:net';
import { HttpEndpoints } from '../../src/http/http-endpoints.js';
import { DelegatedAuth } from '../../src/http/delegated-auth.js';
import { ServingCert } from '../../src/http/serving-cert.js';
import { metricsRegistry } from '../../src/metrics/registry.js';
import { httpRequest } from '@topovol/testing';

// The probe and metrics servers (http-endpoints.ts): a kubelet probe reads only the status code, so
// a failing check must turn it into a 500. Written from mutation testing of the shared library.

describe('HttpEndpoints: probes and metrics', function () {
  it('a failing or throwing check fails its probe with a 500 that names it; verbose lists passing checks', async function () {
    // The "[+]name ok" / "[-]name failed" lines of kube-apiserver's healthz (k8s.io/apiserver/pkg/server/healthz).
    const endpoints = new HttpEndpoints();
    let healthy = true;
    endpoints.addHealthzCheck('loop', () => (healthy ? undefined : 'stuck for 5m'));
    endpoints.addReadyzCheck('informers', () => {
      throw new Error('not synced');
    });
    const port = await endpoints.serveProbes({ host: '127.0.0.1', port: 0 });
    const get = async (p: string): Promise<[number, string]> => {
      const res = await fetch(`http://127.0.0.1:${port}${p}`);
      return [res.status, await res.text()];
    };
    try {
      expect(await get('/healthz')).to.deep.equal([200, 'ok\n']);
      expect(await get('/healthz?verbose')).to.deep.equal([200, '[+]loop ok\ncheck passed\n']);
      healthy = false;
      expect(await get('/livez')).to.deep.equal([500, '[-]loop failed: stuck for 5m\ncheck failed\n']);
      expect(await get('/readyz')).to.deep.equal([500, '[-]informers failed: not synced\ncheck failed\n']);
    } finally {
      await endpoints.close();
    }
  });

  it('serves metrics on /metrics only', async function () {
    const endpoints = new HttpEndpoints();
    const port = await endpoints.serveMetrics({ host: '127.0.0.1', port: 0 });
    try {
      expect((await fetch(`http://127.0.0.1:${port}/metrics`)).status).to.equal(200);
      const other = await fetch(`http://127.0.0.1:${port}/debug`);
      expect(other.status).to.equal(404);
      await other.text();
    } finally {
      await endpoints.close();
    }
  });

  it('secure: HTTPS; another path 404 and another method 405 before any review; no token 401; a failed review counted as error, never served', async function () {
    let apiDown = false;
    const reviews = {
      reviewToken: (token: string) => (apiDown ? Promise.reject(new Error('connect ECONNREFUSED')) : Promise.resolve(token === 'reader' ? { authenticated: true as const, user: { username: 'prometheus' } } : { authenticated: false as const, reason: 'invalid' })),
      reviewAccess: () => Promise.resolve({ allowed: true, reason: '' }),
    };
    const endpoints = new HttpEndpoints();
    const port = await endpoints.serveMetrics({ host: '127.0.0.1', port: 0 }, { cert: new ServingCert(undefined), auth: new DelegatedAuth(reviews, { tokenTtlMs: 0, accessTtlMs: 0 }) });
    const errors = async (): Promise<number> => (await metricsRegistry.getSingleMetric('topovol_metrics_auth_total')?.get())?.values.find((v) => v.labels.result === 'error')?.value ?? 0;
    const url = `https://127.0.0.1:${port}/metrics`;
    try {
      const ok = await httpRequest('GET', url, { token: 'reader' });
      expect(ok.status).to.equal(200);
      expect(ok.body).to.contain('# TYPE');
      expect((await httpRequest('GET', `https://127.0.0.1:${port}/debug`)).status).to.equal(404);
      expect((await httpRequest('POST', url, { token: 'reader' })).status).to.equal(405);
      expect(await httpRequest('GET', url)).to.deep.include({ status: 401, body: 'Unauthorized\n' });
      const before = await errors();
      apiDown = true;
      const down = await httpRequest('GET', url, { token: 'reader' });
      expect(down).to.deep.include({ status: 401, body: 'Unauthorized\n' });
      expect(await errors()).to.equal(before + 1);
    } finally {
      await endpoints.close();
    }
  });
});

/** The status line of the answer to one raw request with this target (fetch would normalise it). */
function rawStatus(port: number, target: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(`GET ${target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`));
    let text = '';
    socket.on('data', (c: Buffer) => (text += c.toString()));
    socket.on('end', () => resolve(text.split('\r\n')[0] ?? ''));
    socket.on('error', reject);
  });
}

describe('HttpEndpoints: request targets that are no path', function () {
  // The probe port listens on every interface and needs no credentials: any pod can reach it. A
  // target that new URL() refuses threw out of the request listener and ended the process.
  it('are answered 400 on both ports, and both keep serving', async function () {
    const endpoints = new HttpEndpoints();
    endpoints.addHealthzCheck('loop', () => undefined);
    const probes = await endpoints.serveProbes({ host: '127.0.0.1', port: 0 });
    const metrics = await endpoints.serveMetrics({ host: '127.0.0.1', port: 0 });
    try {
      for (const port of [probes, metrics]) {
        for (const target of ['//', '//:99999/healthz', 'http://[/healthz']) {
          expect(await rawStatus(port, target), `${port} ${target}`).to.equal('HTTP/1.1 400 Bad Request');
        }
      }
      expect(await rawStatus(probes, '/healthz')).to.equal('HTTP/1.1 200 OK');
      expect(await rawStatus(metrics, '/metrics')).to.equal('HTTP/1.1 200 OK');
    } finally {
      await endpoints.close();
    }
  });
});

import { expect } from 'chai';
import net from 'node:net';
import { HttpEndpoints } from '../../src/http/http-endpoints.js';

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

import { expect } from 'chai';
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

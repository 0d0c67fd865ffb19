import { expect } from 'chai';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { KubeClient } from '../../src/client/kube-client.js';

// kube-controller-manager and kube-scheduler never ask the API server to gzip (DisableCompression,
// kubernetes #80919); neither does Topovol. A plain local HTTP server records what was asked.
describe('KubeClient compression', function () {
  it('asks for no gzip, and still reads a gzipped answer a caller asked for', async function () {
    const asked: (string | undefined)[] = [];
    const body = JSON.stringify({ kind: 'ConfigMapList', items: [{ metadata: { name: 'a' } }] });
    const server = createServer((req, res) => {
      const enc = req.headers['accept-encoding'];
      asked.push(enc);
      if (enc === 'gzip') {
        res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' });
        res.end(gzipSync(body));
      } else {
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.end(body);
      }
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const { port } = server.address() as AddressInfo;
      const client = KubeClient.forEndpoint({ server: `http://127.0.0.1:${port}` }, { qps: 0, burst: 1 });
      const plain = await client.request<{ items: unknown[] }>('GET', '/api/v1/configmaps');
      const zipped = await client.request<{ items: unknown[] }>('GET', '/api/v1/configmaps', { headers: { 'Accept-Encoding': 'gzip' } });
      expect(asked).to.deep.equal([undefined, 'gzip']);
      expect(plain.items).to.have.length(1);
      expect(zipped).to.deep.equal(plain);
    } finally {
      server.close();
    }
  });
});

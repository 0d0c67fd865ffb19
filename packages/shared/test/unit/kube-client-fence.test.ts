import { expect } from 'chai';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WriteFencedError } from '../../src/client/errors.js';
import { KubeClient } from '../../src/client/kube-client.js';
import { Resources } from '../../src/informer/resources.js';

// A fenced client sends no write while its fence gives a reason, reads as before, and passes its
// fence to the clients derived from it (a loop's own rate-limited client). A plain local HTTP
// server records what reached it.
describe('KubeClient.withWriteFence', function () {
  it('refuses writes unsent while the fence is shut, sends them once it opens, never holds reads', async function () {
    const seen: string[] = [];
    const server = createServer((req, res) => {
      seen.push(`${req.method} ${req.url}`);
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify({ metadata: { name: 'a', namespace: 'ns' }, items: [] }));
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const base = KubeClient.forEndpoint({ server: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }, { qps: 0, burst: 1 });
    try {
      let why: string | undefined = 'lease expired';
      const fenced = base.withWriteFence(() => why);
      const derived = fenced.withRateLimit(0, 1);
      const cm = { metadata: { name: 'a', namespace: 'ns' } };
      const writes: [string, () => Promise<unknown>][] = [
        ['create', () => fenced.create(Resources.configMaps, cm)],
        ['replace', () => fenced.replace(Resources.configMaps, cm)],
        ['patch', () => fenced.patch(Resources.configMaps, 'a', 'ns', 'merge', {})],
        ['delete', () => fenced.delete(Resources.configMaps, 'a', 'ns')],
        ['derived patch', () => derived.patch(Resources.configMaps, 'a', 'ns', 'merge', {})],
      ];
      for (const [what, write] of writes) {
        const err = await write().then(() => undefined, (e: unknown) => e);
        expect(err, what).to.be.instanceOf(WriteFencedError);
        expect((err as Error).message, what).to.contain('not sent: lease expired');
      }
      await fenced.get(Resources.configMaps, 'a', 'ns');
      await fenced.list(Resources.configMaps, { namespace: 'ns' });
      await base.patch(Resources.configMaps, 'a', 'ns', 'merge', {});
      expect(seen.map((s) => s.split(' ')[0]), 'reads, and the unfenced client it came from').to.deep.equal(['GET', 'GET', 'PATCH']);

      why = undefined;
      await fenced.patch(Resources.configMaps, 'a', 'ns', 'merge', {});
      await derived.delete(Resources.configMaps, 'a', 'ns');
      expect(seen.map((s) => s.split(' ')[0])).to.deep.equal(['GET', 'GET', 'PATCH', 'PATCH', 'DELETE']);
    } finally {
      base.close();
      server.close();
    }
  });
});

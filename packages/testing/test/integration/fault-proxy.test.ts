import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { classifyError, Resources } from '@topovol/shared';
import type { KubeObject } from '@topovol/shared';
import { createTestNamespace, FaultProxy, sharedControlPlane } from '../../src/index.js';

// The fault proxy's lost answer is what the reliability scenarios count on: the write reaches the
// API server and is applied, and the client sees only a dropped connection. Reads are never lost.
describe('fault proxy: a lost answer', function () {
  this.timeout(60_000);

  it('applies the write on the real API server while its client sees a dropped connection; reads pass', async function () {
    const cp = await sharedControlPlane();
    const admin = cp.adminClient();
    const ns = await createTestNamespace(admin, 'fault-proxy-');
    const proxy = await FaultProxy.start(cp.url, readFileSync(cp.caFile), 7);
    try {
      const client = proxy.client(cp.adminToken);
      proxy.set({ lostAnswer: 1 });
      const err = await client.create<KubeObject>(Resources.configMaps, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'lost', namespace: ns } }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(classifyError(err).kind, String(err)).to.equal('Connection');
      expect((await admin.get<KubeObject>(Resources.configMaps, 'lost', ns)).metadata?.name, 'applied on the server').to.equal('lost');
      expect((await client.get<KubeObject>(Resources.configMaps, 'lost', ns)).metadata?.name, 'a read is answered').to.equal('lost');
      expect(proxy.counts.lostAnswer).to.equal(1);
      // The journal says what happened to each request, for a failing scenario to show.
      expect(proxy.journal().map((e) => `${e.method} ${e.path} ${e.outcome} ${e.code ?? ''}`)).to.deep.equal([
        `POST /api/v1/namespaces/${ns}/configmaps lostAnswer 201`,
        `GET /api/v1/namespaces/${ns}/configmaps/lost forwarded 200`,
      ]);
      expect(proxy.journalText()).to.match(new RegExp(`^\\d+\\.\\d{3}s POST /api/v1/namespaces/${ns}/configmaps -> lostAnswer 201\\n`));
    } finally {
      proxy.set({});
      await proxy.stop();
      await admin.delete(Resources.namespaces, ns).catch(() => undefined);
    }
  });
});

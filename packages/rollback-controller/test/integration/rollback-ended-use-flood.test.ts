import { expect } from 'chai';
import { Resources } from '@topovol/shared';
import type { PersistentVolume, Pod } from '@topovol/shared';
import { eventually, metricSum, namespaceTenant, queueIdle } from '@topovol/testing';
import { ENDED_USE_MAX_ABSENT_PER_NAMESPACE } from '../../src/rollback/ended-use.js';
import { LABEL_USAGE } from '../../src/rollback/marks.js';
import { claim, pod, provision, RunningRollback, seenByLoop, selectNode } from './rollback-harness.js';
import { RollbackFixture } from './rollback-fixture.js';

/**
 * A tenant floods what the loop remembers of deleted pods' uses: pods placed on a node, each naming
 * hundreds of claims that do not exist, deleted at once. Past the bound of its namespace the loop
 * forgets the oldest uses, and since a forgotten use may be the only evidence that a volume holds
 * data, it stops vouching for the tenant's own `unused` volume (marked `used`), and for nothing
 * else: a victim namespace's `unused` volume keeps its mark.
 */
describe('rollback: a tenant flooding the uses of deleted pods', function () {
  this.timeout(240_000);
  const f = new RollbackFixture();
  before(() => f.startSuite());
  after(() => f.stopSuite());
  beforeEach(() => f.startTest('rbf-'));
  afterEach(() => f.stopTest());

  it("the tenant's own unused volume is no longer vouched for; another namespace's keeps its mark", async function () {
    const { admin } = f;
    const loop = await RunningRollback.start(['--rollback-grace-period=10m']);
    try {
      // The victim: c1 provisioned on node a, seen by the loop, marked unused.
      await f.podWithClaims('p');
      await f.provisionC1OnA(loop);
      await eventually(async () => expect(await f.usage()).to.equal('unused'));

      // The tenant's own volume in the same state.
      const tenantNs = await f.otherNamespace('rbft-');
      const t = await namespaceTenant(admin, tenantNs);
      await eventually(() => t.create(Resources.persistentVolumeClaims, claim(tenantNs, 'c1', f.cls)));
      await t.create(Resources.pods, pod(tenantNs, 'p', ['c1']));
      await selectNode(admin, tenantNs, 'c1', f.name('a'));
      await seenByLoop(loop, tenantNs, 'c1');
      const tenantVolume = `${tenantNs}-v1`;
      await provision(admin, tenantNs, 'c1', f.name('a'), tenantVolume);
      await eventually(async () => expect((await admin.get<PersistentVolume>(Resources.persistentVolumes, tenantVolume)).metadata?.labels?.[LABEL_USAGE]).to.equal('unused'));

      // The flood: pods placed on a node (a use as soon as they are deleted), each naming 250 claims
      // that never exist, deleted at once; a little over the namespace's bound in all.
      const forgottenBefore = await metricSum('topovol_rollback_ended_uses_forgotten_total');
      const perPod = 250;
      const pods = Math.ceil((ENDED_USE_MAX_ABSENT_PER_NAMESPACE + 1) / perPod) + 1;
      for (let i = 0; i < pods; i++) {
        const base = pod(tenantNs, `flood-${i}`, Array.from({ length: perPod }, (_, j) => `ghost-${i}-${j}`));
        await t.create<Pod>(Resources.pods, { ...base, spec: { ...base.spec!, nodeName: f.name('a') } });
        await t.delete(Resources.pods, `flood-${i}`, tenantNs, { gracePeriodSeconds: 0 });
      }
      // The bound is checked at most once a second, counted on the loop's clock from when the events
      // reach it (a lagging watch may hand it the whole flood at once): one more use a second apart
      // until one comes a second after the last check.
      let more = 0;
      await eventually(async () => {
        const last = pod(tenantNs, `flood-last-${more}`, [`ghost-last-${more}`]);
        more++;
        await t.create<Pod>(Resources.pods, { ...last, spec: { ...last.spec!, nodeName: f.name('a') } });
        await t.delete(Resources.pods, last.metadata!.name!, tenantNs, { gracePeriodSeconds: 0 });
        expect(await metricSum('topovol_rollback_ended_uses_forgotten_total')).to.be.greaterThan(forgottenBefore);
      }, 60_000, 1_100);
      await eventually(async () => expect((await admin.get<PersistentVolume>(Resources.persistentVolumes, tenantVolume)).metadata?.labels?.[LABEL_USAGE], "the tenant's volume").to.equal('used'));
      // The victim's mark was vouched for by an observation in its own namespace, which stays: its
      // volume, looked at again (a label of someone else's), keeps it.
      const victimVolume = f.name('v1');
      await admin.patch<PersistentVolume>(Resources.persistentVolumes, victimVolume, undefined, 'merge', { metadata: { labels: { 'example.com/touched': 'yes' } } });
      const volumes = loop.informers.forResource<PersistentVolume>(Resources.persistentVolumes);
      await eventually(() => expect(volumes.cache.get(victimVolume)?.metadata?.labels?.['example.com/touched']).to.equal('yes'));
      // Once the loop has decided on everything queued since (the volume's key among them), and a
      // mark written then has had time to reach the server.
      await queueIdle('rollback');
      await new Promise((r) => setTimeout(r, 1_000));
      expect(await f.usage(), "the victim's volume").to.equal('unused');
    } finally {
      await loop.stop();
    }
  });
});

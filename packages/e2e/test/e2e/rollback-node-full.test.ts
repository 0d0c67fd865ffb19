import { expect } from 'chai';
import { Resources } from '@topovol/shared';
import type { PersistentVolume, Pod } from '@topovol/shared';
import { GiB } from '@topovol/testing/csi-test-driver';
import { eventsAbout } from '@topovol/testing';
import { NODES } from './e2e-stack.js';
import { Scenario } from './scenario.js';
import { spreadStatefulSet, STATEFUL_SETS } from './statefulset.js';

const USAGE = 'rollback.topovol.io/usage';

// A sibling of kubernetes/kubernetes#94217 with nothing failing to provision: a StatefulSet replica's
// volume is provisioned on node X, then, before the replica starts, another pod takes X's memory and
// the replica is deleted; the StatefulSet re-creates it. The replacement can only go where its
// volume is, and X has no room: the scheduler says so ("Insufficient memory", the other nodes
// "didn't match PersistentVolume's node affinity"). The volume was never used, so Topovol's rollback
// loop re-creates the claim and the replica is placed on another node.
describe('rollback when the volume\'s node can no longer take the pod', function () {
  this.timeout(300_000);
  const s = Scenario.use('e2e-nodefull-');

  it('a replacement replica pinned by an unused volume to a node without room for it is moved, its claim re-created', async function () {
    const cls = await s.driverClass('csi', Object.fromEntries(NODES.map((n) => [n, 10n * GiB])));
    const sts = spreadStatefulSet(s.ns, 'db', 1, cls);
    sts.spec.template.spec.containers[0]!.resources = { requests: { memory: '4Gi' } };
    await s.create(STATEFUL_SETS, sts);
    const x = await s.scheduled('db-0');
    const first = await s.boundOn('data-db-0', x);
    await s.until('the volume marked unused', async () => {
      const v = await s.admin.get<PersistentVolume>(Resources.persistentVolumes, first.metadata!.name!);
      expect(v.metadata?.labels?.[USAGE]).to.equal('unused');
    });
    const old = await s.pod('db-0');

    // Before db-0 started (nothing ran, nothing was mounted), another pod took most of node X's
    // memory (placed there directly, as a static pod is) and db-0 was deleted (kubectl delete pod).
    await s.create<Pod>(Resources.pods, { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'hog', namespace: s.ns }, spec: { nodeName: x, containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10', resources: { requests: { memory: '6Gi' } } }] } });
    await s.admin.delete(Resources.pods, 'db-0', s.ns, { gracePeriodSeconds: 0 });

    // The StatefulSet replaces it; the replacement ends on another node with a new volume there.
    const y = await s.until('the replacement replica scheduled on another node', async () => {
      const p = await s.pod('db-0');
      expect(p.metadata?.uid, 'a replacement').to.not.equal(old.metadata?.uid);
      if (!p.spec?.nodeName) throw new Error('the replacement is not scheduled');
      return p.spec.nodeName;
    });
    expect(y).to.not.equal(x);
    const second = await s.boundOn('data-db-0', y);
    expect(second.metadata?.name).to.not.equal(first.metadata?.name);
    await s.until('the rollback told in an Event', async () => {
      const [rolledBack] = await eventsAbout(s.admin, s.ns, 'Pod', 'db-0', 'ProvisioningRollback');
      expect(rolledBack?.message).to.contain("didn't match PersistentVolume's node affinity");
    });
  });
});

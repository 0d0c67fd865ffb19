import { expect } from 'chai';
import { Resources } from '@topovol/shared';
import type { PersistentVolume, PersistentVolumeClaim, Pod } from '@topovol/shared';
import { GiB } from '@topovol/testing/csi-test-driver';
import { eventsAbout } from '@topovol/testing';
import { NODES } from './e2e-stack.js';
import { Scenario } from './scenario.js';
import { spreadStatefulSet, STATEFUL_SETS } from './statefulset.js';

const USAGE = 'rollback.topovol.io/usage';

// A sibling of kubernetes/kubernetes#94217 with nothing failing to provision: a StatefulSet replica's
// volume is provisioned on node X and the replica is scheduled there; then another pod takes X's
// memory and the replica is deleted before it reported anything; the StatefulSet re-creates it. The
// replacement can only go where its volume is, and X has no room: the scheduler says so
// ("Insufficient memory", the other nodes "didn't match PersistentVolume's node affinity"). Once a
// pod is scheduled, its kubelet may mount the volume and start containers before it reports any
// status, and a CSI driver without attach (this one) leaves no VolumeAttachment and no
// volumesInUse entry: so the volume may hold data, and Topovol's rollback loop must not undo it.
// The replacement stays Pending, and a Warning says why (docs/rollback.md, invariant 1).
describe('no rollback of a volume whose pod was scheduled, even when its node can no longer take the replacement', function () {
  this.timeout(300_000);
  const s = Scenario.use('e2e-nodefull-');

  it('a replacement replica pinned to a node without room for it keeps its claim and volume, the first replica having been scheduled there', async function () {
    const cls = await s.driverClass('csi', Object.fromEntries(NODES.map((n) => [n, 10n * GiB])));
    const sts = spreadStatefulSet(s.ns, 'db', 1, cls);
    sts.spec.template.spec.containers[0]!.resources = { requests: { memory: '4Gi' } };
    await s.create(STATEFUL_SETS, sts);
    const x = await s.scheduled('db-0');
    const first = await s.boundOn('data-db-0', x);
    const claim = await s.admin.get<PersistentVolumeClaim>(Resources.persistentVolumeClaims, 'data-db-0', s.ns);
    const old = await s.pod('db-0');

    // Another pod took most of node X's memory (placed there directly, as a static pod is) and
    // db-0 was deleted (kubectl delete pod --force) before its kubelet said anything about it.
    await s.create<Pod>(Resources.pods, { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'hog', namespace: s.ns }, spec: { nodeName: x, containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10', resources: { requests: { memory: '6Gi' } } }] } });
    await s.admin.delete(Resources.pods, 'db-0', s.ns, { gracePeriodSeconds: 0 });

    await s.until('the volume marked used: its replica was scheduled', async () => {
      const v = await s.admin.get<PersistentVolume>(Resources.persistentVolumes, first.metadata!.name!);
      expect(v.metadata?.labels?.[USAGE]).to.equal('used');
      expect(v.metadata?.annotations?.['rollback.topovol.io/used-because']).to.contain(`was scheduled to node ${x}`);
    });
    // The StatefulSet replaces db-0; pinned to X by its volume, it cannot be placed, and the
    // rollback loop says why it does not help.
    await s.until('the replacement refused a rollback, in a Warning', async () => {
      const p = await s.pod('db-0');
      expect(p.metadata?.uid, 'a replacement').to.not.equal(old.metadata?.uid);
      // Any of its refusals: one judged on a cache that had not yet seen the mark gives another reason.
      const refused = await eventsAbout(s.admin, s.ns, 'Pod', 'db-0', 'ProvisioningRollbackRefused');
      expect(refused.map((e) => e.message ?? '').join('\n')).to.contain('marked used');
    });
    const p = await s.pod('db-0');
    expect(p.spec?.nodeName, 'the replacement stays Pending').to.equal(undefined);
    const now = await s.admin.get<PersistentVolumeClaim>(Resources.persistentVolumeClaims, 'data-db-0', s.ns);
    expect([now.metadata?.uid, now.spec?.volumeName], 'the claim and its volume kept').to.deep.equal([claim.metadata?.uid, first.metadata?.name]);
  });
});

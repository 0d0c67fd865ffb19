import { affinity, PROVISIONER } from './diff-scenario.js';
import type { ScenarioContext } from './diff-scenario.js';
import { BOUND_BY_CONTROLLER, boundRef, claimIs, PROVISIONED_BY, volumeIs } from './scenario.js';
import type { Scenario } from './scenario.js';
import type { VolumeOptions } from './diff-scenario.js';

/** A claim bound to volume `v` (made with these options), then deleted; waits until the claim is gone. */
async function releaseAfterBinding(s: ScenarioContext, opts: VolumeOptions): Promise<void> {
  await s.pv('v', '1Gi', opts);
  await s.settle();
  await s.pvc('c', '1Gi');
  await s.settle();
  await s.deleteClaim('c');
}

const local = (s: ScenarioContext): VolumeOptions => ({ local: true, nodeAffinity: affinity('kubernetes.io/hostname', [s.name('n1')]) });

/**
 * A volume bound (a uid in its claimRef) to a claim it does not name fully: upstream Releases one
 * without a namespace (its read of the claim asks the cluster-scoped path and is answered 404) and
 * leaves one without a name (client-go refuses to read an empty name); Topovol leaves both, with a
 * Warning.
 */
function incompleteClaimRef(omit: 'namespace' | 'name', upstreamPhase: 'Released' | 'Pending'): Scenario {
  return {
    name: `a claimRef with a uid but no ${omit}, Delete: never released`,
    async run(s) {
      // A claim only to take a real uid from; it stays Pending (the volume is not pre-bound to it).
      await s.pvc('c', '5Gi');
      await s.settle();
      await s.pv('v', '1Gi', { policy: 'Delete', claimRef: { claim: 'c', withUid: true, omit } });
    },
    divergence: {
      upstream: (st) => volumeIs(st, 'v', { phase: upstreamPhase, events: [] }),
      topovol: (st) => volumeIs(st, 'v', { phase: 'Pending', events: ['InvalidClaimRef'] }),
    },
  };
}

/**
 * A volume bound (its claimRef carries a claim's uid) under a name no claim can have: upstream
 * Releases the one with capitals (its read of the claim is answered 404) and leaves the one with a
 * `/` (client-go refuses that path segment before any request); Topovol leaves both, with a Warning.
 */
const impossibleClaimName: Scenario = {
  name: 'a claimRef with a name no claim can have, Delete: never released',
  async run(s) {
    await s.pvc('c', '5Gi');
    await s.settle();
    await s.pv('upper', '1Gi', { policy: 'Delete', claimRef: { claim: 'c', withUid: true, asName: 'C' } });
    await s.pv('path', '1Gi', { policy: 'Delete', claimRef: { claim: 'c', withUid: true, asName: 'c/status' } });
  },
  divergence: {
    upstream: (st) => {
      volumeIs(st, 'upper', { phase: 'Released', events: [] });
      volumeIs(st, 'path', { phase: 'Pending', events: [] });
    },
    topovol: (st) => {
      volumeIs(st, 'upper', { phase: 'Pending', events: ['InvalidClaimRef'] });
      volumeIs(st, 'path', { phase: 'Pending', events: ['InvalidClaimRef'] });
    },
  },
};

/** syncVolume for a volume whose claim is gone: Released, then the reclaim policy. */
export const reclaimScenarios: Scenario[] = [
  {
    name: 'claim deleted, Retain: the volume is Released and kept',
    run: (s) => releaseAfterBinding(s, { policy: 'Retain' }),
    expect: (st) => volumeIs(st, 'v', { phase: 'Released', claimRef: boundRef('c', 'another claim'), events: [] }),
  },
  {
    name: 'claim deleted, Delete, provisioned by an external provisioner: Released, left to it',
    async run(s) {
      await s.storageClass('fast');
      await s.pvc('c', '1Gi', { class: s.name('fast') });
      await s.settle();
      // What external-provisioner writes for the claim.
      await s.pv('v', '1Gi', { class: s.name('fast'), policy: 'Delete', claimRef: { claim: 'c', withUid: true }, annotations: { [PROVISIONED_BY]: PROVISIONER } });
      await s.settle();
      await s.deleteClaim('c');
    },
    expect: (st) => volumeIs(st, 'v', { phase: 'Released', claimRef: boundRef('c', 'another claim'), events: [] }),
  },
  {
    name: 'claim deleted, Delete, static CSI volume: Released, left to the CSI deleter',
    run: (s) => releaseAfterBinding(s, { policy: 'Delete' }),
    expect: (st) => volumeIs(st, 'v', { phase: 'Released', events: [] }),
  },
  {
    name: 'claim deleted, Delete, static local volume: Failed with VolumeFailedDelete',
    run: (s) => releaseAfterBinding(s, { policy: 'Delete', ...local(s) }),
    expect: (st) => volumeIs(st, 'v', { phase: 'Failed', events: ['VolumeFailedDelete'] }),
  },
  incompleteClaimRef('namespace', 'Released'),
  incompleteClaimRef('name', 'Pending'),
  impossibleClaimName,
  {
    name: 'claim deleted, Recycle, CSI volume: Failed with VolumeFailedRecycle',
    run: (s) => releaseAfterBinding(s, { policy: 'Recycle' }),
    expect: (st) => volumeIs(st, 'v', { phase: 'Failed', events: ['VolumeFailedRecycle'] }),
  },
  {
    name: 'claim removed, Recycle, while a pod still names the claim: Released, the recycle waits',
    async run(s) {
      const n1 = await s.node('n1', {}, false);
      await s.pv('v', '1Gi', { policy: 'Recycle' });
      await s.settle();
      await s.pvc('c', '1Gi');
      await s.settle();
      await s.pod('p', ['c'], { nodeName: n1 });
      await s.settle();
      // Past the claim's protection, as an administrator forcing it would.
      await s.deleteClaim('c', { force: true });
    },
    expect: (st) => volumeIs(st, 'v', { phase: 'Released', events: ['VolumeFailedRecycle'] }),
  },
  {
    name: 'Failed volume stays Failed after its policy is changed to Retain',
    async run(s) {
      await releaseAfterBinding(s, { policy: 'Delete', ...local(s) });
      await s.settle();
      await s.patchVolume('v', { spec: { persistentVolumeReclaimPolicy: 'Retain' } });
    },
    expect: (st) => volumeIs(st, 'v', { phase: 'Failed', events: ['VolumeFailedDelete'] }),
  },
  {
    name: 'claim re-created under the same name: the old volume is Released, the new claim waits',
    async run(s) {
      await releaseAfterBinding(s, { policy: 'Retain' });
      await s.until('the claim to be gone', async () => !(await s.claim('c').catch(() => undefined)));
      await s.pvc('c', '1Gi');
    },
    expect(st) {
      volumeIs(st, 'v', { phase: 'Released', claimRef: boundRef('c', 'another claim') });
      claimIs(st, 'c', { phase: 'Pending', events: ['FailedBinding'] });
    },
  },
  {
    name: 'Released volume made Available again by its administrator binds a new claim',
    async run(s) {
      await releaseAfterBinding(s, { policy: 'Retain' });
      await s.settle();
      await s.editVolume('v', (v) => {
        delete v.spec!.claimRef;
      });
      await s.settle();
      await s.pvc('next', '1Gi');
    },
    expect(st) {
      claimIs(st, 'next', { phase: 'Bound', volumeName: 'v' });
      volumeIs(st, 'v', { phase: 'Bound', claimRef: boundRef('next'), annotations: { [BOUND_BY_CONTROLLER]: 'yes' } });
    },
  },
];

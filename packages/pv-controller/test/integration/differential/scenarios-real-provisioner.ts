import { REAL_PROVISIONER } from './diff-cluster.js';
import type { ScenarioContext } from './diff-scenario.js';
import { provisionedFor } from './diff-state.js';
import { claimIs, PROVISIONED_BY, volumeIs } from './scenario.js';
import type { Scenario } from './scenario.js';

const VOLUME = provisionedFor('c');

/** Claim c of a class with this reclaim policy, provisioned and bound, then deleted. */
async function provisionThenDelete(s: ScenarioContext, reclaimPolicy: 'Delete' | 'Retain'): Promise<void> {
  await s.storageClass('cls', { provisioner: REAL_PROVISIONER, reclaimPolicy });
  await s.pvc('c', '1Gi', { class: s.name('cls') });
  await s.until('the claim Bound', async () => (await s.claim('c')).status?.phase === 'Bound');
  await s.settle();
  await s.deleteClaim('c');
}

/**
 * The external-provisioning protocol end to end with the real external-provisioner v6.3.0 and
 * the project's CSI driver on each side: what the binder hands over, what comes back, and what
 * happens to the volume when its claim goes.
 */
export const realProvisionerScenarios: Scenario[] = [
  {
    name: 'real external-provisioner, Immediate: provisioned and bound',
    async run(s) {
      await s.storageClass('fast', { provisioner: REAL_PROVISIONER, reclaimPolicy: 'Delete' });
      await s.pvc('c', '1Gi', { class: s.name('fast') });
    },
    expect(st) {
      claimIs(st, 'c', { phase: 'Bound', volumeName: VOLUME, capacity: '1Gi' });
      volumeIs(st, VOLUME, { phase: 'Bound', annotations: { [PROVISIONED_BY]: REAL_PROVISIONER } });
    },
  },
  {
    name: 'real external-provisioner, Immediate: provisioned and bound; the claim deleted, the volume deleted',
    run: (s) => provisionThenDelete(s, 'Delete'),
    expect(st) {
      if (st.claims.c) throw new Error('claim c should be gone');
      volumeIs(st, VOLUME, null);
    },
  },
  {
    name: 'real external-provisioner, Retain: the claim deleted, the volume Released and kept',
    run: (s) => provisionThenDelete(s, 'Retain'),
    expect: (st) => volumeIs(st, VOLUME, { phase: 'Released', annotations: { [PROVISIONED_BY]: REAL_PROVISIONER } }),
  },
  {
    name: 'real external-provisioner, WaitForFirstConsumer: provisioned once the scheduler places the pod, which runs there',
    async run(s) {
      await s.node('n1');
      await s.storageClass('late', { provisioner: REAL_PROVISIONER, delayed: true, reclaimPolicy: 'Delete' });
      await s.pvc('c', '1Gi', { class: s.name('late') });
      await s.settle();
      await s.pod('p', ['c']);
    },
    // Whether the binder's WaitForPodScheduled shows before the scheduler places the pod is a race on either side.
    ignoreEvents: ['WaitForPodScheduled'],
    expect(st) {
      claimIs(st, 'c', { phase: 'Bound', volumeName: VOLUME });
      volumeIs(st, VOLUME, { phase: 'Bound' });
      if (st.pods.p?.nodeName !== 'n1') throw new Error(`pod p on ${st.pods.p?.nodeName}, want n1`);
    },
  },
  {
    name: 'real external-provisioner: a claim larger than the driver can make stays Pending, handed over',
    async run(s) {
      await s.storageClass('huge', { provisioner: REAL_PROVISIONER });
      await s.pvc('c', '4096Gi', { class: s.name('huge') });
      // Handed over and refused, not merely never looked at.
      const uid = await s.claimUid('c');
      await s.until('the driver asked for the volume', () => Promise.resolve(s.cluster.volumeAskedFor(uid)));
    },
    expect: (st) => claimIs(st, 'c', { phase: 'Pending', events: ['ExternalProvisioning'] }),
  },
];

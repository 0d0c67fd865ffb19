import { boundRef, claimIs, volumeIs } from './scenario.js';
import type { Scenario } from './scenario.js';
import type { ScenarioContext } from './diff-scenario.js';

async function bound(s: ScenarioContext): Promise<void> {
  await s.pv('v', '1Gi');
  await s.settle();
  await s.pvc('c', '1Gi');
  await s.settle();
}

/** Deleting claims and volumes at each phase, with the real protection controllers holding their finalizers. */
export const deletionScenarios: Scenario[] = [
  {
    name: 'deletion: a Pending claim goes, nothing else changes',
    async run(s) {
      await s.pv('small', '1Gi');
      await s.pvc('c', '5Gi');
      await s.settle();
      await s.deleteClaim('c');
    },
    expect(st) {
      if (st.claims.c) throw new Error('claim c still there');
      volumeIs(st, 'small', { phase: 'Available', claimRef: null });
    },
  },
  {
    name: 'deletion: a bound claim a scheduled pod uses stays Terminating, and its volume Bound',
    async run(s) {
      const n1 = await s.node('n1', {}, false);
      await bound(s);
      await s.pod('p', ['c'], { nodeName: n1 });
      await s.settle();
      await s.deleteClaim('c');
    },
    expect(st) {
      claimIs(st, 'c', { phase: 'Bound', terminating: true });
      volumeIs(st, 'v', { phase: 'Bound', claimRef: boundRef('c') });
    },
  },
  {
    name: 'deletion: a Terminating claim a pod still uses gets its volume back when the volume loses its claimRef',
    async run(s) {
      const n1 = await s.node('n1', {}, false);
      await bound(s);
      await s.pod('p', ['c'], { nodeName: n1 });
      await s.settle();
      await s.deleteClaim('c');
      await s.settle();
      await s.editVolume('v', (v) => {
        delete v.spec!.claimRef;
      });
    },
    expect(st) {
      claimIs(st, 'c', { phase: 'Bound', terminating: true, volumeName: 'v' });
      volumeIs(st, 'v', { phase: 'Bound', claimRef: boundRef('c') });
    },
  },
  {
    name: 'deletion: a bound volume stays Terminating and Bound while its claim exists',
    async run(s) {
      await bound(s);
      await s.deleteVolume('v');
    },
    expect(st) {
      claimIs(st, 'c', { phase: 'Bound', volumeName: 'v' });
      volumeIs(st, 'v', { phase: 'Bound', terminating: true });
    },
  },
  {
    name: 'deletion: a bound volume being deleted is Released and removed once its claim is deleted',
    async run(s) {
      await bound(s);
      await s.deleteVolume('v');
      await s.settle();
      await s.deleteClaim('c');
    },
    expect: (st) => volumeIs(st, 'v', null),
  },
  {
    name: 'deletion: an Available volume goes',
    async run(s) {
      await s.pv('v', '1Gi');
      await s.settle();
      await s.deleteVolume('v');
    },
    expect: (st) => volumeIs(st, 'v', null),
  },
  {
    name: 'deletion: a Released volume goes',
    async run(s) {
      await bound(s);
      await s.deleteClaim('c');
      await s.settle();
      await s.deleteVolume('v');
    },
    expect: (st) => volumeIs(st, 'v', null),
  },
  {
    name: 'deletion: a Pending claim held while being deleted, and a free volume with Delete created then: not bound',
    async run(s) {
      await s.pvc('c', '1Gi', { finalizers: ['diff.topovol.dev/hold'] });
      await s.settle();
      await s.deleteClaim('c');
      await s.settle();
      await s.pv('v', '1Gi', { policy: 'Delete' });
    },
    divergence: {
      // Once the claim goes, the volume is Released and its Delete policy deletes it: a static
      // volume nobody used, given to a claim no pod can use (kube-scheduler refuses a pod whose
      // claim is being deleted).
      upstream: (st) => {
        claimIs(st, 'c', { phase: 'Bound', volumeName: 'v', terminating: true });
        volumeIs(st, 'v', { phase: 'Bound', claimRef: boundRef('c') });
      },
      topovol: (st) => {
        claimIs(st, 'c', { phase: 'Pending', terminating: true });
        volumeIs(st, 'v', { phase: 'Available', claimRef: null });
      },
    },
  },
];

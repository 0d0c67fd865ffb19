import { Resources } from '@topovol/shared';
import { BIND_COMPLETED, BOUND_BY_CONTROLLER, boundRef, claimIs, PROVISIONED_BY, volumeIs } from './scenario.js';
import type { Scenario } from './scenario.js';
import { PROVISIONER } from './diff-scenario.js';

const OTHER_UID = '00000000-0000-4000-8000-000000000000';

/** Volumes pre-bound to a claim (spec.claimRef), by a user, a provisioner or the scheduler. */
export const preBoundVolumeScenarios: Scenario[] = [
  {
    name: 'volume pre-bound by name wins over a smaller free volume',
    async run(s) {
      await s.pv('small', '1Gi');
      await s.pv('mine', '5Gi', { claimRef: { claim: 'c', withUid: false } });
      await s.settle();
      await s.pvc('c', '1Gi');
    },
    expect(st) {
      claimIs(st, 'c', { phase: 'Bound', volumeName: 'mine', annotations: { [BIND_COMPLETED]: 'yes', [BOUND_BY_CONTROLLER]: 'yes' } });
      volumeIs(st, 'mine', { phase: 'Bound', claimRef: boundRef('c'), annotations: {} });
      volumeIs(st, 'small', { phase: 'Available' });
    },
  },
  {
    name: 'volume pre-bound with the claim\'s uid after the claim waited: bound',
    async run(s) {
      await s.pvc('c', '1Gi');
      await s.settle();
      await s.pv('mine', '1Gi', { claimRef: { claim: 'c', withUid: true } });
    },
    expect: (st) => claimIs(st, 'c', { phase: 'Bound', volumeName: 'mine', events: ['FailedBinding'] }),
  },
  {
    name: 'volume pre-bound to a claim whose access modes it lacks: not bound',
    async run(s) {
      await s.pv('mine', '1Gi', { claimRef: { claim: 'c', withUid: false } });
      await s.settle();
      await s.pvc('c', '1Gi', { accessModes: ['ReadWriteMany'] });
    },
    expect(st) {
      claimIs(st, 'c', { phase: 'Pending', events: ['FailedBinding'] });
      volumeIs(st, 'mine', { phase: 'Available', claimRef: boundRef('c', 'none') });
    },
  },
  {
    name: 'volume pre-bound to a claim of another class is bound all the same',
    async run(s) {
      await s.pv('mine', '1Gi', { class: s.name('other'), claimRef: { claim: 'c', withUid: false } });
      await s.settle();
      await s.pvc('c', '1Gi');
    },
    expect: (st) => claimIs(st, 'c', { phase: 'Bound', volumeName: 'mine' }),
  },
  {
    name: 'volume pre-bound to a claim it is too small for: never Bound, the claim waits',
    async run(s) {
      await s.pvc('c', '5Gi');
      await s.settle();
      await s.pv('mine', '1Gi', { claimRef: { claim: 'c', withUid: true } });
    },
    expect(st) {
      claimIs(st, 'c', { phase: 'Pending', events: ['FailedBinding'] });
      volumeIs(st, 'mine', { phase: 'Pending', claimRef: boundRef('c') });
    },
  },
  {
    name: 'volume pre-bound to a claim of another volumeMode: VolumeMismatch on both, never Bound',
    async run(s) {
      await s.pvc('c', '1Gi');
      await s.settle();
      await s.pv('mine', '1Gi', { volumeMode: 'Block', claimRef: { claim: 'c', withUid: true } });
    },
    expect(st) {
      claimIs(st, 'c', { phase: 'Pending', events: ['FailedBinding', 'VolumeMismatch'] });
      volumeIs(st, 'mine', { phase: 'Pending', events: ['VolumeMismatch'] });
    },
  },
  {
    // findByClaim (index.go) asks access-mode group by group, the fewest modes first: of two volumes
    // pre-bound to the claim, the narrower group's is met first, whatever the names.
    name: 'two volumes pre-bound to the claim in different access-mode groups',
    async run(s) {
      await s.pv('a-wide', '1Gi', { accessModes: ['ReadWriteOnce', 'ReadWriteMany'], claimRef: { claim: 'c', withUid: false } });
      await s.pv('b-narrow', '1Gi', { claimRef: { claim: 'c', withUid: false } });
      await s.settle();
      await s.pvc('c', '1Gi');
    },
    expect(st) {
      claimIs(st, 'c', { phase: 'Bound', volumeName: 'b-narrow' });
      volumeIs(st, 'a-wide', { phase: 'Available', claimRef: boundRef('c', 'none') });
    },
  },
  {
    name: 'pre-bound volume in a larger access-mode group against a free volume in a smaller one',
    async run(s) {
      await s.pv('free', '1Gi');
      await s.pv('mine', '1Gi', { accessModes: ['ReadWriteOnce', 'ReadWriteMany'], claimRef: { claim: 'c', withUid: false } });
      await s.settle();
      await s.pvc('c', '1Gi');
    },
    divergence: {
      upstream(st) {
        claimIs(st, 'c', { phase: 'Bound', volumeName: 'free' });
        volumeIs(st, 'mine', { phase: 'Available', claimRef: boundRef('c', 'none') });
      },
      topovol(st) {
        claimIs(st, 'c', { phase: 'Bound', volumeName: 'mine' });
        volumeIs(st, 'free', { phase: 'Available', claimRef: null });
      },
    },
  },
];

/** syncBoundClaim: a claim whose binding completed once. */
export const boundClaimScenarios: Scenario[] = [
  {
    name: 'bound claim whose volume is removed: Lost, capacity and access modes cleared',
    async run(s) {
      await s.pv('v', '1Gi');
      await s.settle();
      await s.pvc('c', '1Gi');
      await s.settle();
      await s.deleteVolume('v', { force: true });
    },
    expect(st) {
      claimIs(st, 'c', { phase: 'Lost', volumeName: 'v', capacity: undefined, accessModes: undefined, events: ['ClaimLost'] });
      volumeIs(st, 'v', null);
    },
  },
  {
    name: 'bound claim whose volume now names another claim uid: Lost (ClaimMisbound), the volume Released',
    async run(s) {
      await s.pv('v', '1Gi');
      await s.settle();
      await s.pvc('c', '1Gi');
      await s.settle();
      await s.editVolume('v', (v) => {
        v.spec!.claimRef!.uid = OTHER_UID;
      });
    },
    expect(st) {
      claimIs(st, 'c', { phase: 'Lost', events: ['ClaimMisbound'] });
      volumeIs(st, 'v', { phase: 'Released', claimRef: boundRef('c', 'another claim') });
    },
  },
  {
    name: 'bound claim whose volume\'s claimRef names another namespace: repaired',
    async run(s) {
      await s.pv('v', '1Gi');
      await s.settle();
      await s.pvc('c', '1Gi');
      await s.settle();
      await s.editVolume('v', (v) => {
        v.spec!.claimRef!.namespace = 'elsewhere';
      });
    },
    expect(st) {
      claimIs(st, 'c', { phase: 'Bound', volumeName: 'v' });
      volumeIs(st, 'v', { phase: 'Bound', claimRef: boundRef('c') });
    },
  },
  {
    name: 'bound claim whose volume lost its claimRef: bound again',
    async run(s) {
      await s.pv('v', '1Gi');
      await s.settle();
      await s.pvc('c', '1Gi');
      await s.settle();
      await s.editVolume('v', (v) => {
        delete v.spec!.claimRef;
      });
    },
    expect(st) {
      claimIs(st, 'c', { phase: 'Bound', volumeName: 'v' });
      volumeIs(st, 'v', { phase: 'Bound', claimRef: boundRef('c') });
    },
  },
  {
    name: 'a claim marked bind-completed by hand, naming a free volume of another class: not bound',
    async run(s) {
      const v = await s.pv('v', '1Gi', { class: s.name('gold') });
      await s.settle();
      // What anyone who may write claims can write: a class-less claim taking a volume of class gold.
      await s.pvc('c', '1Gi', { volumeName: v, annotations: { [BIND_COMPLETED]: 'yes' } });
    },
    divergence: {
      upstream: (st) => {
        claimIs(st, 'c', { phase: 'Bound', volumeName: 'v' });
        volumeIs(st, 'v', { phase: 'Bound', claimRef: boundRef('c') });
      },
      topovol: (st) => {
        claimIs(st, 'c', { phase: 'Pending', volumeName: 'v', events: ['VolumeMismatch'] });
        volumeIs(st, 'v', { phase: 'Available', claimRef: null });
      },
    },
  },
];

/** updateClaimStatus: what a claim's status shows of its volume. */
export const claimStatusScenarios: Scenario[] = [
  {
    name: 'claim status: a volume with a pending resize gives the claim its pre-resize capacity',
    async run(s) {
      await s.pv('v', '2Gi', { annotations: { 'volume.alpha.kubernetes.io/pre-resize-capacity': '1Gi' } });
      await s.settle();
      await s.pvc('c', '1Gi');
    },
    expect: (st) => claimIs(st, 'c', { phase: 'Bound', volumeName: 'v', capacity: '1Gi' }),
  },
  {
    name: 'claim status: the capacity of a Bound claim is never rewritten to its volume\'s',
    async run(s) {
      await s.pv('v', '2Gi');
      await s.settle();
      await s.pvc('c', '1Gi');
      await s.settle();
      // What a resizer or an administrator may leave there.
      const c = await s.claim('c');
      await s.admin.replaceStatus(Resources.persistentVolumeClaims, { ...c, status: { ...c.status, capacity: { storage: '1536Mi' } } });
    },
    expect: (st) => claimIs(st, 'c', { phase: 'Bound', capacity: '1536Mi' }),
  },
];

/** syncVolume for a volume whose claim is bound to another volume. */
export const claimElsewhereScenarios: Scenario[] = [
  {
    name: 'volume the controller bound to a claim that went to another volume: unbound',
    async run(s) {
      await s.pv('y', '1Gi');
      await s.settle();
      await s.pvc('c', '1Gi', { volumeName: s.name('y') });
      await s.settle();
      await s.pv('x', '1Gi', { claimRef: { claim: 'c', withUid: true }, annotations: { [BOUND_BY_CONTROLLER]: 'yes' } });
    },
    expect(st) {
      claimIs(st, 'c', { phase: 'Bound', volumeName: 'y' });
      volumeIs(st, 'x', { phase: 'Available', claimRef: null, annotations: {} });
    },
  },
  {
    name: 'provisioned Delete volume whose claim went to another volume: Released to its deleter',
    async run(s) {
      await s.pv('y', '1Gi');
      await s.settle();
      await s.pvc('c', '1Gi', { volumeName: s.name('y') });
      await s.settle();
      await s.pv('x', '1Gi', { policy: 'Delete', claimRef: { claim: 'c', withUid: true }, annotations: { [PROVISIONED_BY]: PROVISIONER, [BOUND_BY_CONTROLLER]: 'yes' } });
    },
    expect(st) {
      claimIs(st, 'c', { phase: 'Bound', volumeName: 'y' });
      volumeIs(st, 'x', { phase: 'Released', claimRef: boundRef('c') });
    },
  },
  {
    name: 'volume a user pre-bound to a claim that went to another volume: uid cleared, still pre-bound by name',
    async run(s) {
      await s.pv('y', '1Gi');
      await s.settle();
      await s.pvc('c', '1Gi', { volumeName: s.name('y') });
      await s.settle();
      await s.pv('x', '1Gi', { claimRef: { claim: 'c', withUid: true } });
    },
    expect(st) {
      claimIs(st, 'c', { phase: 'Bound', volumeName: 'y' });
      volumeIs(st, 'x', { phase: 'Available', claimRef: boundRef('c', 'none') });
    },
  },
];

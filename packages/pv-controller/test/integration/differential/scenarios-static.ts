import { BIND_COMPLETED, BOUND_BY_CONTROLLER, boundRef, claimIs, volumeIs } from './scenario.js';
import type { Scenario } from './scenario.js';

const RWO = ['ReadWriteOnce'];

/** syncUnboundClaim with no volumeName: upstream's FindMatchingVolume over its access-mode groups. */
export const staticScenarios: Scenario[] = [
  {
    // What the suite's pv_collector check counts by plugin, mode and class spelling (differential.test.ts).
    name: 'static: hostPath, NFS and Block volumes, and classes named by the beta annotation',
    async run(s) {
      const gold = await s.storageClass('gold');
      await s.pv('hostpath', '1Gi', { inTree: 'hostPath' });
      await s.pv('nfs', '1Gi', { inTree: 'nfs', accessModes: ['ReadWriteMany'] });
      await s.pv('block', '1Gi', { volumeMode: 'Block' });
      // The volume's class is the annotation's for binding; its spec names none.
      await s.pv('beta', '1Gi', { annotations: { 'volume.beta.kubernetes.io/storage-class': gold } });
      await s.settle();
      await s.pvc('c', '1Gi', { class: null, annotations: { 'volume.beta.kubernetes.io/storage-class': gold } });
    },
    expect(st) {
      claimIs(st, 'c', { phase: 'Bound', volumeName: 'beta' });
      for (const v of ['hostpath', 'nfs', 'block']) volumeIs(st, v, { phase: 'Available', claimRef: null });
    },
  },
  {
    // `Gt` with a value that is no integer: accepted by the API server, matched by no node.
    name: 'static: a class-less claim and a smaller volume no node can use: not bound to it',
    async run(s) {
      await s.pv('unusable', '1Gi', { nodeAffinity: { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'example.com/size', operator: 'Gt', values: ['big'] }] }] } } });
      await s.pv('usable', '2Gi');
      await s.settle();
      await s.pvc('c', '1Gi');
    },
    divergence: {
      upstream: (st) => {
        claimIs(st, 'c', { phase: 'Bound', volumeName: 'unusable' });
        volumeIs(st, 'usable', { phase: 'Available', claimRef: null });
      },
      topovol: (st) => {
        claimIs(st, 'c', { phase: 'Bound', volumeName: 'usable' });
        volumeIs(st, 'unusable', { phase: 'Available', claimRef: null, events: ['UnusableVolume'] });
      },
    },
  },
  {
    name: 'static: a class-less claim binds the smallest Available volume that fits',
    async run(s) {
      await s.pv('big', '5Gi');
      await s.pv('fit', '2Gi');
      await s.pv('small', '500Mi');
      await s.settle();
      await s.pvc('c', '1Gi');
    },
    expect(st) {
      claimIs(st, 'c', { phase: 'Bound', volumeName: 'fit', capacity: '2Gi', accessModes: RWO, annotations: { [BIND_COMPLETED]: 'yes', [BOUND_BY_CONTROLLER]: 'yes' }, events: [] });
      volumeIs(st, 'fit', { phase: 'Bound', annotations: { [BOUND_BY_CONTROLLER]: 'yes' } });
      volumeIs(st, 'big', { phase: 'Available', claimRef: null });
    },
  },
  {
    name: 'static: a class-less claim no volume fits stays Pending with FailedBinding',
    async run(s) {
      await s.pv('small', '1Gi');
      await s.settle();
      await s.pvc('c', '10Gi');
    },
    expect: (st) => claimIs(st, 'c', { phase: 'Pending', events: ['FailedBinding'] }),
  },
  {
    name: 'static: a label selector picks the labelled volume over a smaller one',
    async run(s) {
      await s.pv('plain', '1Gi');
      await s.pv('gold', '3Gi', { labels: { tier: 'gold' } });
      await s.settle();
      await s.pvc('c', '1Gi', { selector: { matchLabels: { tier: 'gold' } } });
    },
    expect: (st) => claimIs(st, 'c', { phase: 'Bound', volumeName: 'gold' }),
  },
  {
    name: 'static: a ReadWriteMany claim skips ReadWriteOnce volumes',
    async run(s) {
      await s.pv('rwo', '1Gi');
      await s.pv('rwx', '2Gi', { accessModes: ['ReadWriteMany'] });
      await s.settle();
      await s.pvc('c', '1Gi', { accessModes: ['ReadWriteMany'] });
    },
    expect: (st) => claimIs(st, 'c', { phase: 'Bound', volumeName: 'rwx', accessModes: ['ReadWriteMany'] }),
  },
  {
    name: 'static: the fewest access modes win before the smallest size',
    async run(s) {
      await s.pv('rwo', '5Gi');
      await s.pv('rwo-rwx', '1Gi', { accessModes: ['ReadWriteOnce', 'ReadWriteMany'] });
      await s.settle();
      await s.pvc('c', '1Gi');
    },
    expect: (st) => claimIs(st, 'c', { phase: 'Bound', volumeName: 'rwo', capacity: '5Gi' }),
  },
  {
    name: 'static: a Block claim binds the Block volume, not a smaller Filesystem one',
    async run(s) {
      await s.pv('fs', '1Gi');
      await s.pv('block', '2Gi', { volumeMode: 'Block' });
      await s.settle();
      await s.pvc('c', '1Gi', { volumeMode: 'Block' });
    },
    expect: (st) => claimIs(st, 'c', { phase: 'Bound', volumeName: 'block' }),
  },
  {
    name: 'static: volumeAttributesClassName must match, and becomes the claim\'s current one',
    async run(s) {
      await s.pv('plain', '1Gi');
      await s.pv('gold', '2Gi', { volumeAttributesClassName: 'gold' });
      await s.settle();
      await s.pvc('c', '1Gi', { volumeAttributesClassName: 'gold' });
    },
    expect: (st) => claimIs(st, 'c', { phase: 'Bound', volumeName: 'gold', currentVolumeAttributesClassName: 'gold' }),
  },
  {
    name: 'static: a volume being deleted is never chosen',
    async run(s) {
      await s.pv('dying', '1Gi', { finalizers: ['diff.topovol.dev/hold'] });
      await s.settle();
      await s.deleteVolume('dying');
      await s.pv('ok', '2Gi');
      await s.settle();
      await s.pvc('c', '1Gi');
    },
    expect(st) {
      claimIs(st, 'c', { phase: 'Bound', volumeName: 'ok' });
      volumeIs(st, 'dying', { terminating: true, claimRef: null });
    },
  },
  {
    name: 'static: a free volume created after its claim is bound to it',
    async run(s) {
      await s.pvc('c', '1Gi');
      await s.settle();
      await s.pv('late', '1Gi');
    },
    expect: (st) => claimIs(st, 'c', { phase: 'Bound', volumeName: 'late', events: ['FailedBinding'] }),
  },
];

/** syncUnboundClaim with a volumeName (a claim naming its volume). */
export const namedVolumeScenarios: Scenario[] = [
  {
    name: 'claim names a free volume: bound, bound-by-controller on the volume only',
    async run(s) {
      await s.pv('v', '1Gi');
      await s.settle();
      await s.pvc('c', '1Gi', { volumeName: s.name('v') });
    },
    expect(st) {
      claimIs(st, 'c', { phase: 'Bound', volumeName: 'v', annotations: { [BIND_COMPLETED]: 'yes' } });
      volumeIs(st, 'v', { phase: 'Bound', claimRef: boundRef('c'), annotations: { [BOUND_BY_CONTROLLER]: 'yes' } });
    },
  },
  {
    name: 'claim names a volume that does not exist yet: Pending, then bound when it appears',
    async run(s) {
      await s.pvc('c', '1Gi', { volumeName: s.name('v') });
      await s.settle();
      await s.pv('v', '1Gi');
    },
    expect: (st) => claimIs(st, 'c', { phase: 'Bound', volumeName: 'v', events: [] }),
  },
  {
    name: 'claim names a volume too small for it: VolumeMismatch, Pending',
    async run(s) {
      await s.pv('v', '1Gi');
      await s.settle();
      await s.pvc('c', '5Gi', { volumeName: s.name('v') });
    },
    expect(st) {
      claimIs(st, 'c', { phase: 'Pending', events: ['VolumeMismatch'] });
      volumeIs(st, 'v', { phase: 'Available', claimRef: null });
    },
  },
  {
    name: 'claim names a volume being deleted: VolumeMismatch, never bound',
    async run(s) {
      await s.pv('v', '1Gi', { finalizers: ['diff.topovol.dev/hold'] });
      await s.settle();
      await s.deleteVolume('v');
      await s.settle();
      await s.pvc('c', '1Gi', { volumeName: s.name('v') });
    },
    expect(st) {
      claimIs(st, 'c', { phase: 'Pending', events: ['VolumeMismatch'] });
      volumeIs(st, 'v', { claimRef: null, terminating: true });
    },
  },
  {
    name: 'claim names a volume of another VolumeAttributesClass: VolumeMismatch',
    async run(s) {
      await s.pv('v', '1Gi', { volumeAttributesClassName: 'gold' });
      await s.settle();
      await s.pvc('c', '1Gi', { volumeName: s.name('v') });
    },
    expect: (st) => claimIs(st, 'c', { phase: 'Pending', events: ['VolumeMismatch'] }),
  },
  {
    name: 'claim names a volume bound to another claim: FailedBinding, Pending',
    async run(s) {
      await s.pv('v', '1Gi');
      await s.settle();
      await s.pvc('first', '1Gi', { volumeName: s.name('v') });
      await s.settle();
      await s.pvc('second', '1Gi', { volumeName: s.name('v') });
    },
    expect(st) {
      claimIs(st, 'first', { phase: 'Bound' });
      claimIs(st, 'second', { phase: 'Pending', events: ['FailedBinding'] });
    },
  },
];

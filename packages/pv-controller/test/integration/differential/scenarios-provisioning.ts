import { PROVISIONER } from './diff-scenario.js';
import { BETA_STORAGE_PROVISIONER, BIND_COMPLETED, BOUND_BY_CONTROLLER, boundRef, claimIs, PROVISIONED_BY, STORAGE_PROVISIONER, volumeIs } from './scenario.js';
import type { Scenario } from './scenario.js';

const signalled = { [STORAGE_PROVISIONER]: PROVISIONER, [BETA_STORAGE_PROVISIONER]: PROVISIONER };

/** No volume matched a claim of a class: the external-provisioning protocol. */
export const provisioningScenarios: Scenario[] = [
  {
    name: 'provisioning: no volume for a class with a provisioner: annotations and ExternalProvisioning',
    async run(s) {
      await s.storageClass('fast');
      await s.pvc('c', '1Gi', { class: s.name('fast') });
    },
    expect: (st) => claimIs(st, 'c', { phase: 'Pending', annotations: signalled, events: ['ExternalProvisioning'] }),
  },
  {
    name: 'provisioning: a claim with a selector is handed to the provisioner all the same',
    async run(s) {
      await s.storageClass('fast');
      await s.pvc('c', '1Gi', { class: s.name('fast'), selector: { matchLabels: { tier: 'gold' } } });
    },
    expect: (st) => claimIs(st, 'c', { annotations: signalled, events: ['ExternalProvisioning'] }),
  },
  {
    name: 'provisioning: a kubernetes.io/no-provisioner class without a volume: ProvisioningFailed',
    async run(s) {
      await s.storageClass('local', { provisioner: 'kubernetes.io/no-provisioner' });
      await s.pvc('c', '1Gi', { class: s.name('local') });
    },
    expect: (st) => claimIs(st, 'c', { phase: 'Pending', annotations: {}, events: ['ProvisioningFailed'] }),
  },
  {
    name: 'provisioning: a claim naming a class that does not exist yet: ProvisioningFailed, then provisioning once it does',
    async run(s) {
      await s.pvc('c', '1Gi', { class: s.name('later') });
      await s.settle();
      await s.storageClass('later');
    },
    expect: (st) => claimIs(st, 'c', { annotations: signalled, events: ['ExternalProvisioning', 'ProvisioningFailed'] }),
  },
  {
    name: 'provisioning: the volume the provisioner creates, pre-bound to the claim, is bound',
    async run(s) {
      await s.storageClass('fast');
      await s.pvc('c', '1Gi', { class: s.name('fast') });
      await s.until('the provisioning annotation', async () => (await s.claim('c')).metadata?.annotations?.[STORAGE_PROVISIONER] === PROVISIONER);
      await s.pv('pvc-c', '1Gi', { class: s.name('fast'), policy: 'Delete', claimRef: { claim: 'c', withUid: true }, annotations: { [PROVISIONED_BY]: PROVISIONER } });
    },
    expect(st) {
      claimIs(st, 'c', { phase: 'Bound', volumeName: 'pvc-c', annotations: { ...signalled, [BIND_COMPLETED]: 'yes', [BOUND_BY_CONTROLLER]: 'yes' } });
      volumeIs(st, 'pvc-c', { phase: 'Bound', claimRef: boundRef('c'), annotations: { [PROVISIONED_BY]: PROVISIONER } });
    },
  },
];

/** CSI migration (KEP-625): in-tree provisioner names are served by CSI drivers. */
export const migrationScenarios: Scenario[] = [
  {
    name: 'CSI migration: a class of a migrated in-tree provisioner asks its CSI driver',
    async run(s) {
      await s.storageClass('gp2', { provisioner: 'kubernetes.io/aws-ebs' });
      await s.pvc('c', '1Gi', { class: s.name('gp2') });
    },
    expect: (st) => claimIs(st, 'c', { annotations: { [STORAGE_PROVISIONER]: 'ebs.csi.aws.com', [BETA_STORAGE_PROVISIONER]: 'ebs.csi.aws.com' }, events: ['ExternalProvisioning'] }),
  },
  {
    name: 'CSI migration: a claim annotated with the in-tree provisioner ends with its CSI driver',
    async run(s) {
      await s.storageClass('gp2', { provisioner: 'kubernetes.io/aws-ebs' });
      await s.pvc('c', '1Gi', { class: s.name('gp2'), annotations: { [STORAGE_PROVISIONER]: 'kubernetes.io/aws-ebs', [BETA_STORAGE_PROVISIONER]: 'kubernetes.io/aws-ebs' } });
    },
    expect: (st) => claimIs(st, 'c', { annotations: { [STORAGE_PROVISIONER]: 'ebs.csi.aws.com', [BETA_STORAGE_PROVISIONER]: 'ebs.csi.aws.com' } }),
  },
  {
    name: 'CSI migration: a released volume of a migrated in-tree provisioner is left to its CSI driver',
    async run(s) {
      await s.storageClass('gp2', { provisioner: 'kubernetes.io/aws-ebs' });
      await s.pvc('c', '1Gi', { class: s.name('gp2') });
      await s.settle();
      await s.pv('v', '1Gi', { class: s.name('gp2'), policy: 'Delete', claimRef: { claim: 'c', withUid: true }, annotations: { [PROVISIONED_BY]: 'kubernetes.io/aws-ebs' }, finalizers: ['kubernetes.io/pv-controller'] });
      await s.settle();
      await s.deleteClaim('c');
    },
    expect: (st) => volumeIs(st, 'v', { phase: 'Released', annotations: { [PROVISIONED_BY]: 'kubernetes.io/aws-ebs', 'pv.kubernetes.io/migrated-to': 'ebs.csi.aws.com' }, events: [] }),
  },
];

/** StorageClass "" against unset, and the default class (KEP-3333, retroactive assignment). */
export const classScenarios: Scenario[] = [
  {
    name: 'class unset, no default class, no volume: FailedBinding, class stays unset',
    phase: 1,
    async run(s) {
      await s.pvc('c', '1Gi', { class: null });
    },
    expect: (st) => claimIs(st, 'c', { phase: 'Pending', storageClassName: null, events: ['FailedBinding'] }),
  },
  {
    name: 'class unset and no volume: the default class is assigned, then provisioning is asked',
    phase: 2,
    async run(s) {
      await s.pvc('c', '1Gi', { class: null });
    },
    expect: (st) => claimIs(st, 'c', { storageClassName: 'diff-default', annotations: signalled, events: ['ExternalProvisioning'] }),
  },
  {
    name: 'class unset: a class-less volume is bound before any default class is assigned',
    phase: 2,
    async run(s) {
      await s.pv('v', '1Gi');
      await s.settle();
      await s.pvc('c', '1Gi', { class: null });
    },
    expect: (st) => claimIs(st, 'c', { phase: 'Bound', volumeName: 'v', storageClassName: null }),
  },
  {
    name: 'class "" never gets the default class: FailedBinding',
    phase: 2,
    async run(s) {
      await s.pvc('c', '1Gi', { class: '' });
    },
    expect: (st) => claimIs(st, 'c', { phase: 'Pending', storageClassName: '', events: ['FailedBinding'] }),
  },
];

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

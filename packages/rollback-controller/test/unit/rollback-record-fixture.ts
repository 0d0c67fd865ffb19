import type { PersistentVolume, PersistentVolumeClaim, Pod } from '@topovol/shared';
import type { RollbackDecision } from '../../src/rollback/decide-rollback.js';
import { newRollback } from '../../src/rollback/intent/new-rollback.js';
import type { ProvisioningRollback } from '../../src/rollback/intent/provisioning-rollback.js';
import { claim, NOW, pod, pv } from './rollback-world-fixture.js';

// One rollback as the actuator tests drive it: pod p, unscheduled, whose claim c (labelled, bound
// to volume v, provisioned for node a and unused) is rolled back.
export const thePod: Pod = pod('p', ['c'], { nodeName: undefined });
export const decidedClaim = (): PersistentVolumeClaim => ({ ...claim('c', { volume: 'v' }), metadata: { ...claim('c').metadata, labels: { app: 'db' } }, spec: { volumeName: 'v', storageClassName: 'late', resources: { requests: { storage: '1Gi' } } } });
export const decidedVolume = (): PersistentVolume => pv('v', 'c', { usage: 'unused', forNode: 'a' });
export const rollbackDecision = (): Extract<RollbackDecision, { kind: 'rollback' }> => ({ kind: 'rollback', why: 'node a rejects the pod', pinned: [{ claim: decidedClaim(), volume: decidedVolume(), node: 'a' }], attempt: 1, evidenceTime: NOW });
export const rollbackRecord = (): ProvisioningRollback => newRollback(thePod, rollbackDecision().pinned, 'node a rejects the pod', 1, NOW);

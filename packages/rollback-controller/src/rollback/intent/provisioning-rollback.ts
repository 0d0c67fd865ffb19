import type { KubeObject, PersistentVolumeClaim, ResourceType } from '@topovol/shared';

/** config/crd/topovol.io_provisioningrollbacks.yaml: cluster-scoped, written only by the rollback loop. */
export const ProvisioningRollbacks: ResourceType = { group: 'topovol.io', version: 'v1alpha1', plural: 'provisioningrollbacks', kind: 'ProvisioningRollback', namespaced: false };

export interface ObjectRef {
  kind: string;
  name: string;
  uid: string;
}

/** One claim a rollback deletes and re-creates. */
export interface RollbackClaim {
  name: string;
  /** Only a claim with this uid is ever deleted. */
  uid: string;
  /** The claim as decided on: the delete is conditional on it. */
  resourceVersion: string;
  volume: string;
  reclaimPolicy?: string;
  /** What is re-created, in spec.pod.namespace under `name`: labels, annotations, owner references, spec. */
  template: ClaimTemplate;
}

export interface ClaimTemplate {
  metadata: { labels?: Record<string, string>; annotations?: Record<string, string>; ownerReferences?: NonNullable<PersistentVolumeClaim['metadata']>['ownerReferences'] };
  spec: NonNullable<PersistentVolumeClaim['spec']>;
}

/** `Abandoned`: deleted, and not re-created because its namespace went away (a later namespace of that name is someone else's). */
export type ClaimState = 'Deleting' | 'Deleted' | 'Kept' | 'Recreated' | 'Abandoned';
export type RollbackPhase = 'Deleting' | 'Recreating' | 'Completed' | 'Aborted';

export interface RollbackClaimStatus {
  name: string;
  state: ClaimState;
  uid?: string;
  message?: string;
}

export interface Condition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  lastTransitionTime: string;
  reason: string;
  message: string;
  observedGeneration?: number;
}

export interface ProvisioningRollbackSpec {
  /**
   * `namespaceUID`: the uid of the pod's namespace, read from the server when the rollback was
   * recorded (records written before it have none). A claim is re-created only in that namespace.
   */
  pod: { namespace: string; name: string; uid: string; namespaceUID?: string };
  workload: ObjectRef;
  node: string;
  reason: string;
  attempt: number;
  evidenceTime?: string;
  claims: RollbackClaim[];
}

export interface ProvisioningRollbackStatus {
  phase?: RollbackPhase;
  message?: string;
  claims?: RollbackClaimStatus[];
  completionTime?: string;
  conditions?: Condition[];
}

export interface ProvisioningRollback extends KubeObject {
  spec: ProvisioningRollbackSpec;
  status?: ProvisioningRollbackStatus;
}

/** Finished one way or the other: nothing left to do but keep the record. */
export const isFinished = (r: ProvisioningRollback): boolean => r.status?.phase === 'Completed' || r.status?.phase === 'Aborted';

/** The Started condition: the rollback's Events were sent (rollback-actuator.ts's announce). */
export const STARTED_CONDITION = 'Started';
export const isAnnounced = (r: ProvisioningRollback): boolean => r.status?.conditions?.some((c) => c.type === STARTED_CONDITION) ?? false;

export const claimState = (r: ProvisioningRollback, name: string): ClaimState | undefined => r.status?.claims?.find((c) => c.name === name)?.state;

/** When the record was created, in ms (0 when it has no valid creationTimestamp). */
export function createdMs(r: { metadata?: { creationTimestamp?: string } }): number {
  return Date.parse(r.metadata?.creationTimestamp ?? '') || 0;
}

/** The records newest first (the history's order: the cap, the backoff and the evidence read it so). */
export function newestFirst(rs: Iterable<ProvisioningRollback>): ProvisioningRollback[] {
  return [...rs].sort((a, b) => createdMs(b) - createdMs(a));
}

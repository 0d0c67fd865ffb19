import { ANN_BETA_STORAGE_PROVISIONER, ANN_BIND_COMPLETED, ANN_BOUND_BY_CONTROLLER, ANN_MIGRATED_TO, ANN_SELECTED_NODE, ANN_STORAGE_PROVISIONER } from '@topovol/shared';
import type { PersistentVolumeClaim } from '@topovol/shared';
import type { ClaimTemplate } from './intent/provisioning-rollback.js';
import { ANN_KEPT_BY } from './marks.js';

/** Binding and scheduling state that must not survive into the re-created claim. */
const DROPPED_ANNOTATIONS = [ANN_BIND_COMPLETED, ANN_BOUND_BY_CONTROLLER, ANN_SELECTED_NODE, ANN_STORAGE_PROVISIONER, ANN_BETA_STORAGE_PROVISIONER, ANN_MIGRATED_TO];

/**
 * The claim as it will be re-created, taken from the claim itself: labels, annotations (minus
 * binding and selected-node), owner references and spec minus volumeName. No name or namespace:
 * those come from the rollback's own record of the claim and the pod, never from the template.
 */
export function claimTemplate(c: PersistentVolumeClaim): ClaimTemplate {
  const annotations = { ...c.metadata?.annotations };
  for (const k of DROPPED_ANNOTATIONS) delete annotations[k];
  const spec = structuredClone(c.spec ?? {});
  delete spec.volumeName;
  return {
    metadata: {
      labels: c.metadata?.labels,
      annotations: Object.keys(annotations).length > 0 ? annotations : undefined,
      ownerReferences: c.metadata?.ownerReferences,
    },
    spec,
  };
}

/** kube-controller-manager's claim protection (pkg/controller/volume/pvcprotection): gone with the claim's last pod. */
const PVC_PROTECTION = 'kubernetes.io/pvc-protection';

/**
 * Why the claim's finalizers keep it from being rolled back, or undefined. A finalizer other than
 * PVC_PROTECTION and those admission gives every such claim (`admitted`: a driver's mutating webhook
 * adds its own, as TopoLVM's pvc hook adds topolvm.io/pvc; the re-create gets them back) is
 * someone else's hold on this claim (a backup or protection operator, the snapshot controller while
 * the claim is a snapshot's source): deleted, the claim would stay terminating, its pod
 * unschedulable, until that one lets it go; re-created, it would not carry the finalizer (a new
 * claim is not the one its owner tracks, and a finalizer copied to it could hold it for good). The
 * rollback leaves such a claim alone, as it does one it cannot re-create.
 */
export function heldByOthers(c: PersistentVolumeClaim, admitted: readonly string[] = []): string | undefined {
  const others = (c.metadata?.finalizers ?? []).filter((f) => f !== PVC_PROTECTION && !admitted.includes(f));
  return others.length > 0 ? `claim ${c.metadata?.name} carries finalizer(s) ${others.join(', ')}, which a re-created claim would not have` : undefined;
}

/**
 * The claim to create: the template under its recorded name, in the pod's namespace. An earlier
 * rollback's fence (ANN_KEPT_BY) stays in the template, where it makes the fenced claim differ from
 * the one decided on, but is not carried into a new claim.
 */
export function claimFromTemplate(t: ClaimTemplate, namespace: string, name: string): PersistentVolumeClaim {
  const { [ANN_KEPT_BY]: _fence, ...rest } = t.metadata.annotations ?? {};
  const annotations = Object.keys(rest).length > 0 ? rest : undefined;
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name, namespace, labels: t.metadata.labels, annotations, ownerReferences: t.metadata.ownerReferences },
    spec: structuredClone(t.spec),
  };
}

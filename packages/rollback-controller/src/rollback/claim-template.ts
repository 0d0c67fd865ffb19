import type { PersistentVolumeClaim } from '@topovol/shared';
import { ANN_BETA_STORAGE_PROVISIONER, ANN_BIND_COMPLETED, ANN_BOUND_BY_CONTROLLER, ANN_SELECTED_NODE, ANN_STORAGE_PROVISIONER } from './marks.js';

/** A claim to recreate after its deletion, and the uid of the one it replaces. */
export interface ClaimTemplate {
  replacesUid: string;
  claim: PersistentVolumeClaim;
}

/** Binding and scheduling state that must not survive into the recreated claim. */
const DROPPED_ANNOTATIONS = [ANN_BIND_COMPLETED, ANN_BOUND_BY_CONTROLLER, ANN_SELECTED_NODE, ANN_STORAGE_PROVISIONER, ANN_BETA_STORAGE_PROVISIONER];

/**
 * The claim as it will be recreated: same name, labels, annotations (minus binding and
 * selected-node), owner references and spec minus volumeName; no status. The spec is immutable,
 * so recreation is the only way back to Pending.
 */
export function claimTemplate(c: PersistentVolumeClaim): ClaimTemplate {
  const annotations = { ...c.metadata?.annotations };
  for (const k of DROPPED_ANNOTATIONS) delete annotations[k];
  const spec = structuredClone(c.spec ?? {});
  delete spec.volumeName;
  return {
    replacesUid: c.metadata?.uid ?? '',
    claim: {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: {
        name: c.metadata?.name,
        namespace: c.metadata?.namespace,
        labels: c.metadata?.labels,
        annotations: Object.keys(annotations).length > 0 ? annotations : undefined,
        ownerReferences: c.metadata?.ownerReferences,
      },
      spec,
    },
  };
}

export function encodeTemplates(t: ClaimTemplate[]): string {
  return JSON.stringify(t);
}

/** Tolerates a damaged annotation (someone edited it): nothing to recreate rather than a crash. */
export function decodeTemplates(s: string | undefined): ClaimTemplate[] {
  if (!s) return [];
  try {
    const v = JSON.parse(s) as unknown;
    return Array.isArray(v) ? (v as ClaimTemplate[]).filter((t) => typeof t?.replacesUid === 'string' && typeof t.claim?.metadata?.name === 'string') : [];
  } catch {
    return [];
  }
}

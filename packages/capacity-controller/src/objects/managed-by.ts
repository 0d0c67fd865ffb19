import { createHash } from 'node:crypto';

/** A label value's limit (validation.DNS1035LabelMaxLength is the same 63). */
export const LABEL_VALUE_MAX = 63;

/**
 * The csi.storage.k8s.io/managed-by value of a per-node instance: the base and the node, so that
 * the instances on different nodes never list, update or delete each other's objects (as
 * external-provisioner's --node-deployment does). Too long for a label value, the node part is a
 * hash, so the value stays unique and valid.
 */
export function perNodeManagedBy(base: string, nodeName: string): string {
  const plain = `${base}-${nodeName}`;
  if (plain.length <= LABEL_VALUE_MAX) return plain;
  const hash = createHash('sha256').update(nodeName).digest('hex').slice(0, 16);
  return `${base.slice(0, LABEL_VALUE_MAX - hash.length - 1).replace(/[-_.]+$/, '')}-${hash}`;
}

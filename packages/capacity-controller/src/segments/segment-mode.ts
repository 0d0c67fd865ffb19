import { LABEL_REGION, LABEL_ZONE } from '@topovol/shared';

/**
 * How topology segments are found:
 * - `csinode`: each CSINode's topology keys for the driver, values from the Node's labels (as
 *   external-provisioner's pkg/capacity/topology does);
 * - `prefix`: all Node labels under one prefix (KEP-1472 "Storage Capacity Tracking", central
 *   provisioning);
 * - `domains`: an ordered list of domain label keys, outermost first (Ceph-CSI's `--domain-labels`).
 * In prefix and domains modes a node counts only where the driver is registered (its CSINode lists
 * the driver), as in csinode mode, unless `anyNode` (a driver without a node plugin).
 */
export type SegmentMode =
  | { kind: 'csinode' }
  | { kind: 'prefix'; prefix: string; anyNode?: boolean }
  | { kind: 'domains'; labels: readonly string[]; anyNode?: boolean };

/** Parses the flag values; returns a reason when they do not make sense together. */
export function parseSegmentMode(mode: string, prefix: string, domainLabels: string, anyNode = false): SegmentMode | string {
  switch (mode) {
    case 'csinode':
      return { kind: 'csinode' };
    case 'prefix':
      if (!prefix) return '--capacity-topology=prefix needs --capacity-topology-prefix';
      return { kind: 'prefix', prefix, ...(anyNode ? { anyNode } : {}) };
    case 'domains': {
      const labels = domainLabels.split(/[;,]/).map((s) => s.trim()).filter(Boolean);
      if (labels.length === 0) return `--capacity-topology=domains needs --domain-labels (e.g. ${LABEL_REGION};${LABEL_ZONE})`;
      if (new Set(labels).size !== labels.length) return `--domain-labels lists a label twice: ${domainLabels}`;
      return { kind: 'domains', labels, ...(anyNode ? { anyNode } : {}) };
    }
    default:
      return `unknown --capacity-topology "${mode}" (csinode, prefix or domains)`;
  }
}

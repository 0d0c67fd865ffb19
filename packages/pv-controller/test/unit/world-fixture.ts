import type { Node, PersistentVolume, PersistentVolumeClaim, Pod, StorageClass } from '@topovol/shared';
import type { BinderWorld } from '../../src/binder/binder-world.js';
import { claimNamesOfPod, volumeNodeAffinityMatches } from '@topovol/shared';
import { accessModesKey } from '../../src/binder/access-modes.js';
import { capacityBytes } from '../../src/binder/check-volume-satisfies-claim.js';
import type { SelectedNodeIssue } from '../../src/binder/selected-node-checks.js';
import { claimClass, pickDefaultClass, volumeClass } from '../../src/binder/claim-helpers.js';
import { claimBoundToVolume } from '../../src/binder/binder-indexes.js';

/** An in-memory BinderWorld for decision tests (decisions are pure: objects in, actions out). */
export interface WorldInput {
  volumes?: PersistentVolume[];
  claims?: PersistentVolumeClaim[];
  classes?: StorageClass[];
  nodes?: Node[];
  pods?: Pod[];
  /** Fixed clock (ms); default 1,000,000. */
  now?: number;
  graceMs?: number;
  /** The selected-node problem noted earlier for every claim, and since when; default: none noted. */
  noted?: { issue: SelectedNodeIssue; node: string; since: number };
  /** lastProvisioningActivity for every claim; default: none. */
  provisioningActivity?: number;
  /** selectedNodeRemovals for every claim; default: none seen. */
  selectedNodeRemovals?: { count: number; last: number };
}

/**
 * Free volumes as the binder's VolumeIndex yields them: sorted by size then name, and reachable
 * from the node when one is given (the index's job in production; done by brute force here).
 */
function freeVolumes(o: WorldInput, cls: string, group: string, minBytes: bigint, nodeName?: string): PersistentVolume[] {
  const node = nodeName === undefined ? undefined : o.nodes?.find((n) => n.metadata?.name === nodeName);
  return (o.volumes ?? [])
    .filter((v) => volumeClass(v) === cls && accessModesKey(v.spec?.accessModes) === group && !v.spec?.claimRef && (capacityBytes(v) ?? -1n) >= minBytes)
    .filter((v) => nodeName === undefined || (node !== undefined && volumeNodeAffinityMatches(v.spec?.nodeAffinity, node)))
    .sort((a, b) => (capacityBytes(a)! !== capacityBytes(b)! ? (capacityBytes(a)! < capacityBytes(b)! ? -1 : 1) : a.metadata!.name! < b.metadata!.name! ? -1 : 1));
}

export function world(o: WorldInput = {}): BinderWorld {
  const now = o.now ?? 1_000_000;
  return {
    volume: (n) => o.volumes?.find((v) => v.metadata?.name === n),
    preBoundVolumes: (ns, n) => (o.volumes ?? []).filter((v) => v.spec?.claimRef?.name === n && (v.spec.claimRef.namespace ?? '') === ns),
    accessModeGroups: (cls) => [...new Set((o.volumes ?? []).filter((v) => volumeClass(v) === cls).map((v) => accessModesKey(v.spec?.accessModes)))],
    freeVolumes: (cls, group, minBytes, nodeName) => freeVolumes(o, cls, group, minBytes, nodeName),
    now: () => now,
    staleSelectedNodeGraceMs: o.graceMs ?? 60_000,
    selectedNodeIssue: () => o.noted,
    lastProvisioningActivity: () => o.provisioningActivity,
    selectedNodeRemovals: () => o.selectedNodeRemovals,
    claim: (ns, n) => o.claims?.find((c) => c.metadata?.namespace === ns && c.metadata?.name === n),
    storageClass: (n) => o.classes?.find((c) => c.metadata?.name === n),
    defaultStorageClass: () => pickDefaultClass(o.classes ?? []),
    node: (n) => o.nodes?.find((x) => x.metadata?.name === n),
    podsUsingClaim: (ns, n) => (o.pods ?? []).filter((p) => p.metadata?.namespace === ns && claimNamesOfPod(p).includes(n)),
    claimsBoundTo: (n) => (o.claims ?? []).filter((c) => claimBoundToVolume(c).includes(n)),
  };
}

export function vol(name: string, size: string, extra: Partial<NonNullable<PersistentVolume['spec']>> & { phase?: string; labels?: Record<string, string>; annotations?: Record<string, string>; deleting?: boolean } = {}): PersistentVolume {
  const { phase, labels, annotations, deleting, ...spec } = extra;
  return {
    metadata: { name, labels, annotations, deletionTimestamp: deleting ? '2026-01-01T00:00:00Z' : undefined, resourceVersion: '1' },
    spec: { capacity: { storage: size }, accessModes: ['ReadWriteOnce'], storageClassName: '', ...spec },
    status: { phase: phase ?? 'Available' },
  };
}

export function claim(name: string, size: string, extra: Partial<NonNullable<PersistentVolumeClaim['spec']>> & { annotations?: Record<string, string>; phase?: string; uid?: string } = {}): PersistentVolumeClaim {
  const { annotations, phase, uid, ...spec } = extra;
  return {
    kind: 'PersistentVolumeClaim',
    metadata: { name, namespace: 'ns', uid: uid ?? `uid-${name}`, annotations, resourceVersion: '1' },
    spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: size } }, storageClassName: '', ...spec },
    status: { phase: phase ?? 'Pending' },
  };
}

export const sc = (name: string, extra: Partial<StorageClass> = {}): StorageClass => ({ metadata: { name }, provisioner: 'example.com/csi', ...extra });
export const node = (name: string, labels: Record<string, string> = {}): Node => ({ metadata: { name, labels } });
export const pod = (name: string, claimName: string, nodeName?: string, phase = 'Pending'): Pod => ({
  metadata: { name, namespace: 'ns' },
  spec: { nodeName, containers: [], volumes: [{ name: 'v', persistentVolumeClaim: { claimName } }] },
  status: { phase },
});
export const classOf = claimClass;

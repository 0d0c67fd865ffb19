import type { Node, PersistentVolume, PersistentVolumeClaim, Pod, StorageClass } from '@topovol/shared';
import type { BinderWorld } from '../../src/binder/binder-world.js';
import { claimClass, pickDefaultClass, volumeClass } from '../../src/binder/claim-helpers.js';

/** An in-memory BinderWorld for decision tests (decisions are pure: objects in, actions out). */
export function world(o: { volumes?: PersistentVolume[]; claims?: PersistentVolumeClaim[]; classes?: StorageClass[]; nodes?: Node[]; pods?: Pod[] } = {}): BinderWorld {
  return {
    volume: (n) => o.volumes?.find((v) => v.metadata?.name === n),
    candidateVolumes: (cls) => (o.volumes ?? []).filter((v) => volumeClass(v) === cls),
    claim: (ns, n) => o.claims?.find((c) => c.metadata?.namespace === ns && c.metadata?.name === n),
    storageClass: (n) => o.classes?.find((c) => c.metadata?.name === n),
    defaultStorageClass: () => pickDefaultClass(o.classes ?? []),
    node: (n) => o.nodes?.find((x) => x.metadata?.name === n),
    podsUsingClaim: (ns, n) => (o.pods ?? []).filter((p) => p.metadata?.namespace === ns && p.spec?.volumes?.some((v) => v.persistentVolumeClaim?.claimName === n)),
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
export const pod = (name: string, claimName: string, nodeName?: string): Pod => ({
  metadata: { name, namespace: 'ns' },
  spec: { nodeName, containers: [], volumes: [{ name: 'v', persistentVolumeClaim: { claimName } }] },
  status: { phase: 'Pending' },
});
export const classOf = claimClass;

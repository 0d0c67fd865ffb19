import { csiVolumeInUseName } from '@topovol/shared';
import type { PersistentVolume, Pod } from '@topovol/shared';
import type { RollbackWorld } from './rollback-world.js';

/** A pod that may have started: Running or later, or any container that started. */
export function podMayHaveRun(p: Pod): boolean {
  const phase = p.status?.phase;
  if (phase === 'Running' || phase === 'Succeeded' || phase === 'Failed') return true;
  const statuses = [...(p.status?.containerStatuses ?? []), ...(p.status?.initContainerStatuses ?? [])];
  return statuses.some((s) => s.started === true || s.state?.running !== undefined || s.state?.terminated !== undefined || s.lastState?.terminated !== undefined);
}

/**
 * Any evidence that a pod may have written to the volume, i.e. that it may hold data and must never
 * be rolled back: a pod using its claim ran; a node reports it in volumesInUse; a VolumeAttachment
 * exists for it. Undefined when none.
 */
export function usedEvidence(v: PersistentVolume, world: RollbackWorld): string | undefined {
  const name = v.metadata?.name ?? '';
  const ref = v.spec?.claimRef;
  if (ref?.name && ref.namespace) {
    const claim = world.claim(ref.namespace, ref.name);
    // Pods name claims, not uids: only the claim this volume is bound to counts.
    if (claim && (!ref.uid || claim.metadata?.uid === ref.uid)) {
      const ran = world.podsUsingClaim(ref.namespace, ref.name).find(podMayHaveRun);
      if (ran) return `pod ${ran.metadata?.namespace}/${ran.metadata?.name} using claim ${ref.name} has run (phase ${ran.status?.phase ?? 'unknown'})`;
    }
  }
  const nodes = world.nodesUsingVolume(v);
  if (nodes.length > 0) return `node ${nodes[0]} reports it in status.volumesInUse`;
  const va = world.attachmentsOf(name)[0];
  if (va) return `VolumeAttachment ${va.metadata?.name} exists for it`;
  return undefined;
}

/** Whether a node's volumesInUse entry names this volume (CSI: `kubernetes.io/csi/<driver>^<handle>`; in-tree: ends in the PV name). */
export function volumesInUseMentions(entry: string, v: PersistentVolume): boolean {
  const handle = v.spec?.csi?.volumeHandle;
  if (handle && v.spec?.csi?.driver && entry === csiVolumeInUseName(v.spec.csi.driver, handle)) return true;
  const name = v.metadata?.name ?? '';
  return name !== '' && (entry.endsWith(`/${name}`) || entry.endsWith(`^${name}`));
}

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

/** Why a pod using a claim may have used its volume: it ran, or it was scheduled (a kubelet may have mounted it). */
export function podUseOfClaim(p: Pod, claimName: string): string | undefined {
  const who = `pod ${p.metadata?.namespace}/${p.metadata?.name} using claim ${claimName}`;
  if (podMayHaveRun(p)) return `${who} has run (phase ${p.status?.phase ?? 'unknown'})`;
  // spec.nodeName is set once and never cleared: a pod without it was never scheduled.
  if (p.spec?.nodeName) return `${who} was scheduled to node ${p.spec.nodeName}`;
  return undefined;
}

/**
 * Any evidence that a pod may have written to the volume, i.e. that it may hold data and must never
 * be rolled back: a pod using its claim ran or was scheduled (a kubelet reports nothing else for a
 * CSI driver without attach: no VolumeAttachment, and volumesInUse lists only attachable volumes),
 * also one seen deleted; the claim was pre-populated (a snapshot or another claim as its data
 * source); a node reports it in volumesInUse; a VolumeAttachment exists for it. Undefined when none.
 */
export function usedEvidence(v: PersistentVolume, world: RollbackWorld): string | undefined {
  const name = v.metadata?.name ?? '';
  const ref = v.spec?.claimRef;
  if (ref?.name && ref.namespace) {
    const claim = world.claim(ref.namespace, ref.name);
    // Pods name claims, not uids: only the claim this volume is bound to counts.
    if (claim && (!ref.uid || claim.metadata?.uid === ref.uid)) {
      // One that ran says more than one that was only scheduled.
      const pods = world.podsUsingClaim(ref.namespace, ref.name);
      const user = pods.find(podMayHaveRun) ?? pods.find((p) => p.spec?.nodeName);
      if (user) return podUseOfClaim(user, ref.name);
      const ended = world.endedUse(ref.namespace, ref.name);
      if (ended) return ended;
      // A restored or cloned volume holds data from the start, which a new provisioning may not
      // reproduce (the snapshot deleted since, the source claim written since).
      const source = claim.spec?.dataSourceRef ?? claim.spec?.dataSource;
      if (source) return `claim ${ref.name} was pre-populated from ${source.kind} ${source.name}`;
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

/**
 * For a volume marked unused: why this process cannot vouch for the mark, or undefined while it can.
 * The mark rests on having watched the claim's pods from its provisioning on without a gap: a pod
 * that was scheduled, mounted the volume and was deleted while nobody watched (this process was
 * not running yet, or its pod watch was relisted after 410 Gone) leaves no trace a later look can
 * find for a driver without attach.
 */
function unwatchedSinceProvisioned(v: PersistentVolume, world: RollbackWorld): string | undefined {
  const uid = v.spec?.claimRef?.uid;
  if (uid && world.provisioningObserved(uid)) return undefined;
  return 'its claim\'s pods were not watched without a gap since it was provisioned (a restart, or a relist of pods): a pod may have used it unseen';
}

/** Why a volume marked unused may hold data after all: any evidence of use, or a mark this process cannot vouch for. */
export function unusedMarkDoubt(v: PersistentVolume, world: RollbackWorld): string | undefined {
  return usedEvidence(v, world) ?? unwatchedSinceProvisioned(v, world);
}

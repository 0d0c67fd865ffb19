import { ANN_DYNAMICALLY_PROVISIONED, ANN_MIGRATED_TO, isPodTerminated, NO_PROVISIONER } from '@topovol/shared';
import type { PersistentVolume } from '@topovol/shared';
import { event } from './actions.js';
import type { BinderAction } from './actions.js';
import { Reasons } from './binder-reasons.js';
import type { BinderWorld } from './binder-world.js';

/** Failed with a Warning, only when the phase changes (upstream's updateVolumePhaseWithEvent). */
function failed(volume: PersistentVolume, reason: string, message: string): BinderAction[] {
  if (volume.status?.phase === 'Failed') return [];
  return [{ kind: 'volumePhase', volume, phase: 'Failed', message }, event(volume, 'Warning', reason, message)];
}

/**
 * Who deletes a released Delete volume (upstream's findDeletablePlugin): nobody in this process.
 * A volume provisioned by an external provisioner, migrated to CSI, or of a CSI source is left to
 * the external deleter (external-provisioner; for static CSI volumes with KEP-2644's finalizer).
 * So is one provisioned by a `kubernetes.io/…` name other than no-provisioner: provisionClaim hands
 * such classes to an external provisioner of that name (claim-provisioning.ts), and that
 * provisioner deletes only volumes it finds Released; upstream, which looks such names up as
 * in-tree plugins on both sides, writes Failed here, which with Topovol's provisioning side would
 * leave the volume and its storage for ever. Other volume sources would need an in-tree plugin,
 * which Topovol does not carry, so the volume goes Failed with upstream's message.
 */
export function deleterProblem(volume: PersistentVolume): string | undefined {
  const name = volume.metadata?.name ?? '';
  const provisionedBy = volume.metadata?.annotations?.[ANN_DYNAMICALLY_PROVISIONED];
  if (provisionedBy) return provisionedBy === NO_PROVISIONER ? `no volume plugin matched name: ${provisionedBy}` : undefined;
  if (volume.metadata?.annotations?.[ANN_MIGRATED_TO] !== undefined || volume.spec?.csi) return undefined;
  // Upstream's message for each source, from the plugins its binder loads (hostpath and nfs; fc
  // and iscsi are probed but neither provision, delete nor recycle: ProbeProvisionableRecyclableVolumePlugins
  // in cmd/kube-controller-manager/app/plugins.go).
  if (volume.spec?.hostPath) return hostPathDeleterProblem(volume);
  const plugin = volume.spec?.nfs ? 'no deletable volume plugin matched' : 'no volume plugin matched';
  return `error getting deleter volume plugin for volume "${name}": ${plugin}`;
}

/**
 * Upstream's hostpath deleter for a hostPath volume no provisioner is named on (pkg/volume/hostpath/host_path.go):
 * a path outside /tmp refused; one inside removed from the controller's own node's filesystem,
 * which Topovol does not do (docs/divergences.md, "In-tree volume plugins"). A volume provisioned
 * as `kubernetes.io/host-path` is left Released, as every `kubernetes.io/…` name is handed to an
 * external provisioner (above), where upstream's binder finds its hostpath plugin by that name.
 */
function hostPathDeleterProblem(volume: PersistentVolume): string {
  const name = volume.metadata?.name ?? '';
  const path = volume.spec?.hostPath?.path ?? '';
  return /\/tmp\/.+/.test(path)
    ? `hostPath volume "${name}" (${path}) not deleted: Topovol deletes no data itself (kube-controller-manager would remove the directory on its own node)`
    : `host_path deleter only supports /tmp/.+ but received provided ${path}`;
}

/**
 * The reclaim policy of a released volume (upstream's reclaimVolume). Topovol never deletes or
 * recycles data itself: Retain keeps the volume Released; Delete is left to the external deleter or
 * ends in Failed (see deleterProblem); Recycle, deprecated upstream and needing a recycler pod,
 * ends in Failed. Re-run on every sync, Failed included, as upstream; the writes only happen on a
 * phase change, so a Failed volume stays as it is.
 */
export function reclaim(volume: PersistentVolume, world: BinderWorld, claimGone: boolean): BinderAction[] {
  if (volume.metadata?.annotations?.[ANN_MIGRATED_TO]) return [];
  switch (volume.spec?.persistentVolumeReclaimPolicy ?? 'Retain') {
    case 'Retain':
      return [];
    case 'Delete': {
      const problem = deleterProblem(volume);
      return problem ? failed(volume, Reasons.VolumeFailedDelete, problem) : [];
    }
    case 'Recycle': {
      // Upstream's recycleVolumeOperation first refuses while a pod still names the (gone) claim.
      const ref = volume.spec?.claimRef;
      const users = claimGone ? world.podsUsingClaim(ref?.namespace ?? '', ref?.name ?? '').filter((p) => !isPodTerminated(p)) : [];
      if (users.length > 0) {
        const names = users.map((p) => `${p.metadata?.namespace}/${p.metadata?.name}`).sort();
        return [event(volume, 'Normal', Reasons.VolumeFailedRecycle, `Volume is used by pods: ${names.join(',')}`)];
      }
      return failed(volume, Reasons.VolumeFailedRecycle, 'No recycler plugin found for the volume!');
    }
    default:
      return failed(volume, Reasons.VolumeUnknownReclaimPolicy, 'Volume has unrecognized PersistentVolumeReclaimPolicy');
  }
}

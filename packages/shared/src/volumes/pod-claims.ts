import { isDnsSubdomain } from '../selectors/label-syntax.js';
import type { Pod } from '../types/wire.js';

/**
 * The claims a pod uses, by name: `persistentVolumeClaim` volumes, and generic ephemeral volumes,
 * whose claim is always named `<pod>-<volume>` (KEP-1698; upstream's ephemeral.VolumeClaimName, and
 * the pod → claim index of pkg/controller/volume/common, which covers both). A name no claim can
 * have (not a DNS subdomain: kube-apiserver checks only that a pod's claimName is not empty) names
 * nothing: left out, so that what a loop remembers of a pod's claims is bounded by what claims can be.
 */
export function claimNamesOfPod(p: Pod): string[] {
  const names: string[] = [];
  for (const v of p.spec?.volumes ?? []) {
    const name = v.persistentVolumeClaim?.claimName ? v.persistentVolumeClaim.claimName : v.ephemeral ? `${p.metadata?.name}-${v.name}` : undefined;
    // Each once: kube-apiserver admits two volumes naming one claim (or an ephemeral volume whose
    // <pod>-<volume> is also a claimName), and the pod still uses one claim.
    if (name !== undefined && isDnsSubdomain(name) && !names.includes(name)) names.push(name);
  }
  return names;
}

/** claimNamesOfPod as `namespace/name` keys: the shared pod → claim index of every loop. */
export function claimKeysOfPod(p: Pod): string[] {
  return claimNamesOfPod(p).map((n) => `${p.metadata?.namespace}/${n}`);
}

/** Name of the pod informer's index by claimKeysOfPod (one definition, shared by every loop). */
export const POD_CLAIM_INDEX = 'claim';

/**
 * Whether a pod will never run (again): Succeeded or Failed, or deleted with no container still
 * running (upstream's pkg/volume/util IsPodTerminated). Such pods no longer hold their claims.
 */
export function isPodTerminated(p: Pod): boolean {
  const phase = p.status?.phase;
  if (phase === 'Succeeded' || phase === 'Failed') return true;
  if (!p.metadata?.deletionTimestamp) return false;
  // A container counts as running unless its state says terminated or waiting (upstream's notRunning).
  const statuses = [...(p.status?.initContainerStatuses ?? []), ...(p.status?.containerStatuses ?? []), ...(p.status?.ephemeralContainerStatuses ?? [])];
  return statuses.every((s) => s.state?.terminated !== undefined || s.state?.waiting !== undefined);
}

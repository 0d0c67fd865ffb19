import { ANN_BOUND_BY_CONTROLLER, ANN_DYNAMICALLY_PROVISIONED, isDnsLabel, isDnsSubdomain, nodeSelectorNeverMatches } from '@topovol/shared';
import type { PersistentVolume, PersistentVolumeClaim } from '@topovol/shared';
import { event } from './actions.js';
import type { BinderAction } from './actions.js';
import { Reasons } from './binder-reasons.js';
import type { BinderWorld } from './binder-world.js';
import { capacityBytes } from './check-volume-satisfies-claim.js';
import { claimVolumeMode, volumeVolumeMode } from './claim-helpers.js';
import { volumeMigrationChange } from './csi-migration.js';
import { bindingNeverReached, takeBackUnfinished } from './orphaned-bind.js';
import { reclaim } from './reclaim-volume.js';

/**
 * Why a claimRef names no claim that can exist (a namespace is a DNS label, a claim's name a DNS
 * subdomain: the API server refuses any other), or undefined. Values are cut: an administrator
 * wrote them, but a volume's Event should stay small.
 */
export function claimRefProblem(ref: { namespace?: string; name?: string }): string | undefined {
  const missing = [!ref.namespace && 'namespace', !ref.name && 'name'].filter((x): x is string => !!x);
  if (missing.length > 0) return `no ${missing.join(' or ')}`;
  const cut = (x: string): string => JSON.stringify(x.length > 80 ? `${x.slice(0, 80)}…` : x);
  if (!isDnsLabel(ref.namespace!)) return `namespace ${cut(ref.namespace!)}, which no namespace can have (a DNS label)`;
  if (!isDnsSubdomain(ref.name!)) return `name ${cut(ref.name!)}, which no claim can have (a DNS subdomain)`;
  return undefined;
}

/**
 * Why a volume stays Available, reserved by name, where upstream would release it (takeBackUnfinished):
 * said once, after the take-back is written, since nothing else would tell an operator why it
 * never goes to another claim or to its reclaim policy.
 */
function takenBackEvent(volume: PersistentVolume, why: string): BinderAction {
  const ref = volume.spec?.claimRef;
  const who = `${ref?.namespace ?? ''}/${ref?.name ?? ''}`;
  return event(volume, 'Normal', Reasons.BindingTakenBack, `the binding to claim ${who} (uid ${ref?.uid ?? ''}) never finished and ${why}: no pod used this volume, so it is Available again instead of Released, reserved for a claim named ${who}; remove spec.claimRef to offer it to any claim`);
}

const phaseIs = (v: PersistentVolume, phase: string): BinderAction[] => (v.status?.phase === phase ? [] : [{ kind: 'volumePhase', volume: v, phase: phase as 'Available' }]);

/**
 * The binder's decision for one volume, mirroring upstream's syncVolume
 * (pkg/controller/volume/persistentvolume/pv_controller.go). A volume being deleted is synced like
 * any other, as upstream does: one whose claim is gone must still be released, or a Bound,
 * Terminating volume would keep its protection finalizer forever and its backend volume would leak.
 */
export function decideVolume(volume: PersistentVolume, world: BinderWorld): BinderAction[] {
  const migration = volumeMigrationChange(volume);
  if (migration) return [{ kind: 'updateVolumeMeta', volume, ...migration }];
  const ref = volume.spec?.claimRef;
  // Topovol: no claimRef, but a claim Bound to it names it (its claimRef removed, or a re-binding
  // stopped after its phase write): a phase Bound is kept, so that neither this binder's free pool
  // nor kube-scheduler's pre-binding (which takes only Available volumes) hands it to another claim;
  // the claim's own sync writes the claimRef again. Upstream makes it Available (docs/divergences.md).
  if (!ref && volume.status?.phase === 'Bound' && world.claimsBoundTo(volume.metadata?.name ?? '').length > 0) return [];
  // Unused, or pre-bound by name only (reserved for a claim whose sync will bind it).
  if (!ref || !ref.uid) return [...phaseIs(volume, 'Available'), ...unusable(volume), ...unreservable(volume)];
  // Bound to a claim no one can look up: the API server accepts a claimRef with a uid and no name or
  // namespace, or with ones no claim can have. Upstream's server read fails on an empty name or one
  // that is no path segment (`/`, `%`: client-go refuses it before any request), so never released,
  // but reads an empty namespace, or a name no claim can have, as a claim not found and releases the
  // volume to its reclaim policy. Never here: nothing says its claim is gone.
  const problem = claimRefProblem(ref);
  if (problem) {
    return [event(volume, 'Warning', Reasons.InvalidClaimRef, `spec.claimRef has uid ${ref.uid} but ${problem}: no claim can be looked up, so the volume is not released; set the claim's namespace and name, or remove spec.claimRef`)];
  }

  const claim = world.claim(ref.namespace ?? '', ref.name ?? '');
  // Topovol: a binding that never reached its claim, whose claim is gone or was created again: the
  // volume is made Available again, reserved by name, not Released (orphaned-bind.ts; upstream
  // releases it).
  const takeBack = takeBackUnfinished(volume, claim);
  if (takeBack) return [takeBack, takenBackEvent(volume, takeBack.takeBack)];
  // Its claim gone, re-created under the same name, or bound elsewhere with a volume provisioned for
  // it: released (the glue confirms it on the server before Released).
  if (!claim || claimReleases(volume, claim)) return release(volume, world, !claim);

  const claimVolume = claim.spec?.volumeName ?? '';
  if (claimVolume === '') {
    // The claim side is in progress (its sync binds it); upstream only reports a volumeMode that
    // will keep it from ever happening.
    if (claimVolumeMode(claim) === volumeVolumeMode(volume)) return [];
    return [
      event(volume, 'Warning', Reasons.VolumeMismatch, `Cannot bind PersistentVolume to requested PersistentVolumeClaim "${claim.metadata?.name}" due to incompatible volumeMode.`),
      event(claim, 'Warning', Reasons.VolumeMismatch, `Cannot bind PersistentVolume "${volume.metadata?.name}" to requested PersistentVolumeClaim due to incompatible volumeMode.`),
    ];
  }
  if (claimVolume === volume.metadata?.name) {
    // Topovol: a binding that never reached a claim being deleted is the claim's sync's to complete
    // or hold back, after the server's pods confirm a placed pod (decide-pre-bound-claim.ts); its
    // phase Bound written here would end the take-back signal (bindingUnfinished).
    if (claim.metadata?.deletionTimestamp && bindingNeverReached(volume, claim)) return [];
    return phaseIs(volume, 'Bound');
  }

  // The claim is bound to another volume (one provisioned for it with Delete was released above):
  // undo the binding; a claimRef the controller made goes, a user's pre-binding keeps the claim's
  // name and loses only the uid.
  return [{ kind: 'unbindVolume', volume, keepClaimRef: volume.metadata?.annotations?.[ANN_BOUND_BY_CONTROLLER] === undefined }];
}

/**
 * Whether decideVolume releases the volume to its reclaim policy (upstream's syncVolume calling
 * reclaimVolume): its claim gone or re-created under its name, or bound to another volume while
 * this one was provisioned for it with Delete. Also what starts the timing of a deletion
 * (operation-metrics.ts).
 */
export function releaseOf(volume: PersistentVolume, world: BinderWorld): boolean {
  if (volumeMigrationChange(volume)) return false;
  const ref = volume.spec?.claimRef;
  if (!ref?.uid || claimRefProblem(ref)) return false;
  const claim = world.claim(ref.namespace!, ref.name!);
  if (takeBackUnfinished(volume, claim)) return false;
  return !claim || claimReleases(volume, claim);
}

/** The claim the volume's claimRef names, found: re-created under its name, or bound elsewhere with this volume provisioned for it with Delete. */
function claimReleases(volume: PersistentVolume, claim: PersistentVolumeClaim): boolean {
  if (claim.metadata?.uid !== volume.spec?.claimRef?.uid) return true;
  const bound = claim.spec?.volumeName ?? '';
  return bound !== '' && bound !== volume.metadata?.name && releasedWhenClaimBoundElsewhere(volume);
}

/**
 * Whether a volume whose claim (same uid) is bound to another volume is Released rather than
 * unbound: only one provisioned for it with Delete (upstream's syncVolume, the
 * `claim.Spec.VolumeName != volume.Name` branch). The server check before Released applies it too.
 */
export function releasedWhenClaimBoundElsewhere(volume: PersistentVolume): boolean {
  return volume.metadata?.annotations?.[ANN_DYNAMICALLY_PROVISIONED] !== undefined && volume.spec?.persistentVolumeReclaimPolicy === 'Delete';
}

/**
 * Topovol: a Warning when a volume first becomes Available but no claim can ever bind it (node
 * affinity that matches no node, or no positive capacity), where upstream leaves it Available in
 * silence. Only on that transition, so a resync does not repeat it.
 */
function unusable(volume: PersistentVolume): BinderAction[] {
  if (volume.status?.phase === 'Available') return [];
  const affinity = nodeSelectorNeverMatches(volume.spec?.nodeAffinity?.required);
  const why = affinity ? `spec.nodeAffinity matches no node: ${affinity}` : capacityBytes(volume) === undefined ? `spec.capacity.storage "${String(volume.spec?.capacity?.storage ?? '')}" is not a positive size` : undefined;
  return why ? [event(volume, 'Warning', Reasons.UnusableVolume, `no claim can bind this volume: ${why}`)] : [];
}

/**
 * A pre-binding by name (a claimRef without uid) that no claim can ever have: the volume stays
 * Available and goes to no claim, as upstream, in silence there. Said once, as it becomes Available.
 */
function unreservable(volume: PersistentVolume): BinderAction[] {
  const ref = volume.spec?.claimRef;
  if (!ref || volume.status?.phase === 'Available') return [];
  const problem = claimRefProblem(ref);
  return problem ? [event(volume, 'Warning', Reasons.InvalidClaimRef, `spec.claimRef reserves this volume for a claim but has ${problem}: no claim can ever take it; set the claim's namespace and name, or remove spec.claimRef`)] : [];
}

/** Released (not over Failed: the user should see what went wrong), then the reclaim policy. */
function release(volume: PersistentVolume, world: BinderWorld, claimGone: boolean): BinderAction[] {
  const phase = volume.status?.phase;
  const released: BinderAction[] = phase === 'Released' || phase === 'Failed' ? [] : [{ kind: 'volumePhase', volume, phase: 'Released' }];
  return [...released, ...reclaim(volume, world, claimGone)];
}

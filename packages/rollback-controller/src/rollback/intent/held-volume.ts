import type { PersistentVolume } from '@topovol/shared';
import { ANN_RECLAIM_HELD, usageOf } from '../marks.js';
import type { RollbackClaim } from './provisioning-rollback.js';

/**
 * The volume's reclaim policy across its claim's delete. The rollback's last check and the delete
 * are two requests: a pod the scheduler binds between them starts on the claim while it terminates
 * (the kubelet admits a claim being deleted as long as its kubernetes.io/pvc-protection finalizer
 * is there, and pvc-protection keeps it for a scheduled pod: pkg/kubelet/volumemanager/populator,
 * getPVCExtractPV; pkg/controller/volume/pvcprotection). With `Delete`, whatever that pod writes
 * goes with the claim once the pod ends. So the policy is `Retain` from before the delete until
 * the claim is gone and no pod can have used the volume meanwhile; then `Delete` is given back.
 */
export type HoldPlan =
  /** Retain, remembering Delete in ANN_RECLAIM_HELD, conditional on the volume as read. */
  | { kind: 'hold'; resourceVersion: string | undefined }
  /** Nothing to set aside: gone, or not Delete (Retain keeps it anyway; held already is Retain). */
  | { kind: 'none' }
  /**
   * The volume, read again for the hold, is no longer marked unused: marked since the check the
   * delete was decided on (a later read than that check), so the claim is kept.
   */
  | { kind: 'used'; why: string };

/**
 * By the policy: a held mark on a volume whose policy is Delete again (set back by hand) is held
 * again. First by its usage mark: this read is later than the check the delete was decided on,
 * and the hold's precondition is this read's version, so a mark written in between is seen here or
 * fails the hold; never deleted on the older check's word.
 */
export function decideHold(v: PersistentVolume | undefined): HoldPlan {
  if (v && usageOf(v) !== 'unused') return { kind: 'used', why: `its mark is now ${usageOf(v) ?? 'missing'}` };
  if (!v || v.spec?.persistentVolumeReclaimPolicy !== 'Delete') return { kind: 'none' };
  return { kind: 'hold', resourceVersion: v.metadata?.resourceVersion };
}

export type SettlePlan =
  /** Not held (never, or settled already), or gone. */
  | { kind: 'none' }
  /** Delete given back: no pod can have used the volume since the hold. */
  | { kind: 'restore'; resourceVersion: string | undefined }
  /**
   * Left Retain, with why: it may hold data, for an administrator to recover or delete; or
   * (`refused`) the API server refused giving `Delete` back, for an administrator to give it back.
   */
  | { kind: 'retain'; resourceVersion: string | undefined; why: string; refused?: boolean }
  /** Someone set another policy since: theirs stands, only the hold's annotation goes. */
  | { kind: 'unmark'; resourceVersion: string | undefined };

/**
 * What becomes of a held volume once its claim `c` is gone (or was kept): `doubt` is why a pod may
 * have used the volume since the hold (undefined when none can have).
 */
export function decideSettle(v: PersistentVolume | undefined, c: RollbackClaim, doubt: string | undefined): SettlePlan {
  if (!v || v.metadata?.annotations?.[ANN_RECLAIM_HELD] === undefined) return { kind: 'none' };
  const resourceVersion = v.metadata?.resourceVersion;
  if (v.spec?.persistentVolumeReclaimPolicy !== 'Retain') return { kind: 'unmark', resourceVersion };
  const ref = v.spec?.claimRef;
  if (ref && ref.uid !== c.uid) return { kind: 'retain', resourceVersion, why: `it was bound to claim ${ref.namespace}/${ref.name} (uid ${ref.uid ?? 'none'}) since its claim ${c.name} was deleted` };
  if (doubt) return { kind: 'retain', resourceVersion, why: doubt };
  return { kind: 'restore', resourceVersion };
}

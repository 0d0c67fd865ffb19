import type { PersistentVolumeClaim } from '@topovol/shared';
import type { BinderAction } from './actions.js';
import { claimStatusFor } from './claim-status.js';

/** Status Pending without a volume's access modes or capacity, if the claim's status says otherwise. */
export function pendingStatus(claim: PersistentVolumeClaim): BinderAction[] {
  return claimStatusFor(claim, 'Pending') ? [{ kind: 'claimPhase', claim, phase: 'Pending' }] : [];
}

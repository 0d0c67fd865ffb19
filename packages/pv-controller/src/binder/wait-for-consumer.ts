import { isPodTerminated } from '@topovol/shared';
import type { PersistentVolumeClaim, Pod } from '@topovol/shared';
import { event } from './actions.js';
import type { BinderAction } from './actions.js';
import { Reasons } from './binder-reasons.js';
import type { BinderWorld } from './binder-world.js';
import { pendingStatus } from './claim-pending.js';

/** Pods that use the claim and wait for the scheduler (upstream's findNonScheduledPodsByPVC). */
const unscheduled = (pods: Pod[]): string[] => pods.filter((p) => !isPodTerminated(p) && !p.spec?.nodeName).map((p) => p.metadata?.name ?? '');

/** A delayed-binding claim without a consumer upstream would act for: say which pods it waits for (emitEventForUnboundDelayBindingClaim). */
export function waitForConsumer(claim: PersistentVolumeClaim, world: BinderWorld): BinderAction[] {
  const waiting = unscheduled(world.podsUsingClaim(claim.metadata?.namespace ?? '', claim.metadata?.name ?? ''));
  const wait =
    waiting.length === 0
      ? event(claim, 'Normal', Reasons.WaitForFirstConsumer, 'waiting for first consumer to be created before binding')
      : event(claim, 'Normal', Reasons.WaitForPodScheduled, waiting.length === 1 ? `waiting for pod ${waiting[0]} to be scheduled` : `waiting for pods ${waiting.join(',')} to be scheduled`);
  return [wait, ...pendingStatus(claim)];
}


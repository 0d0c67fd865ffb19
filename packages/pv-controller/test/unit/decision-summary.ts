import type { PersistentVolume, PersistentVolumeClaim } from '@topovol/shared';
import type { BinderAction } from '../../src/binder/actions.js';
import { decideClaim } from '../../src/binder/decide-claim.js';
import { decideVolume } from '../../src/binder/decide-volume.js';
import { world } from './world-fixture.js';
import type { WorldInput } from './world-fixture.js';

/** A compact, order-preserving summary of planned actions. */
export function summary(actions: BinderAction[]): string[] {
  return actions.map((a): string => {
    switch (a.kind) {
      case 'bindVolume':
        return `${a.kind} ${a.volume.metadata?.name}${a.forPlacedPod ? ` (for placed ${a.forPlacedPod.name} on ${a.forPlacedPod.nodeName})` : ''}`;
      case 'bindClaim':
        return `${a.kind} ${a.volume.metadata?.name}`;
      case 'volumePhase':
      case 'claimPhase':
        return `${a.kind} ${a.phase}`;
      case 'annotateClaim':
        return `annotate ${Object.keys(a.set ?? {}).join(',')}${a.remove?.length ? ` -${a.remove.join(',')}` : ''}${a.confirm ? ` (confirm ${a.confirm.issue})` : ''}${a.forPlacedPod ? ` (for placed ${a.forPlacedPod.name} on ${a.forPlacedPod.nodeName})` : ''}`;
      case 'setClaimClass':
        return `setClass ${a.storageClassName}`;
      case 'event':
        return `event ${a.type} ${a.reason}`;
      case 'unbindVolume':
        return a.keepClaimRef ? 'unbindVolume (clear uid)' : 'unbindVolume';
      case 'requeueAfter':
        return `requeueAfter ${a.ms}`;
      case 'noteSelectedNodeIssue':
        return `note ${a.issue ?? 'none'}`;
      case 'updateVolumeMeta':
        return `volumeMeta ${Object.entries(a.set ?? {}).map(([k, v]) => `${k}=${v}`).join(',')}${a.remove?.length ? ` -${a.remove.join(',')}` : ''}${a.removeFinalizers?.length ? ` -finalizer ${a.removeFinalizers.join(',')}` : ''}`;
    }
  });
}

/** A claimRef in namespace "ns" unless told otherwise, with a uid only when given. */
export const ref = (name: string, extra: { namespace?: string; uid?: string } = {}): { namespace: string; name: string; uid?: string } => ({ namespace: extra.namespace ?? 'ns', name, ...(extra.uid ? { uid: extra.uid } : {}) });

/** One row of a decision table: a claim or a volume decided in a world, and the summary wanted. */
export interface DecisionCase {
  name: string;
  decide: 'claim' | 'volume';
  claim?: PersistentVolumeClaim;
  volume?: PersistentVolume;
  w: WorldInput;
  want: string[];
}

/** The summary of the row's decision. */
export function decided(c: DecisionCase): string[] {
  return summary(c.decide === 'claim' ? decideClaim(c.claim!, world(c.w)) : decideVolume(c.volume!, world(c.w)));
}

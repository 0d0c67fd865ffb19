import type { BinderAction } from '../../src/binder/actions.js';

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

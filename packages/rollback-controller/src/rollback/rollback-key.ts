import { splitKey } from '@topovol/shared';

/**
 * The rollback loop's keys: a volume to mark, a pod to decide for, or a recorded rollback
 * (ProvisioningRollback) to advance.
 */
export type RollbackKey = { kind: 'volume'; name: string } | { kind: 'pod'; namespace: string; name: string } | { kind: 'record'; name: string };

export const volumeKey = (name: string): RollbackKey => ({ kind: 'volume', name });

/** A pod's key from its cache key (`namespace/name`). */
export function podKeyOf(cacheKey: string): RollbackKey {
  const { namespace, name } = splitKey(cacheKey);
  return { kind: 'pod', namespace: namespace ?? '', name };
}

export const recordKey = (name: string): RollbackKey => ({ kind: 'record', name });

/** `pv/<name>`, `pod/<namespace>/<name>` or `rb/<name>`: the key's identity in the queue and in logs. */
export function rollbackKeyString(k: RollbackKey): string {
  switch (k.kind) {
    case 'volume':
      return `pv/${k.name}`;
    case 'pod':
      return `pod/${k.namespace}/${k.name}`;
    case 'record':
      return `rb/${k.name}`;
  }
}

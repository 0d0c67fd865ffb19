import { splitKey } from '@topovol/shared';

/** The pv-binder loop's keys: a claim to bind (or keep bound), or a volume's own bookkeeping. */
export type BinderKey = { kind: 'claim'; namespace: string; name: string } | { kind: 'volume'; name: string };

export const claimKey = (namespace: string, name: string): BinderKey => ({ kind: 'claim', namespace, name });

/** A claim's key from its cache key (`namespace/name`, as claimKeysOfPod and the informers give it). */
export function claimKeyOf(cacheKey: string): BinderKey {
  const { namespace, name } = splitKey(cacheKey);
  return claimKey(namespace ?? '', name);
}

export const volumeKey = (name: string): BinderKey => ({ kind: 'volume', name });

/** `pvc/<namespace>/<name>` or `pv/<name>`: the key's identity in the queue and in logs. */
export function binderKeyString(k: BinderKey): string {
  return k.kind === 'claim' ? `pvc/${k.namespace}/${k.name}` : `pv/${k.name}`;
}

/**
 * Claims before volume bookkeeping: a claim can take a volume the binder has not yet written
 * Available (find-matching-volume.ts), so at start-up, with every object queued, bindings begin at
 * once instead of after one Available write per pre-existing volume. Not strictly: one volume key
 * goes after every FAIR_SHARE claim keys while both wait (LeveledFifo), so a volume to release is
 * not held back for as long as claims keep coming.
 */
export function binderKeyPriority(k: BinderKey): number {
  return k.kind === 'claim' ? 0 : 1;
}

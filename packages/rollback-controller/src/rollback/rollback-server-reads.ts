import { claimNamesOfPod, isGone, isNotFound, Resources, streamWatch } from '@topovol/shared';
import type { KubeClient, KubeObject, PersistentVolume, PersistentVolumeClaim, Pod, ResourceType } from '@topovol/shared';
import { usageOf } from './marks.js';
import { podUseOfClaim } from './usage-evidence.js';

/** How long the server is asked to hold the replay watch open after replaying (its timeoutSeconds). */
const REPLAY_SECONDS = 1;

/**
 * What a rollback reads from the server, not the cache, right before and after a claim's delete:
 * the informers may lag a write or two behind (a pod just bound, a volume just marked used).
 */
export interface RollbackServerReads {
  claim(namespace: string, name: string): Promise<PersistentVolumeClaim | undefined>;
  /** The namespace's pods, listed from the server. */
  pods(namespace: string): Promise<Pod[]>;
  /** Why the volume may hold data now (its live mark, any other evidence), or undefined while it is provably unused. */
  volumeUse(volumeName: string): Promise<string | undefined>;
}

async function getOrUndefined<T extends KubeObject>(client: KubeClient, resource: ResourceType, name: string, ns?: string): Promise<T | undefined> {
  try {
    return await client.get<T>(resource, name, ns);
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

/**
 * A pod of the claim that was scheduled or ran, among the namespace's pod events after
 * `resourceVersion` (what the loop's pod informer has handled) as the server replays them: one that
 * came and went while the informer lagged, which neither the informer nor a list of the pods that
 * exist now shows. Why, or undefined when none; a resourceVersion the server no longer has (410)
 * cannot be checked, and counts as use.
 */
export async function missedPodUse(client: KubeClient, namespace: string, claimName: string, resourceVersion: string): Promise<string | undefined> {
  if (!resourceVersion) return 'the pod watch has not started, so pods since its provisioning cannot be checked';
  let found: string | undefined;
  let gone = false;
  const ac = new AbortController();
  await streamWatch(
    client,
    `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods`,
    { resourceVersion, timeoutSeconds: String(REPLAY_SECONDS), allowWatchBookmarks: 'true' },
    (e) => {
      if (e.type === 'ERROR') {
        gone = true;
        ac.abort();
        return;
      }
      if (e.type === 'BOOKMARK' || found) return;
      const p = e.object as Pod;
      if (claimNamesOfPod(p).includes(claimName)) found = podUseOfClaim(p, claimName);
    },
    ac.signal,
    (REPLAY_SECONDS + 10) * 1000,
  ).catch((err: unknown) => {
    // 410 as the answer's status rather than an ERROR event: the same.
    if (isGone(err)) gone = true;
    else if (!ac.signal.aborted) throw err;
  });
  if (gone) return 'the pod watch is too far behind the server to tell whether a pod used it meanwhile';
  return found && `${found} (seen in the pod events since the loop's watch)`;
}

/**
 * The reads through `client`. A volume's usage is the label as the server has it (the admission
 * policy keeps anyone else from setting unused), then `evidence`: what else says it may hold data,
 * then the pod events the loop's informer has not handled yet (`podsSeenUpTo`: its resourceVersion;
 * see missedPodUse).
 */
export function liveReads(client: KubeClient, evidence: (live: PersistentVolume) => string | undefined, podsSeenUpTo: () => string = () => ''): RollbackServerReads {
  return {
    claim: (ns, name) => getOrUndefined<PersistentVolumeClaim>(client, Resources.persistentVolumeClaims, name, ns),
    pods: async (ns) => (await client.list<Pod>(Resources.pods, { namespace: ns })).items,
    volumeUse: async (name) => {
      const live = await getOrUndefined<PersistentVolume>(client, Resources.persistentVolumes, name);
      if (!live) return 'it is gone';
      if (usageOf(live) !== 'unused') return `its mark is ${usageOf(live) ?? 'missing'}`;
      const ref = live.spec?.claimRef;
      return evidence(live) ?? (ref?.namespace && ref.name ? missedPodUse(client, ref.namespace, ref.name, podsSeenUpTo()) : 'it is bound to no claim');
    },
  };
}

import { claimNamesOfPod, collectionPath, getIfPresent, InvalidPathSegmentError, isGone, pathSegmentProblem, projectPod, Resources, streamWatch } from '@topovol/shared';
import type { KubeClient, KubeObject, ObjectList, PersistentVolume, PersistentVolumeClaim, Pod, VolumeAttachment } from '@topovol/shared';
import { usageOf } from './marks.js';
import { recreateCheck } from './recreate-check.js';
import type { RecreateCheck } from './recreate-check.js';
import { compareResourceVersions } from './resource-version.js';
import { podUseOfClaim } from './usage-evidence.js';

/**
 * The replay watch's timeoutSeconds, tried in turn. kube-apiserver's watch cache sends a watcher a
 * bookmark about 2 s before its deadline, and none when that point has already passed when the
 * watch starts (k8s.io/apiserver/pkg/storage/cacher, cacheWatcher.nextBookmarkTime; its bookmark
 * timer ticks every 1-1.25 s): 1 s never gets one. 3 s gets one after 1-2.25 s; a watch that
 * reached the cacher too late for it (a loaded server) is followed by one of 5 s, with 3 s of room.
 * Every replay waits for that bookmark unless a pod event of the namespace comes first, and a
 * rollback replays twice (before its delete and when it gives the volume's Delete back).
 */
export const REPLAY_SECONDS: readonly number[] = [3, 5];

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
  /** The volume as the server has it, or undefined when there is none. */
  volume(name: string): Promise<PersistentVolume | undefined>;
  /** A VolumeAttachment of the volume as the server lists it now: why it counts as use, or undefined when there is none. */
  attached(volumeName: string): Promise<string | undefined>;
  /**
   * A pod of the claim scheduled or run among the pod events the loop's watch has not delivered yet
   * (missedPodUse): why, or undefined when none.
   */
  undeliveredPodUse(namespace: string, claimName: string): Promise<string | undefined>;
  /** The namespace of that name (its uid, when it was created in ms, whether it is being deleted), or undefined when there is none. */
  namespace(name: string): Promise<{ uid: string; created: number; deleting?: boolean } | undefined>;
  /** The pod of that name with that uid as the server has it (projected), or undefined when it has none. */
  livePod(namespace: string, name: string, uid: string): Promise<Pod | undefined>;
  /**
   * What the API server answers the claim's copy as a rollback re-creates it, sent as a dry run:
   * why it would refuse it, or the finalizers admission gives it.
   */
  recreateCheck(claim: PersistentVolumeClaim): Promise<RecreateCheck>;
}

export interface ReplayOptions {
  /** One watch with this timeoutSeconds instead of REPLAY_SECONDS (tests shorten it so that no bookmark can come). */
  timeoutSeconds?: number;
}

/**
 * A pod of the claim that was scheduled or ran, among the namespace's pod events after
 * `resourceVersion` (what the loop's pod informer has handled) as the server replays them: one that
 * came and went while the informer lagged, which neither the informer nor a list of the pods that
 * exist now shows. Why, or undefined when none (kubernetes #94217: a volume is deleted in a
 * rollback only while no pod can have used it).
 *
 * "None" holds only for a replay that provably reached now: the resourceVersion of a list of the
 * namespace's pods taken just before the watch, reached by an event or a bookmark. kube-apiserver
 * ends a watch at its timeout even with events still queued for it (a backlog of large pod
 * updates), so a watch that merely ended proves nothing; one that did not reach the list counts
 * as use. So does a resourceVersion the server no longer has (410), which cannot be checked.
 */
export async function missedPodUse(
  client: KubeClient,
  namespace: string,
  claimName: string,
  resourceVersion: string,
  opts: ReplayOptions = {},
): Promise<string | undefined> {
  if (!resourceVersion) return 'the pod watch has not started, so pods since its provisioning cannot be checked';
  // Refused as every KubeClient read is: a namespace that is no path segment (an empty one would
  // be every namespace's pods).
  const problem = pathSegmentProblem(namespace);
  if (problem) throw new InvalidPathSegmentError('namespace', namespace, problem);
  const path = collectionPath(Resources.pods, namespace);
  // One item is enough: only the list's resourceVersion is wanted, a consistent read of now.
  const now = (await client.request<ObjectList<Pod>>('GET', path, { query: { limit: 1 } })).metadata?.resourceVersion ?? '';
  // The informer has already handled everything up to the list: nothing to replay. The watch cache
  // would not show it either: it sends no bookmark at the watch's own resourceVersion (cacher,
  // cacheWatcher.process).
  const behind = compareResourceVersions(resourceVersion, now);
  if (behind !== undefined && behind >= 0) return undefined;
  let seen: ReplaySeen = { reached: false, gone: false };
  for (const seconds of opts.timeoutSeconds === undefined ? REPLAY_SECONDS : [opts.timeoutSeconds]) {
    seen = await replayOnce(client, path, claimName, resourceVersion, now, seconds);
    if (seen.found || seen.gone || seen.reached) break;
  }
  const { found, gone, reached } = seen;
  if (found) return `${found} (seen in the pod events since the loop's watch)`;
  if (gone) return 'the pod watch is too far behind the server to tell whether a pod used it meanwhile';
  if (!reached) return "the replay of the pod events since the loop's watch did not reach the pods listed now: cannot tell whether a pod used it meanwhile";
  return undefined;
}

interface ReplaySeen {
  /** Why a pod of the claim counts as use, if one was seen. */
  found?: string;
  /** The server no longer has the start (410). */
  gone: boolean;
  /** An event or a bookmark at or past the list's resourceVersion came. */
  reached: boolean;
}

/** One watch of the namespace's pods from `resourceVersion`, ended by the first answer or at `seconds`. */
async function replayOnce(client: KubeClient, path: string, claimName: string, resourceVersion: string, now: string, seconds: number): Promise<ReplaySeen> {
  let found: string | undefined;
  let gone = false;
  let reached = false;
  const ac = new AbortController();
  await streamWatch(
    client,
    path,
    { resourceVersion, timeoutSeconds: String(seconds), allowWatchBookmarks: 'true' },
    (e) => {
      // The abort is deferred: events of the same read may still come.
      if (found || gone || reached) return;
      if (e.type === 'ERROR') {
        gone = true;
        ac.abort();
        return;
      }
      // A bookmark is a Pod with only its resourceVersion set.
      const p = e.object as Pod;
      if (e.type !== 'BOOKMARK' && claimNamesOfPod(p).includes(claimName)) found = podUseOfClaim(p, claimName);
      // Events come in resourceVersion order, so every event up to the list's was seen. An
      // incomparable resourceVersion (KEP-5504) proves nothing: the replay goes on, then counts as
      // incomplete.
      const order = compareResourceVersions(p.metadata?.resourceVersion ?? '', now);
      if (order !== undefined && order >= 0) reached = true;
      if (found || reached) ac.abort();
    },
    ac.signal,
    (seconds + 10) * 1000,
  ).catch((err: unknown) => {
    // 410 as the answer's status rather than an ERROR event: the same.
    if (isGone(err)) gone = true;
    else if (!ac.signal.aborted) throw err;
  });
  return { ...(found ? { found } : {}), gone, reached };
}

/**
 * A VolumeAttachment of the volume, as a consistent list of them shows it now: why it counts as use,
 * or undefined when there is none. Not the loop's cache: its watch of attachments delivers apart
 * from the claims' and the events' (a cut stream, a relist, a busy process), so a claim's failure
 * can arrive before the attachment made earlier (the attach/detach controller writes one before a
 * kubelet may mount the volume, kubernetes #94217). Attachments are few (one per attached volume);
 * they have no field selector on the volume, so all are listed.
 */
export async function attachedNow(client: KubeClient, volumeName: string): Promise<string | undefined> {
  const va = (await client.list<VolumeAttachment>(Resources.volumeAttachments)).items.find((a) => a.spec?.source?.persistentVolumeName === volumeName);
  return va ? `VolumeAttachment ${va.metadata?.name} exists for it (listed from the server)` : undefined;
}

/**
 * The reads through `client`. A volume's usage is the label as the server has it (the admission
 * policy keeps anyone else from setting unused), then `evidence`: what else the caches say of use,
 * then the VolumeAttachments the server has now (attachedNow), then the pod events the loop's
 * informer has not handled yet (`podsSeenUpTo`: its resourceVersion; see missedPodUse). A node's
 * volumesInUse is read from the cache only: a kubelet mounts a volume only for a pod scheduled with
 * its claim, which the replay of the pod events finds.
 */
export function liveReads(client: KubeClient, evidence: (live: PersistentVolume) => string | undefined, podsSeenUpTo: () => string = () => ''): RollbackServerReads {
  return {
    claim: (ns, name) => getIfPresent<PersistentVolumeClaim>(client, Resources.persistentVolumeClaims, name, ns),
    // Projected as each page arrives: a namespace's pods are as large as their writers made them.
    pods: async (ns) => (await client.list<Pod>(Resources.pods, { namespace: ns }, projectPod)).items,
    volumeUse: async (name) => {
      const live = await getIfPresent<PersistentVolume>(client, Resources.persistentVolumes, name);
      if (!live) return 'it is gone';
      if (usageOf(live) !== 'unused') return `its mark is ${usageOf(live) ?? 'missing'}`;
      const ref = live.spec?.claimRef;
      const doubt = evidence(live) ?? (await attachedNow(client, name));
      if (doubt) return doubt;
      return ref?.namespace && ref.name ? missedPodUse(client, ref.namespace, ref.name, podsSeenUpTo()) : 'it is bound to no claim';
    },
    volume: (name) => getIfPresent<PersistentVolume>(client, Resources.persistentVolumes, name),
    attached: (name) => attachedNow(client, name),
    undeliveredPodUse: (ns, claimName) => missedPodUse(client, ns, claimName, podsSeenUpTo()),
    namespace: async (name) => {
      const ns = await getIfPresent<KubeObject>(client, Resources.namespaces, name);
      return ns ? { uid: ns.metadata?.uid ?? '', created: Date.parse(ns.metadata?.creationTimestamp ?? ''), deleting: ns.metadata?.deletionTimestamp !== undefined } : undefined;
    },
    // A list by name: the loop's role lists pods and does not get them.
    livePod: async (ns, name, uid) =>
      (await client.list<Pod>(Resources.pods, { namespace: ns, fieldSelector: `metadata.name=${name}` }, projectPod)).items.find((p) => p.metadata?.uid === uid),
    recreateCheck: (claim) => recreateCheck(client, claim),
  };
}

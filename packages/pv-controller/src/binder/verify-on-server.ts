import { claimNamesOfPod, eventsAbout, getIfPresent, isDnsSubdomain, projectPod, PROVISIONING_EVENTS, Resources, slimEvent } from '@topovol/shared';
import type { Event, KubeClient, Node, PersistentVolume, PersistentVolumeClaim, Pod } from '@topovol/shared';
import type { BinderAction, PlacedPodConfirmation, SelectedNodeConfirmation } from './actions.js';
import type { ServerCheck } from './binder-metrics.js';
import { claimRefProblem, releasedWhenClaimBoundElsewhere } from './decide-volume.js';
import { placedPodUses } from './deleting-claim.js';
import { DEFAULT_VOLUME_NAME_PATTERNS, provisionedVolumeNames } from './provisioned-volume-names.js';
import type { VolumeNamePattern } from './provisioned-volume-names.js';
import { claimGoneOrRecreated } from './orphaned-bind.js';
import { eventTime } from './provisioning-events.js';
import { allowedTopologiesMatch, isLivePod, someConsumerFits } from './selected-node-checks.js';

/**
 * The writes a lagging cache must never be enough for, because they cannot be undone: Released
 * (hands the volume to its reclaim policy, perhaps deletion), a selected-node's removal (the claim
 * is provisioned afresh elsewhere), and a binding or a selected node for a pod placed with
 * spec.nodeName (the volume is pinned to that pod's node), and a free volume's binding to a claim
 * being deleted (Released once the claim goes, unless a pod on a node uses it). Also Lost: undone
 * once the volume shows, but meanwhile the claim's status loses its capacity and access modes, no
 * new pod can use it, and its Warning says the data is lost. No write precondition on the object written can express "the
 * claim is gone", "the node is gone", "the pod is gone", "the volume is gone" or "no provisioner is
 * at work on the claim", so the glue reads those facts from the server first.
 */
type Guarded = Extract<BinderAction, { kind: 'volumePhase' } | { kind: 'annotateClaim' } | { kind: 'bindVolume' } | { kind: 'claimPhase' } | { kind: 'unbindVolume' }>;

/** What the server has, read for one guarded action. */
export type ServerView =
  | { kind: 'claim'; claim: PersistentVolumeClaim | undefined }
  /**
   * A selected-node removal: the node or the namespace's pods, when each of the claim's
   * Provisioning Events on the server last showed activity (ProvisioningActivity.timeOf), and the
   * volumes the server has under the names a volume provisioned for the claim would have
   * (provisioned-volume-names.ts; absent: not read).
   */
  | { kind: 'node'; node: Node | undefined; provisioning: number[]; provisioned?: PersistentVolume[] }
  | { kind: 'pods'; pods: Pod[]; provisioning: number[]; provisioned?: PersistentVolume[] }
  /** A placed pod's binding: that pod, its claim, and the claim's live pods the scheduler has yet to place. */
  | { kind: 'pod'; pod: Pod | undefined; claim?: PersistentVolumeClaim | undefined; unscheduled?: Pod[] }
  /** A free volume's binding to a claim being deleted: the namespace's pods on a node. */
  | { kind: 'users'; pods: Pod[] }
  | { kind: 'volume'; volume: PersistentVolume | undefined };

/** The server's facts one action needs confirmed, if any. */
function guardOf(a: BinderAction): { action: Guarded; read: 'claim' | 'takeBack' | 'node' | 'pods' | 'placedPod' | 'volume' | 'users' } | undefined {
  // Not a write that loses data, but one that hands a volume to any claim: the cache may not show
  // the claim yet (kube-scheduler pre-binds for a claim just created).
  if (a.kind === 'unbindVolume' && a.takeBack) return { action: a, read: 'takeBack' };
  if ((a.kind === 'bindVolume' || a.kind === 'annotateClaim') && a.forPlacedPod) return { action: a, read: 'placedPod' };
  if (a.kind === 'bindVolume' && a.forDeletingClaim) return { action: a, read: 'users' };
  // Every release: one whose claimRef names no claim that can exist is refuted without a read
  // (decideVolume plans none; a name that is no path segment would read another object).
  if (a.kind === 'volumePhase' && a.phase === 'Released' && a.volume.spec?.claimRef) return { action: a, read: 'claim' };
  if (a.kind === 'annotateClaim' && a.confirm) return { action: a, read: a.confirm.issue === 'noConsumer' ? 'pods' : 'node' };
  // A claim that names no volume, or a name no volume can have (the API server does not check a
  // claim's volumeName; a tenant writes it), is Lost on its own cached word, which the write's
  // resourceVersion guards; a valid name needs no escaping in a field selector.
  const named = a.kind === 'claimPhase' ? a.claim.spec?.volumeName : undefined;
  if (a.kind === 'claimPhase' && a.phase === 'Lost' && named && isDnsSubdomain(named)) return { action: a, read: 'volume' };
  return undefined;
}

/**
 * Lost, on the server's volume: the claim's volume is there and bound to no other claim (upstream's
 * syncBoundClaim would bind it). The cache missed it or lags; decided again once it catches up.
 */
export function lostRefuted(claim: PersistentVolumeClaim, live: PersistentVolume | undefined): string | undefined {
  if (!live) return undefined;
  const ref = live.spec?.claimRef;
  if (ref && ref.uid !== claim.metadata?.uid) return undefined;
  return `volume ${live.metadata?.name} of claim ${claim.metadata?.namespace}/${claim.metadata?.name} is on the server${ref ? ', bound to it' : ''}; not marking the claim Lost; deciding again`;
}

/**
 * Upstream's syncVolume, on the server's claim: the volume's claim is gone or re-created under the
 * same name, or bound to another volume while this one was provisioned for it with Delete. A claim
 * bound elsewhere otherwise only unbinds the volume, so a cache that missed the claim must not get
 * it Released (a static volume with Delete would go to its deleter). Why not, or undefined.
 */
export function releaseRefuted(volume: PersistentVolume, live: PersistentVolumeClaim | undefined): string | undefined {
  const ref = volume.spec?.claimRef;
  const problem = ref && claimRefProblem(ref);
  if (problem) return `volume ${volume.metadata?.name}: spec.claimRef has ${problem}; not releasing`;
  if (!live || !ref || live.metadata?.uid !== ref.uid) return undefined;
  const boundTo = live.spec?.volumeName;
  if (!boundTo || boundTo === volume.metadata?.name) return `claim ${ref.namespace}/${ref.name} still exists; not releasing volume ${volume.metadata?.name}`;
  if (!releasedWhenClaimBoundElsewhere(volume)) return `claim ${ref.namespace}/${ref.name} is bound to volume ${boundTo}: volume ${volume.metadata?.name} is to be unbound, not released; deciding again`;
  return undefined;
}

/**
 * A take-back of an unfinished binding (orphaned-bind.ts), on the server's claim: the claim with
 * the claimRef's uid is there (the cache had not seen it: kube-scheduler pre-binds for a claim just
 * created). Why not, or undefined.
 */
export function takeBackRefuted(volume: PersistentVolume, live: PersistentVolumeClaim | undefined): string | undefined {
  const ref = volume.spec?.claimRef;
  const problem = ref && claimRefProblem(ref);
  if (!ref || problem) return `volume ${volume.metadata?.name}: spec.claimRef has ${problem ?? 'gone'}; not taking it back`;
  if (claimGoneOrRecreated(volume, live)) return undefined;
  return `claim ${ref.namespace}/${ref.name} of volume ${volume.metadata?.name} is on the server; not taking the volume back; deciding again`;
}

/**
 * The selected-node problem, on the server's node (or the namespace's pods), with no provisioning
 * on the server since `quietSince`: a Provisioning Event the cache had not seen (its Events watch
 * behind, or relisting) means a CreateVolume may be running on that node. Why it is not so, or undefined.
 */
export function selectedNodeIssueRefuted(claim: PersistentVolumeClaim, confirm: SelectedNodeConfirmation, view: ServerView): string | undefined {
  const stillThere = `${claim.metadata?.namespace}/${claim.metadata?.name}: selected node "${confirm.node}"`;
  const provisioning = view.kind === 'node' || view.kind === 'pods' ? view.provisioning : [];
  // Provisioning finished: the decision ruled out a volume pre-bound to the claim on the cache's
  // word only. Bound once the cache has it, as upstream's syncUnboundClaim binds a pre-bound volume.
  const candidates = view.kind === 'node' || view.kind === 'pods' ? (view.provisioned ?? []) : [];
  const made = candidates.find((v) => v.spec?.claimRef?.uid === claim.metadata?.uid);
  if (made) {
    return `${stillThere}: volume ${made.metadata?.name} provisioned for the claim is on the server (the cache had not seen it); keeping it, deciding again`;
  }
  // Not a spread: the claim's namespace decides how many Events there are.
  const latest = provisioning.reduce((m, t) => Math.max(m, t), -Infinity);
  if (provisioning.length > 0 && latest > confirm.quietSince) {
    return `${stillThere}: the provisioner has been at work on the claim since the grace began (a Provisioning Event on the server, last active ${new Date(latest).toISOString()}); keeping it`;
  }
  if (confirm.issue === 'noConsumer') {
    return view.kind === 'pods' && someConsumerFits(view.pods, claim, confirm.node) ? `${stillThere} has a pod that may use it after all; keeping it` : undefined;
  }
  const node = view.kind === 'node' ? view.node : undefined;
  if (confirm.issue === 'gone') return node ? `${stillThere} exists after all; keeping it` : undefined;
  // Gone from the server though the cache has it: decided again once the cache knows.
  if (!node) return `${stillThere} is not on the server; deciding again`;
  return allowedTopologiesMatch(confirm.allowedTopologies, node) ? `${stillThere} is allowed after all; keeping it` : undefined;
}

/**
 * The pod a binding or a selected node is for, on the server: gone, replaced, ending or moved
 * refutes it; so does its claim (uid `claimUid`, when given) gone or being deleted there
 * (pvc-protection holds the claim while the pod exists, and a volume bound to it for the pod would
 * be released once the pod goes: decideClaim waits for such a claim, as upstream, which never acts
 * for a placed pod,
 * and its cache may not show the delete yet); and so does another live pod of the claim waiting
 * for the scheduler there, which the cache may not show yet (nodeNameConsumer: the scheduler may be
 * pre-binding a volume to the claim, and the claim waits for its choice).
 */
export function placedPodRefuted(p: PlacedPodConfirmation, view: ServerView, claimUid?: string): string | undefined {
  const live = view.kind === 'pod' ? view.pod : undefined;
  const who = `pod ${p.namespace}/${p.name}, placed on node "${p.nodeName}"`;
  if (!live || live.metadata?.uid !== p.uid) return `${who}, is not on the server; deciding again`;
  if (!isLivePod(live)) return `${who}, is ending; deciding again`;
  if (live.spec?.nodeName !== p.nodeName) return `${who}, is on node "${live.spec?.nodeName ?? ''}" on the server; deciding again`;
  if (claimUid === undefined) return undefined;
  const claim = view.kind === 'pod' ? view.claim : undefined;
  if (!claim || claim.metadata?.uid !== claimUid) return `the claim of ${who}, is not on the server; deciding again`;
  if (claim.metadata?.deletionTimestamp) return `claim ${claim.metadata.namespace}/${claim.metadata.name} of ${who}, is being deleted on the server; deciding again`;
  const waiting = view.kind === 'pod' ? view.unscheduled?.[0] : undefined;
  if (waiting) return `pod ${waiting.metadata?.namespace}/${waiting.metadata?.name} of claim ${claim.metadata?.namespace}/${claim.metadata?.name} waits for the scheduler on the server; the claim waits for its choice, not ${who}; deciding again`;
  return undefined;
}

/**
 * A free volume for a claim being deleted, on the server's pods: none live on a node uses the claim
 * (the cache still had one that went), so once the claim goes the volume would be Released and,
 * with Delete, deleted, though no pod may ever use it. Why, or undefined.
 */
export function deletingClaimBindRefuted(claim: PersistentVolumeClaim, volume: PersistentVolume, view: ServerView): string | undefined {
  if (view.kind === 'users' && placedPodUses(view.pods, claim)) return undefined;
  return `claim ${claim.metadata?.namespace}/${claim.metadata?.name} is being deleted and no pod on a node uses it on the server; not binding volume ${volume.metadata?.name} to it; deciding again`;
}

const CHECKS: Record<NonNullable<ReturnType<typeof guardOf>>['read'], ServerCheck> = { placedPod: 'placed_pod', claim: 'release', takeBack: 'take_back', node: 'selected_node', pods: 'selected_node', volume: 'lost', users: 'deleting_claim' };

/** Why the server refutes the guarded action, or undefined. */
export function refutation(a: Guarded, view: ServerView): string | undefined {
  if (a.kind === 'unbindVolume') return takeBackRefuted(a.volume, view.kind === 'claim' ? view.claim : undefined);
  if (a.kind === 'claimPhase') return lostRefuted(a.claim, view.kind === 'volume' ? view.volume : undefined);
  if (a.kind !== 'volumePhase' && a.forPlacedPod) return placedPodRefuted(a.forPlacedPod, view, a.claim.metadata?.uid ?? '');
  if (a.kind === 'bindVolume') return a.forDeletingClaim ? deletingClaimBindRefuted(a.claim, a.volume, view) : undefined;
  if (a.kind === 'volumePhase') return releaseRefuted(a.volume, view.kind === 'claim' ? view.claim : undefined);
  return a.confirm ? selectedNodeIssueRefuted(a.claim, a.confirm, view) : undefined;
}

/**
 * The server's volume of this name (a DNS subdomain, so nothing to escape), or undefined. Listed by
 * name, not read with a get: the binder's role lists volumes and does not get them (upstream's
 * binder never reads one volume either).
 */
export async function volumeOnServer(client: Pick<KubeClient, 'list'>, name: string): Promise<PersistentVolume | undefined> {
  const listed = await client.list<PersistentVolume>(Resources.persistentVolumes, { fieldSelector: `metadata.name=${name}` });
  return listed.items.find((v) => v.metadata?.name === name);
}

/** When a Provisioning Event last showed activity (ProvisioningActivity.timeOf; by default its own timestamps). */
export type ActivityTime = (e: Event) => number;

export interface VerifyOptions {
  /** By default, an Event's own timestamps. */
  timeOf?: ActivityTime;
  /** How provisioners name a claim's volume (--provisioned-volume-names); by default `pvc-<uid>`. */
  volumeNames?: readonly VolumeNamePattern[];
}

async function read(client: KubeClient, g: NonNullable<ReturnType<typeof guardOf>>, opts: Required<VerifyOptions>): Promise<ServerView> {
  const a = g.action;
  if ((g.read === 'claim' && a.kind === 'volumePhase') || (g.read === 'takeBack' && a.kind === 'unbindVolume')) {
    const ref = a.volume.spec!.claimRef!;
    if (claimRefProblem(ref)) return { kind: 'claim', claim: undefined };
    return { kind: 'claim', claim: await getIfPresent<PersistentVolumeClaim>(client, Resources.persistentVolumeClaims, ref.name!, ref.namespace) };
  }
  if (g.read === 'placedPod' && (a.kind === 'bindVolume' || a.kind === 'annotateClaim') && a.forPlacedPod) {
    const c = a.claim.metadata;
    const placed = a.forPlacedPod;
    // Lists (the role lists pods and does not get them), projected as each page arrives: the placed
    // pod by name, and the namespace's pods no node is set for (kube-scheduler's own selector for
    // the pods it has to place), among which any other of the claim.
    const [byName, unplaced, claim] = await Promise.all([
      client.list<Pod>(Resources.pods, { namespace: placed.namespace, fieldSelector: `metadata.name=${placed.name}` }, projectPod),
      client.list<Pod>(Resources.pods, { namespace: placed.namespace, fieldSelector: 'spec.nodeName=' }, projectPod),
      getIfPresent<PersistentVolumeClaim>(client, Resources.persistentVolumeClaims, c?.name ?? '', c?.namespace),
    ]);
    const pod = byName.items.find((p) => p.metadata?.name === placed.name);
    const unscheduled = unplaced.items.filter((p) => isLivePod(p) && !p.spec?.nodeName && claimNamesOfPod(p).includes(c?.name ?? ''));
    return { kind: 'pod', pod, claim, unscheduled };
  }
  if (g.read === 'users' && a.kind === 'bindVolume') {
    // The namespace's pods on a node (nodeName set), projected as each page arrives; never a
    // cluster-wide list (no namespace: no pod can use the claim).
    const namespace = a.claim.metadata?.namespace;
    if (!namespace) return { kind: 'users', pods: [] };
    const onNodes = await client.list<Pod>(Resources.pods, { namespace, fieldSelector: 'spec.nodeName!=' }, projectPod);
    return { kind: 'users', pods: onNodes.items };
  }
  if (g.read === 'volume' && a.kind === 'claimPhase') return { kind: 'volume', volume: await volumeOnServer(client, a.claim.spec?.volumeName ?? '') };
  if (a.kind !== 'annotateClaim') throw new Error(`no server read for ${a.kind}`);
  const claim = a.claim.metadata;
  // Never a cluster-wide list, nor one matching Events that name no claim.
  if (!claim?.namespace || !claim.uid || !claim.name) throw new Error('a selected-node removal for a claim without namespace, name or uid');
  // The claim's own Provisioning Events, as the cache indexes them (binder-controller.ts): in its
  // namespace and naming it (eventsAbout), slim (anyone who may create Events there decides their size).
  const provisioning = client
    .list<Event>(Resources.events, { namespace: claim.namespace, fieldSelector: `${PROVISIONING_EVENTS},involvedObject.uid=${claim.uid}` }, slimEvent)
    .then((l) => eventsAbout(l.items, a.claim).filter((e) => e.involvedObject?.uid === claim.uid).map(opts.timeOf));
  // By name, each: never a list of all volumes (a tenant can make many claims with a stale node).
  const provisioned = Promise.all(provisionedVolumeNames(a.claim, opts.volumeNames).map((n) => volumeOnServer(client, n))).then((vs) =>
    vs.filter((v): v is PersistentVolume => v !== undefined),
  );
  // Projected as each page arrives: a namespace's pods are as large as their writers made them.
  if (g.read === 'pods') {
    const [pods, events, made] = await Promise.all([client.list<Pod>(Resources.pods, { namespace: claim.namespace }, projectPod), provisioning, provisioned]);
    return { kind: 'pods', pods: pods.items, provisioning: events, provisioned: made };
  }
  // A name no node can have names no node: never read (`""` would read the node list, `n/status` a
  // node's status, and either would refute the removal for ever).
  const nodeName = a.confirm?.node ?? '';
  const nodeRead = isDnsSubdomain(nodeName) ? getIfPresent<Node>(client, Resources.nodes, nodeName) : Promise.resolve(undefined);
  const [node, events, made] = await Promise.all([nodeRead, provisioning, provisioned]);
  return { kind: 'node', node, provisioning: events, provisioned: made };
}

/**
 * Reads from the server what the plan's guarded actions rest on. The first action the server
 * refutes, by its place in the plan and why, or undefined when every guarded action is confirmed.
 */
export async function verifyOnServer(client: KubeClient, actions: BinderAction[], options: VerifyOptions = {}): Promise<{ index: number; why: string; check: ServerCheck } | undefined> {
  const opts: Required<VerifyOptions> = { timeOf: options.timeOf ?? eventTime, volumeNames: options.volumeNames ?? DEFAULT_VOLUME_NAME_PATTERNS };
  for (const [index, a] of actions.entries()) {
    const g = guardOf(a);
    if (!g) continue;
    const why = refutation(g.action, await read(client, g, opts));
    if (why) return { index, why, check: CHECKS[g.read] };
  }
  return undefined;
}

/**
 * The server disagreed with the cache a decision was made on (see verifyOnServer): no HTTP error,
 * but the reconcile fails so that it is retried, with backoff, once the informers have caught up.
 */
export class StaleViewError extends Error {
  override readonly name = 'StaleViewError';
}

import { isNotFound, Resources, retryOnConflict } from '@topovol/shared';
import type { CSIStorageCapacity, KubeObject, Node, PersistentVolume } from '@topovol/shared';
import { parseQuantity } from '@topovol/shared';
import { eventually } from '@topovol/testing';
import { requireAllRunning } from './bench-cluster.js';
import type { BenchCluster } from './bench-cluster.js';
import { CAPACITY_NAMESPACE, claim, CLAIMS, FREE_B, NODE_A, pod, POD, PUBLISHED_A, REAL_A, storageClass, TOPOLOGY_KEY, volumeInUseEntry } from './story-objects.js';
import { StoryWatch } from './story-watch.js';
import type { Milestones, StoryFacts } from './story-watch.js';

export type StoryKind = 'rollback' | 'twin';

export interface StoryResult {
  kind: StoryKind;
  run: number;
  namespace: string;
  /** rollback: recovered or not; twin: rolled back (unsafe) or not; no-story: the failure never happened (a harness problem). */
  outcome: 'recovered' | 'not-recovered' | 'not-rolled-back' | 'rolled-back' | 'no-story';
  detail: string;
  at: Milestones;
  facts: StoryFacts;
  /** Twin: when the bench wrote the evidence of use (node a's status.volumesInUse). */
  evidenceAt?: number;
  /** Twin: how long after the failure it was watched. */
  watchedMs?: number;
}

export interface StoryOptions {
  /** rollback: from the failure until recovery; twin: from the failure, how long to watch. */
  windowMs: number;
}

/** Holds node a's second CreateVolume (the claim that will not fit) so that the evidence of use on the first volume comes before the failure. */
const TWIN_HOLD_MS = 5_000;
const STORY_START_TIMEOUT_MS = 180_000;
const say = (msg: string): void => void process.stderr.write(`[bench] ${msg}\n`);

/**
 * One run of kubernetes/kubernetes #94217 in a fresh namespace and StorageClass: a pod with two
 * claims is sent to node a, which has room for one; the first claim is provisioned there, the
 * second fails with ResourceExhausted and external-provisioner asks for rescheduling; the rollback
 * loop must undo the first so the scheduler can move the pod to node b. The twin is the same story
 * with node a reporting the first volume in use before the failure: it must not be undone.
 */
export async function runStory(c: BenchCluster, kind: StoryKind, run: number, opts: StoryOptions): Promise<StoryResult> {
  const ns = `rb-${kind}-${run}-${Date.now().toString(36)}`;
  const admin = c.admin;
  const watch = new StoryWatch(admin, ns);
  let evidenceAt: number | undefined;
  let evidenceError: string | undefined;
  try {
    // Each story starts from the same storage: a whole on both nodes, then class → published capacity.
    c.a.driver.setCapacity(c.a.segment, PUBLISHED_A);
    c.b.driver.setCapacity(c.b.segment, FREE_B);
    await admin.create<KubeObject>(Resources.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    await admin.create(Resources.storageClasses, storageClass(ns));
    await publishedCapacity(c, ns);
    // Now the stale part: node a loses all but room for one claim, outside Kubernetes.
    c.a.driver.setCapacity(c.a.segment, REAL_A);
    if (kind === 'twin') {
      // First CreateVolume on node a as usual, the second held (then ResourceExhausted).
      c.a.driver.injectFailure('CreateVolume', { delayMs: 0, times: 1 });
      c.a.driver.injectFailure('CreateVolume', { delayMs: TWIN_HOLD_MS, times: 1 });
      watch.onVolumeOnA = (pv) => {
        // What the kubelet reports once it has mounted the volume for a pod: evidence of use.
        setVolumesInUse(c, NODE_A, [volumeInUseEntry(pv)]).then(
          () => (evidenceAt = Date.now()),
          (err: unknown) => (evidenceError = err instanceof Error ? err.message : String(err)),
        );
      };
    }
    await watch.start();
    for (const name of CLAIMS) await admin.create(Resources.persistentVolumeClaims, claim(ns, name, ns));
    await admin.create(Resources.pods, pod(ns));

    const started = await until(c, () => watch.at.failed !== undefined || watch.at.podOnB !== undefined, STORY_START_TIMEOUT_MS);
    if (!started || watch.at.failed === undefined) {
      const why = started ? 'the pod went to node b without any failed provisioning' : `no ProvisioningFailed Event within ${STORY_START_TIMEOUT_MS / 1000} s`;
      return { kind, run, namespace: ns, outcome: 'no-story', detail: `${why}; the story did not happen`, at: watch.at, facts: watch.facts };
    }
    say(`${kind} ${run}: claim ${watch.facts.failedClaim} failed on node a (${watch.facts.failedMessage ?? ''})`);
    const t0 = watch.at.failed;
    if (kind === 'rollback') {
      const ok = await until(c, () => watch.at.recovered !== undefined, opts.windowMs);
      const detail = ok ? `recovered ${((watch.at.recovered! - t0) / 1000).toFixed(1)} s after the failure` : `not recovered within ${(opts.windowMs / 1000).toFixed(0)} s of the failure`;
      return { kind, run, namespace: ns, outcome: ok ? 'recovered' : 'not-recovered', detail, at: watch.at, facts: watch.facts };
    }
    await until(c, () => watch.at.rollback !== undefined || watch.at.claimRecreated !== undefined, opts.windowMs);
    if (evidenceError) throw new Error(`writing node a's volumesInUse failed: ${evidenceError}`);
    const rolledBack = watch.at.rollback !== undefined || watch.at.claimRecreated !== undefined;
    const detail = rolledBack ? 'ROLLED BACK although node a reported the volume in use' : `not rolled back within ${(opts.windowMs / 1000).toFixed(0)} s of the failure`;
    return { kind, run, namespace: ns, outcome: rolledBack ? 'rolled-back' : 'not-rolled-back', detail, at: watch.at, facts: watch.facts, evidenceAt, watchedMs: Date.now() - t0 };
  } finally {
    c.a.driver.clearFailures();
    await cleanUp(c, ns, watch);
    await watch.stop();
  }
}

/** Polls `done` until it holds or the timeout passes; throws if a component died meanwhile. */
async function until(c: BenchCluster, done: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    requireAllRunning(c);
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 50));
  }
  return true;
}

/** Waits until both external-provisioners published the class's capacity as the drivers have it now. */
async function publishedCapacity(c: BenchCluster, cls: string): Promise<void> {
  const want = new Map([
    [c.a.name, Number(PUBLISHED_A)],
    [c.b.name, Number(FREE_B)],
  ]);
  await eventually(
    async () => {
      requireAllRunning(c);
      const list = await c.admin.list<CSIStorageCapacity>(Resources.csiStorageCapacities, { namespace: CAPACITY_NAMESPACE });
      for (const [node, bytes] of want) {
        const got = list.items.find((x) => x.storageClassName === cls && x.nodeTopology?.matchLabels?.[TOPOLOGY_KEY] === node);
        if (!got?.capacity || parseQuantity(got.capacity) !== bytes) throw new Error(`capacity for ${node} not published yet (${got?.capacity ?? 'none'})`);
      }
    },
    60_000,
    200,
  );
}

async function setVolumesInUse(c: BenchCluster, node: string, entries: string[]): Promise<void> {
  await retryOnConflict(async () => {
    const n = await c.admin.get<Node>(Resources.nodes, node);
    n.status = { ...n.status, volumesInUse: entries };
    await c.admin.replaceStatus(Resources.nodes, n);
  });
}

/**
 * Leaves nothing for the next story: the pod and claims go, the provisioners delete the volumes
 * (reclaim policy Delete), then the class and namespace. Throws if a volume stays.
 */
async function cleanUp(c: BenchCluster, ns: string, watch: StoryWatch): Promise<void> {
  const ignoreMissing = (err: unknown): void => {
    if (!isNotFound(err)) throw err;
  };
  await setVolumesInUse(c, NODE_A, []);
  await c.admin.delete(Resources.pods, POD, ns, { gracePeriodSeconds: 0 }).catch(ignoreMissing);
  for (const name of CLAIMS) await c.admin.delete(Resources.persistentVolumeClaims, name, ns).catch(ignoreMissing);
  try {
    await eventually(
      () => {
        const left = watch.liveVolumes().map((v: PersistentVolume) => `${v.metadata?.name} (${v.status?.phase})`);
        const onDrivers = [...c.a.driver.volumes(), ...c.b.driver.volumes()].length;
        if (left.length > 0 || onDrivers > 0) throw new Error(`still there: PVs ${left.join(', ') || 'none'}, ${onDrivers} driver volumes`);
      },
      180_000,
      200,
    );
  } catch (err) {
    throw new Error(`cleaning up ${ns}: ${err instanceof Error ? err.message : String(err)}`);
  }
  await c.admin.delete(Resources.storageClasses, ns).catch(ignoreMissing);
  await c.admin.delete(Resources.namespaces, ns).catch(ignoreMissing);
}

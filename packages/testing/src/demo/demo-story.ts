// The demo's story, one step per thing Topovol is for. Each step creates its objects, waits for the
// end state on the API server, and says what happened in one line.
import type { KubeClient } from '@topovol/shared';
import { Resources } from '@topovol/shared';
import type { PersistentVolume, PersistentVolumeClaim, Pod } from '@topovol/shared';
import { LABEL_BETA_REGION, LABEL_BETA_ZONE } from '@topovol/shared';
import { eventually } from '../eventually.js';
import { eventsAbout } from '../stack/scheduling-outcome.js';
import { createStoryPod, STORY_CLAIMS, STORY_POD } from '../stack/stale-capacity-story.js';
import type { StaleCapacityStory } from '../stack/stale-capacity-story.js';
import { claim, delayedClass, NO_PROVISIONER, podWithClaims, preferNodes, volumeTopology, ZONE } from '../stack/stack-objects.js';
import type { StorageStack } from '../stack/storage-stack.js';

export const DEMO_NS = 'demo';
export const DEMO_DRIVER = 'demo.csi.topovol.dev';
export const DEMO_NODE_KEY = 'topology.demo.csi.topovol.dev/node';
export const [NODE_1, NODE_2, NODE_3] = ['demo-node-1', 'demo-node-2', 'demo-node-3'] as const;
/** The default pool's class: room on nodes 1 and 2, node 3 full. */
export const FAST_CLASS = 'demo-fast';
export const LEGACY_CLASS = 'demo-legacy';
export const LEGACY_PV = 'demo-legacy-zonal';
/** The #94217 story: node 3 published room in pool "story" it no longer has; node 2 really has room. */
export const STORY: StaleCapacityStory = { ns: DEMO_NS, cls: 'demo-story', full: NODE_3, roomy: NODE_2 };

export interface DemoContext {
  stack: StorageStack;
  say: (line: string) => void;
}

const WAIT_MS = 180_000;

async function until<T>(ctx: DemoContext, what: string, check: () => Promise<T>): Promise<T> {
  try {
    return await eventually(async () => {
      ctx.stack.requireAllRunning();
      return check();
    }, WAIT_MS, 250);
  } catch (err) {
    throw new Error(`${what}: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/** The pod's node and its claim's volume, once the pod is scheduled and the claim Bound. */
async function placed(ctx: DemoContext, pod: string, claimName: string): Promise<{ node: string; volume: PersistentVolume }> {
  const admin = ctx.stack.admin;
  return until(ctx, `pod ${pod} scheduled with claim ${claimName} Bound`, async () => {
    const p = await admin.get<Pod>(Resources.pods, pod, DEMO_NS);
    const c = await admin.get<PersistentVolumeClaim>(Resources.persistentVolumeClaims, claimName, DEMO_NS);
    if (!p.spec?.nodeName || c.status?.phase !== 'Bound') throw new Error(`pod on ${p.spec?.nodeName ?? 'no node'}, claim ${c.status?.phase ?? '?'}`);
    return { node: p.spec.nodeName, volume: await admin.get<PersistentVolume>(Resources.persistentVolumes, c.spec!.volumeName!) };
  });
}

/** The classes of the story, created before it starts; the rollback step's stale figure must be older than a refresh interval. */
export async function createClasses(admin: KubeClient): Promise<void> {
  await admin.create(Resources.storageClasses, delayedClass(FAST_CLASS, DEMO_DRIVER));
  await admin.create(Resources.storageClasses, delayedClass(LEGACY_CLASS, NO_PROVISIONER));
}

export async function delayedBinding(ctx: DemoContext): Promise<void> {
  const admin = ctx.stack.admin;
  await admin.create(Resources.persistentVolumeClaims, claim(DEMO_NS, 'web-data', '1Gi', FAST_CLASS));
  await admin.create(Resources.pods, podWithClaims(DEMO_NS, 'web', ['web-data']));
  const { node, volume } = await placed(ctx, 'web', 'web-data');
  ctx.say(`1. Delayed binding (KEP-490): claim web-data (WaitForFirstConsumer) waited for pod web; kube-scheduler chose ${node}, ${node}'s external-provisioner created ${volume.metadata?.name} there, and Topovol bound the claim to it.`);
}

export async function capacityPlacement(ctx: DemoContext): Promise<void> {
  const admin = ctx.stack.admin;
  const published = await ctx.stack.publishedCapacity(FAST_CLASS);
  const figures = [...published].sort(([a], [b]) => (a < b ? -1 : 1)).map(([n, c]) => `${n} ${c.capacity ?? '?'}`);
  await admin.create(Resources.persistentVolumeClaims, claim(DEMO_NS, 'big-data', '5Gi', FAST_CLASS));
  await admin.create(Resources.pods, podWithClaims(DEMO_NS, 'big', ['big-data'], { affinity: preferNodes(DEMO_NODE_KEY, NODE_3) }));
  const { node } = await placed(ctx, 'big', 'big-data');
  ctx.say(`2. Capacity tracking (KEP-1472): Topovol's per-node capacity instances publish ${FAST_CLASS}: ${figures.join(', ')}; pod big prefers ${NODE_3}, which has no room, so kube-scheduler placed it on ${node} at the first attempt.`);
}

export async function rollback(ctx: DemoContext): Promise<void> {
  const admin = ctx.stack.admin;
  await createStoryPod(ctx.stack, STORY);
  await until(ctx, `pod ${STORY_POD} on ${STORY.roomy} with both claims Bound there`, async () => {
    const p = await admin.get<Pod>(Resources.pods, STORY_POD, DEMO_NS);
    if (p.spec?.nodeName !== STORY.roomy) throw new Error(`pod on ${p.spec?.nodeName ?? 'no node'}`);
    for (const c of STORY_CLAIMS) {
      const pvc = await admin.get<PersistentVolumeClaim>(Resources.persistentVolumeClaims, c, DEMO_NS);
      const pv = pvc.spec?.volumeName ? await admin.get<PersistentVolume>(Resources.persistentVolumes, pvc.spec.volumeName) : undefined;
      if (pvc.status?.phase !== 'Bound' || !pv || volumeTopology(pv, DEMO_NODE_KEY) !== STORY.roomy) throw new Error(`claim ${c} not Bound on ${STORY.roomy}`);
    }
  });
  const rolledBack = await eventsAbout(admin, DEMO_NS, 'Pod', STORY_POD, 'ProvisioningRollback');
  ctx.say(
    `3. Provisioning rollback (kubernetes #94217): ${STORY.full} had published room for both 1Gi claims of pod ${STORY_POD} but really had room for one; ` +
      `one was provisioned there, the other failed, and the first volume pinned the pod to ${STORY.full}. ` +
      `Topovol rolled back the unused volume${rolledBack.length > 1 ? ` (${rolledBack.length} times: the scheduler tried ${STORY.full} again before its figure was refreshed)` : ''} and the pod moved to ${STORY.roomy}, both claims Bound there. The Events:`,
  );
  for (const line of await storyEvents(admin)) ctx.say(`     ${line}`);
}

/** The Events that tell the story, in order, as `kubectl get events -n demo` lists them. */
async function storyEvents(admin: KubeClient): Promise<string[]> {
  const wanted = new Set(['ProvisioningFailed', 'ProvisioningRollback', 'ClaimRecreated', 'ProvisioningRollbackCompleted', 'Scheduled', 'ProvisioningSucceeded']);
  const about = [['Pod', STORY_POD], ...STORY_CLAIMS.map((c) => ['PersistentVolumeClaim', c])] as const;
  const events = (await Promise.all(about.map(([kind, name]) => eventsAbout(admin, DEMO_NS, kind, name)))).flat().filter((e) => wanted.has(e.reason ?? ''));
  const at = (e: (typeof events)[number]): string => e.lastTimestamp ?? e.eventTime ?? e.firstTimestamp ?? '';
  return events
    .sort((a, b) => (at(a) < at(b) ? -1 : at(a) > at(b) ? 1 : 0))
    .map((e) => `${at(e).slice(11, 19)}  ${e.type?.padEnd(7)} ${e.reason?.padEnd(29)} ${e.involvedObject.kind === 'Pod' ? 'pod' : 'pvc'}/${e.involvedObject.name}: ${(e.message ?? '').slice(0, 140)}`);
}

export async function zonalUpgrade(ctx: DemoContext): Promise<void> {
  const admin = ctx.stack.admin;
  await admin.create<PersistentVolume>(Resources.persistentVolumes, {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name: LEGACY_PV, labels: { [LABEL_BETA_ZONE]: 'zone-a', [LABEL_BETA_REGION]: 'demo-region' } },
    spec: { capacity: { storage: '20Gi' }, accessModes: ['ReadWriteOnce'], persistentVolumeReclaimPolicy: 'Retain', storageClassName: LEGACY_CLASS, csi: { driver: 'legacy-disk.example.com', volumeHandle: 'disk-0042' } },
  });
  await until(ctx, `volume ${LEGACY_PV} upgraded`, async () => {
    const pv = await admin.get<PersistentVolume>(Resources.persistentVolumes, LEGACY_PV);
    if (!pv.spec?.nodeAffinity) throw new Error('no nodeAffinity yet');
    if ((await eventsAbout(admin, 'default', 'PersistentVolume', LEGACY_PV, 'ZonalLabelsConverted')).length === 0) throw new Error('no ZonalLabelsConverted Event yet');
  });
  await admin.create(Resources.persistentVolumeClaims, claim(DEMO_NS, 'legacy-data', '20Gi', LEGACY_CLASS));
  await admin.create(Resources.pods, podWithClaims(DEMO_NS, 'legacy-app', ['legacy-data'], { affinity: preferNodes(ZONE, 'zone-b') }));
  const { node, volume } = await placed(ctx, 'legacy-app', 'legacy-data');
  ctx.say(
    `4. Zonal upgrade (KEP-490): volume ${LEGACY_PV} had only legacy zone labels (zone-a); Topovol wrote the same rule as spec.nodeAffinity (Event ZonalLabelsConverted), ` +
      `so pod legacy-app, though it prefers zone-b, was scheduled on ${node} in zone-a with its claim Bound to ${volume.metadata?.name}.`,
  );
}

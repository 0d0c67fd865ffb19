import { logger, quantityBytes, Resources } from '@topovol/shared';
import type { CSINode, CSIStorageCapacity, KubeObject, Node, PersistentVolume, StorageClass } from '@topovol/shared';
import { CapacityLoop } from '../../src/capacity-loop.js';
import type { CapacityLoopOptions } from '../../src/capacity-loop.js';
import type { CapacityEntry, StatusCondition } from '../../src/status/capacity-entry.js';
import { fakeInformers, FakeCapacityQueue, FakeMeter, FakeObjectStore } from './capacity-fakes.js';
import type { FakeInformers } from './capacity-fakes.js';

/** One node of a driver with node-local storage, its classes and volumes, for the loop's unit tests. */
export const DRIVER = 'test.csi.topovol.io';
export const NS = 'topovol-system';
export const NODE_KEY = 'topology.test/node';
export const GiB = 1n << 30n;
export const MIN_REFRESH_MS = 5_000;

export const node: Node = { metadata: { name: 'n1', labels: { [NODE_KEY]: 'n1' } } };
export const csiNode: CSINode = { metadata: { name: 'n1' }, spec: { drivers: [{ name: DRIVER, nodeID: 'n1', topologyKeys: [NODE_KEY] }] } };
export const sc = (name: string): StorageClass => ({ metadata: { name }, provisioner: DRIVER, volumeBindingMode: 'WaitForFirstConsumer', parameters: { type: 'lvm' } });
export const pv = (name: string): PersistentVolume => ({
  metadata: { name },
  spec: {
    csi: { driver: DRIVER, volumeHandle: name },
    nodeAffinity: { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: NODE_KEY, operator: 'In', values: ['n1'] }] }] } },
  },
});

export const loopOptions = (queue: FakeCapacityQueue): CapacityLoopOptions => ({
  driverName: DRIVER,
  immediateBinding: false,
  ephemeral: false,
  mode: { kind: 'csinode' },
  identity: { driverName: DRIVER, managedBy: 'topovol-capacity', namespace: NS },
  pollIntervalMs: 60_000,
  minRefreshMs: MIN_REFRESH_MS,
  statusRefreshMs: 20_000,
  now: () => queue.now,
});

/** An Event the loop recorded (fakeLoop's recorder keeps them all). */
export interface RecordedEvent {
  kind: string;
  name: string;
  type: string;
  reason: string;
  message: string;
}

/**
 * A loop over fake informers, store and meter, registered; `statusEntries` is what it last
 * published to the aggregated status, `events` what it recorded.
 */
export function fakeLoop(
  meter = new FakeMeter({ available: 10n * GiB }),
  options: Partial<CapacityLoopOptions> = {},
): { queue: FakeCapacityQueue; meter: FakeMeter; store: FakeObjectStore; inf: FakeInformers; loop: CapacityLoop; statusEntries: () => readonly CapacityEntry[]; statusConditions: () => readonly StatusCondition[]; events: readonly RecordedEvent[]; statusFailure: { err?: Error; pruneErr?: Error } } {
  const queue = new FakeCapacityQueue();
  const store = new FakeObjectStore();
  const inf = fakeInformers();
  store.watch(Resources.csiStorageCapacities, inf.objects);
  let last: readonly CapacityEntry[] = [];
  let lastConditions: readonly StatusCondition[] = [];
  /** Set `err` to have the status writes fail with it (a refusal, say), `pruneErr` the prunes. */
  const statusFailure: { err?: Error; pruneErr?: Error } = {};
  const status = {
    publish: (entries: readonly CapacityEntry[], conditions: readonly StatusCondition[]) => {
      if (statusFailure.err !== undefined) return Promise.reject(statusFailure.err);
      last = entries;
      lastConditions = conditions;
      return Promise.resolve({ wrote: false });
    },
    pruneExpired: () => (statusFailure.pruneErr ? Promise.reject(statusFailure.pruneErr) : Promise.resolve(0)),
  };
  const events: RecordedEvent[] = [];
  const recorder = {
    event: (o: KubeObject, type: string, reason: string, message: string) => {
      events.push({ kind: o.kind ?? '', name: o.metadata?.name ?? '', type, reason, message });
      return true;
    },
  };
  const loop = new CapacityLoop(inf, meter, store, status, recorder, queue, { ...loopOptions(queue), ...options }, logger());
  loop.register();
  return { queue, meter, store, inf, loop, statusEntries: () => last, statusConditions: () => lastConditions, events, statusFailure };
}

/** The published objects as [class, bytes], by class. */
export function publishedFigures(store: FakeObjectStore): [string | undefined, bigint | undefined][] {
  return store
    .list<CSIStorageCapacity>(Resources.csiStorageCapacities)
    .map((o): [string | undefined, bigint | undefined] => [o.storageClassName, quantityBytes(o.capacity)])
    .sort(([a], [b]) => String(a).localeCompare(String(b)));
}

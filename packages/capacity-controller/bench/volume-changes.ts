import { setTimeout as sleep } from 'node:timers/promises';
import { isNotFound, Resources } from '@topovol/shared';
import type { PersistentVolume, PersistentVolumeClaim } from '@topovol/shared';
import { eventually } from '@topovol/testing';
import type { BenchCluster } from './bench-cluster.js';
import type { BenchOptions } from './bench-flags.js';
import { affectedClasses, CLAIM_NAMESPACE, claimOn, outsideVolume, poolOf, VOLUME_BYTES } from './bench-objects.js';
import type { CapacityWatch, Wanted } from './capacity-watch.js';
import type { BenchNode } from './node-drivers.js';

/**
 * provisioned: a claim on the node is provisioned by its external-provisioner (CreateVolume), and
 * deleted again (the claim deleted, the released volume deleted: DeleteVolume). outside: a static
 * PV of the driver on the node is created and deleted, and the driver's free space changed with it.
 */
export type ChangeKind = 'provisioned' | 'outside';

export interface ChangeResult {
  kind: ChangeKind;
  op: 'create' | 'delete';
  node: string;
  cls: string;
  /** When the driver started answering with the new figure. */
  t0?: number;
  /** When the bench's watch saw every affected object with it; undefined if not within the timeout. */
  seenAt?: number;
  error?: string;
}

const say = (msg: string): void => void process.stderr.write(`[bench] ${msg}\n`);

/**
 * Arms the node: the next change of its driver's free space is t0, and from that same instant the
 * watch waits for the affected objects to show the driver's new figures. Resolves with t0 and the
 * moment they did (or without t0 if the driver saw no change within the timeout).
 */
function arm(o: BenchOptions, c: BenchCluster, watch: CapacityWatch, n: BenchNode, cls: string, timeoutMs: number): Promise<{ t0?: number; seenAt?: number }> {
  return new Promise((resolve) => {
    const noChange = setTimeout(() => {
      n.onCapacityChange = undefined;
      resolve({});
    }, timeoutMs);
    n.onCapacityChange = (t0) => {
      clearTimeout(noChange);
      const wanted: Wanted[] = affectedClasses(o.pools, cls, c.classes).map((k) => ({ node: n.name, cls: k, bytes: Number(n.driver.capacityOf(n.segment, poolOf(o.pools, k)) ?? -1n) }));
      void watch.until(wanted, timeoutMs).then((seenAt) => resolve({ t0, seenAt }));
    };
  });
}

async function claimBound(c: BenchCluster, name: string): Promise<void> {
  await eventually(
    async () => {
      const claim = await c.admin.get<PersistentVolumeClaim>(Resources.persistentVolumeClaims, name, CLAIM_NAMESPACE);
      if (claim.status?.phase !== 'Bound') throw new Error(`claim ${name} is ${claim.status?.phase ?? 'new'}`);
    },
    120_000,
    200,
  );
}

async function gone(c: BenchCluster, check: () => Promise<boolean>, what: string): Promise<void> {
  await eventually(
    async () => {
      if (!(await check())) throw new Error(`${what} still there`);
    },
    120_000,
    200,
  );
}

const pvGone = (c: BenchCluster, name: string) => async (): Promise<boolean> =>
  c.admin.get<PersistentVolume>(Resources.persistentVolumes, name).then(
    () => false,
    (err: unknown) => (isNotFound(err) ? true : Promise.reject(err instanceof Error ? err : new Error(String(err)))),
  );

/** The volumes made for this claim, by the claimRef external-provisioner sets. */
async function claimVolumesGone(c: BenchCluster, claim: string): Promise<boolean> {
  const pvs = await c.admin.list<PersistentVolume>(Resources.persistentVolumes);
  return !pvs.items.some((pv) => pv.spec?.claimRef?.namespace === CLAIM_NAMESPACE && pv.spec.claimRef.name === claim);
}

/** One change: arms the node, makes the change, waits for the objects, then for the cluster to be tidy before the next. */
async function timed(
  o: BenchOptions,
  c: BenchCluster,
  watch: CapacityWatch,
  base: Omit<ChangeResult, 't0' | 'seenAt'>,
  n: BenchNode,
  make: () => Promise<void>,
  tidy: () => Promise<void>,
): Promise<ChangeResult> {
  const armed = arm(o, c, watch, n, base.cls, o.changeTimeoutMs);
  try {
    await make();
  } catch (err) {
    n.onCapacityChange = undefined;
    return { ...base, error: err instanceof Error ? err.message : String(err) };
  }
  const { t0, seenAt } = await armed;
  const result: ChangeResult = { ...base, ...(t0 !== undefined ? { t0 } : {}), ...(seenAt !== undefined ? { seenAt } : {}) };
  if (t0 === undefined) result.error = 'the driver saw no change';
  try {
    await tidy();
  } catch (err) {
    result.error = `${result.error ? `${result.error}; ` : ''}${err instanceof Error ? err.message : String(err)}`;
  }
  const ms = t0 !== undefined && seenAt !== undefined ? `${seenAt - t0} ms` : 'not seen';
  say(`${base.kind} ${base.op} on ${n.name} (${base.cls}): ${ms}${result.error ? ` (${result.error})` : ''}`);
  return result;
}

/**
 * Nodes and classes of the changes: each change of a round on a node of its own (so concurrent
 * changes never share a driver or an instance), spread over the nodes and classes, the two kinds
 * on different nodes where there are enough.
 */
function targets(o: BenchOptions, c: BenchCluster, kind: ChangeKind): { n: BenchNode; cls: string }[] {
  const pairs = Math.floor(o.changes / 2);
  const offset = kind === 'provisioned' ? 0.25 : 0.75;
  return Array.from({ length: pairs }, (_, p) => ({
    n: c.nodes[Math.floor(((p + offset) * c.nodes.length) / pairs) % c.nodes.length]!,
    cls: c.classes[(p + (kind === 'provisioned' ? 0 : 1)) % c.classes.length]!,
  }));
}

/**
 * One round (the creates, or the deletes) of one kind: each change on its own node, started at a
 * random offset within --spread (default the poll interval). Polls run on their own clocks
 * (external-provisioner: one ticker per process; Topovol: per item, from its last refresh), so
 * only offsets that owe nothing to the schedule sample every point of the poll cycle; evenly
 * spaced ones keep a fixed phase to the items' previous refreshes. The random sequence is seeded,
 * so both contenders get the same schedule.
 */
function round(o: BenchOptions, plan: readonly { n: BenchNode; cls: string }[], random: () => number, one: (p: number, n: BenchNode, cls: string) => Promise<ChangeResult>): Promise<ChangeResult[]> {
  const offsets = plan.map(() => Math.round(random() * o.spreadMs));
  return Promise.all(
    plan.map(async ({ n, cls }, p) => {
      await sleep(offsets[p]);
      return one(p, n, cls);
    }),
  );
}

/** A round of creates, a rest of --settle, a round deleting them again, and a rest again. */
export async function runChanges(o: BenchOptions, c: BenchCluster, watch: CapacityWatch, kind: ChangeKind, random: () => number): Promise<ChangeResult[]> {
  const plan = targets(o, c, kind);
  const name = (p: number): string => `${kind}-${p}`;
  const creates = await round(o, plan, random, (p, n, cls) => {
    const base = { kind, op: 'create' as const, node: n.name, cls };
    if (kind === 'provisioned') {
      return timed(o, c, watch, base, n, () => c.admin.create(Resources.persistentVolumeClaims, claimOn(name(p), n.name, cls)).then(() => undefined), () => claimBound(c, name(p)));
    }
    const pool = poolOf(o.pools, cls);
    const make = async (): Promise<void> => {
      n.driver.setCapacity(n.segment, (n.driver.capacityOf(n.segment, pool) ?? 0n) - VOLUME_BYTES, { pool });
      await c.admin.create(Resources.persistentVolumes, outsideVolume(name(p), n.name, cls));
    };
    return timed(o, c, watch, base, n, make, () => Promise.resolve());
  });
  await sleep(o.settleMs);
  const deletes = await round(o, plan, random, (p, n, cls) => {
    const base = { kind, op: 'delete' as const, node: n.name, cls };
    if (kind === 'provisioned') {
      return timed(o, c, watch, base, n, () => c.admin.delete(Resources.persistentVolumeClaims, name(p), CLAIM_NAMESPACE), () => gone(c, () => claimVolumesGone(c, name(p)), `the volume of ${name(p)}`));
    }
    const pool = poolOf(o.pools, cls);
    const make = async (): Promise<void> => {
      n.driver.setCapacity(n.segment, (n.driver.capacityOf(n.segment, pool) ?? 0n) + VOLUME_BYTES, { pool });
      await c.admin.delete(Resources.persistentVolumes, name(p));
    };
    return timed(o, c, watch, base, n, make, () => gone(c, pvGone(c, name(p)), `PV ${name(p)}`));
  });
  await sleep(o.settleMs);
  return [...creates, ...deletes];
}

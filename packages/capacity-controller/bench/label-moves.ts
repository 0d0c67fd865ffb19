import { setTimeout as sleep } from 'node:timers/promises';
import { Resources } from '@topovol/shared';
import type { KubeObject } from '@topovol/shared';
import type { CapacityWatch, Wanted } from './capacity-watch.js';
import { nodeName } from './bench-objects.js';
import { MOVED_BYTES, movedZone, ZONE_KEY } from './labels-cluster.js';
import type { LabelsCluster } from './labels-cluster.js';
import type { LabelsBenchOptions } from './labels-flags.js';

/** move: a node relabelled into a zone of its own (a new segment); back: into its old zone again (the segment goes). */
export type MoveOp = 'move' | 'back';

export interface MoveResult {
  op: MoveOp;
  node: string;
  /** The moved-to zone: the segment that appears, then goes. */
  zone: string;
  /** Just before the label write was sent. */
  t0?: number;
  /** The bench's watch event after which every class's object of the zone was there with the driver's figure (move) or gone (back). */
  seenAt?: number;
  /** move: the GetCapacity calls the driver had got for the new segment by then (none before the move: no node was in it). */
  getCapacityCalls?: number;
  error?: string;
}

const say = (msg: string): void => void process.stderr.write(`[bench] ${msg}\n`);

/**
 * The nodes moved, one per move: the first --moves nodes, so with nodes round-robin over the zones
 * each zone keeps one that stays (the flags check --moves ≤ --nodes − --zones): the moves create
 * and remove only the moved-to segments.
 */
export const movedNodes = (o: LabelsBenchOptions): string[] => Array.from({ length: o.moves }, (_, p) => nodeName(p));

async function timedMove(o: LabelsBenchOptions, c: LabelsCluster, watch: CapacityWatch, op: MoveOp, p: number): Promise<MoveResult> {
  const node = nodeName(p);
  const zone = movedZone(p);
  const wanted: Wanted[] = c.classes.map((cls) => ({ node: zone, cls, bytes: op === 'move' ? Number(MOVED_BYTES) : null }));
  const seen = watch.until(wanted, o.changeTimeoutMs);
  const t0 = Date.now();
  try {
    await c.admin.patch<KubeObject>(Resources.nodes, node, undefined, 'merge', { metadata: { labels: { [ZONE_KEY]: op === 'move' ? zone : c.zones.get(node)! } } });
  } catch (err) {
    return { op, node, zone, error: err instanceof Error ? err.message : String(err) };
  }
  const seenAt = await seen;
  const calls = op === 'move' ? c.driver.getCapacityRequests().filter((r) => r.accessibleTopology?.[ZONE_KEY] === zone).length : undefined;
  const r: MoveResult = {
    op,
    node,
    zone,
    t0,
    ...(seenAt !== undefined ? { seenAt: Math.max(seenAt, t0) } : { error: 'not seen within the timeout' }),
    ...(calls !== undefined ? { getCapacityCalls: calls } : {}),
  };
  say(`${op} ${node} ${op === 'move' ? 'to' : 'from'} ${zone}: ${seenAt !== undefined ? `${r.seenAt! - t0} ms` : 'not seen'}`);
  return r;
}

/**
 * A round of moves, each node at a seeded random offset within --spread (polls run on their own
 * clocks; only offsets that owe nothing to the schedule sample the whole poll cycle), --settle, a
 * round moving them back, --settle. The same schedule for both contenders.
 */
export async function runMoves(o: LabelsBenchOptions, c: LabelsCluster, watch: CapacityWatch, random: () => number): Promise<MoveResult[]> {
  const out: MoveResult[] = [];
  for (const op of ['move', 'back'] as const) {
    const offsets = Array.from({ length: o.moves }, () => Math.round(random() * o.spreadMs));
    out.push(
      ...(await Promise.all(
        offsets.map(async (offset, p) => {
          await sleep(offset);
          return timedMove(o, c, watch, op, p);
        }),
      )),
    );
    await sleep(o.settleMs);
  }
  return out;
}

import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { cpuSeconds, seededRandom } from '@topovol/testing';
import type { ContenderName } from './bench-flags.js';
import { className, INITIAL_BYTES } from './bench-objects.js';
import { CapacityWatch } from './capacity-watch.js';
import type { Wanted } from './capacity-watch.js';
import { installNamespace } from './identities.js';
import { runMoves } from './label-moves.js';
import type { MoveResult } from './label-moves.js';
import { startLabelsCluster, startLabelsContender, ZONE_KEY, zoneName } from './labels-cluster.js';
import type { LabelsBenchOptions } from './labels-flags.js';
import { measureRest } from './rest-window.js';
import type { RestResult } from './rest-window.js';

export interface LabelsRun {
  name: ContenderName;
  /** The audit log's user of the publisher. */
  publisherUser: string;
  /** Process start → every (zone, class) object published with its figure. */
  publishedMs?: number;
  /** CPU (utime + stime) the process had used by then. */
  startCpuSeconds?: number;
  moves: MoveResult[];
  rest?: RestResult;
  /** The publisher's command line, from /proc. */
  commandLine?: string;
  failure?: string;
}

const say = (msg: string): void => void process.stderr.write(`[bench] ${msg}\n`);

/** One contender on a fresh control plane: start, publish, the moves, then the quiet window. */
export async function runLabelsContender(name: ContenderName, o: LabelsBenchOptions, provisionerBinary: string): Promise<LabelsRun> {
  const c = await startLabelsCluster(name, o);
  const watch = new CapacityWatch(c.admin, installNamespace(), ZONE_KEY);
  const run: LabelsRun = { name, publisherUser: '', moves: [] };
  try {
    await watch.start();
    const began = Date.now();
    const { proc, user } = await startLabelsContender(name, o, c, provisionerBinary);
    run.publisherUser = user;
    const all: Wanted[] = Array.from({ length: o.zones }, (_, k) => zoneName(k)).flatMap((z) => Array.from({ length: o.classes }, (_, j) => ({ node: z, cls: className(j), bytes: Number(INITIAL_BYTES) })));
    const at = await watch.until(all, 5 * 60_000);
    if (at === undefined) throw new Error(`${proc.name} did not publish every (zone, class) object within 5m (${watch.objectCount()} of ${all.length}); its log (${proc.logFile}):\n${proc.logTail(30)}`);
    run.publishedMs = at - began;
    if (proc.pid !== undefined) {
      run.startCpuSeconds = cpuSeconds(proc.pid) ?? 0;
      run.commandLine = readFileSync(`/proc/${proc.pid}/cmdline`, 'utf8').split('\0').filter((a) => a !== '').join(' ');
    }
    say(`${name}: all ${all.length} objects published ${(run.publishedMs / 1000).toFixed(1)} s after start; settling ${o.settleMs / 1000} s`);
    await sleep(o.settleMs);
    run.moves = await runMoves(o, c, watch, seededRandom(o.seed));
    if (!proc.running) throw new Error(`${proc.name} exited; its log (${proc.logFile}):\n${proc.logTail(30)}`);
    if (o.quietMs > 0) {
      say(`${name}: counting requests at rest for ${o.quietMs / 1000} s`);
      run.rest = await measureRest(c.cp.auditLogPath, [user], [proc], [], [c.driver], o.quietMs);
    }
    if (!proc.running) throw new Error(`${proc.name} exited; its log (${proc.logFile}):\n${proc.logTail(30)}`);
  } catch (err) {
    run.failure = err instanceof Error ? err.message : String(err);
    say(`${name}: ${run.failure}`);
  } finally {
    await watch.stop();
    await c.stop();
  }
  return run;
}

import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { machineCpuSeconds, seededRandom } from '@topovol/testing';
import type { ManagedProcess } from '@topovol/testing';
import { startBenchCluster } from './bench-cluster.js';
import type { BenchOptions, ContenderName } from './bench-flags.js';
import { INITIAL_BYTES } from './bench-objects.js';
import { CapacityWatch } from './capacity-watch.js';
import type { Wanted } from './capacity-watch.js';
import { startContender } from './contenders.js';
import type { InstanceStart } from './contenders.js';
import { installNamespace } from './identities.js';
import { measureRest } from './rest-window.js';
import type { RestResult } from './rest-window.js';
import { runChanges } from './volume-changes.js';
import type { ChangeResult } from './volume-changes.js';

export interface ContenderRun {
  name: ContenderName;
  instances: number;
  /** First capacity instance started → every (node, class) object published with its initial figure. */
  publishedAllMs?: number;
  /** Each instance's own start, to its objects published (started --start-concurrency at a time). */
  starts: InstanceStart[];
  changes: ChangeResult[];
  rest?: RestResult;
  publisherUser: string;
  companionUser?: string;
  /** The command lines of one node's processes, from /proc (what really ran). */
  commandLines: string[];
  /** Busy share of the whole machine from the first change to the last (other work shares the cores). */
  changesMachineBusy?: number;
  /** Why the run stopped early, if it did. */
  failure?: string;
}

const say = (msg: string): void => void process.stderr.write(`[bench] ${msg}\n`);

/** A process's command line as the kernel has it, so the report shows what really ran. */
function commandLine(p: ManagedProcess): string | undefined {
  try {
    return p.pid === undefined ? undefined : readFileSync(`/proc/${p.pid}/cmdline`, 'utf8').split('\0').filter((a) => a !== '').join(' ');
  } catch {
    return undefined;
  }
}

/** Throws with the log tail of the first process that died. */
function requireRunning(procs: readonly ManagedProcess[]): void {
  const dead = procs.find((p) => !p.running);
  if (dead) throw new Error(`${dead.name} exited; its log (${dead.logFile}):\n${dead.logTail(30)}`);
}

/**
 * One contender on its own fresh control plane: start one instance per node, wait for every
 * object, time the volume changes, then count requests over the quiet window.
 */
export async function runContender(name: ContenderName, o: BenchOptions, provisionerBinary: string): Promise<ContenderRun> {
  const c = await startBenchCluster(name, o.nodes, o.classes, o.pools);
  const watch = new CapacityWatch(c.admin, installNamespace());
  const run: ContenderRun = { name, instances: o.nodes, starts: [], changes: [], publisherUser: '', commandLines: [] };
  try {
    await watch.start();
    const contender = await startContender(name, o, c, provisionerBinary, watch);
    run.starts = contender.starts;
    run.publisherUser = contender.publisherUser;
    if (contender.companionUser) run.companionUser = contender.companionUser;
    const procs = [...contender.publishers, ...contender.companions];
    run.commandLines = [contender.companions[0], contender.publishers[0]].flatMap((p) => (p ? [commandLine(p) ?? ''] : []));

    const all: Wanted[] = c.nodes.flatMap((n) => c.classes.map((cls) => ({ node: n.name, cls, bytes: Number(INITIAL_BYTES) })));
    // Each start waited for its own node's objects; this checks none went away since.
    if ((await watch.until(all, 60_000)) === undefined) throw new Error(`not every (node, class) object is published (${watch.objectCount()} objects of ${all.length})`);
    run.publishedAllMs = Math.max(...contender.starts.map((s) => s.startedAt + s.ms)) - contender.publishersStartedAt;
    say(`${name}: all ${all.length} objects published ${(run.publishedAllMs / 1000).toFixed(1)} s after the first instance started; settling ${o.settleMs / 1000} s`);
    // Changes right after start would meet the start-up refreshes (and Topovol's coalescing of them), not the steady state.
    await sleep(o.settleMs);

    const random = seededRandom(o.seed);
    const m0 = machineCpuSeconds();
    for (const kind of o.outside ? (['provisioned', 'outside'] as const) : (['provisioned'] as const)) {
      requireRunning(procs);
      run.changes.push(...(await runChanges(o, c, watch, kind, random)));
    }
    const m1 = machineCpuSeconds();
    run.changesMachineBusy = (m1.busy - m0.busy) / Math.max(1e-9, m1.total - m0.total);
    requireRunning(procs);
    // runChanges ended with a rest of --settle.
    say(`${name}: counting requests at rest for ${o.quietMs / 1000} s`);
    const users = [contender.publisherUser, ...(contender.companionUser ? [contender.companionUser] : [])];
    run.rest = await measureRest(
      c.cp.auditLogPath,
      users,
      contender.publishers,
      contender.companions,
      c.nodes.map((n) => n.driver),
      o.quietMs,
    );
    requireRunning(procs);
  } catch (err) {
    run.failure = err instanceof Error ? err.message : String(err);
    say(`${name}: ${run.failure}`);
  } finally {
    await watch.stop();
    await c.stop();
  }
  return run;
}

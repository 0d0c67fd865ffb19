import { performance } from 'node:perf_hooks';
import { Resources } from '@topovol/shared';
import { ProcSampler } from '@topovol/testing';
import { volumeWrites, writesBetween } from './apiserver-writes.js';
import type { BenchOptions, ContenderName } from './bench-flags.js';
import { busyBetween, cpuMark, ensureNamespace, freshControlPlane, say, serverCpuSeconds } from './bench-cluster.js';
import { boundFigures } from './binding-run.js';
import type { BindingRun } from './binding-run.js';
import { startContender } from './contenders.js';
import { createAll } from './create-all.js';
import { PhaseWatch } from './phase-watch.js';
import { benchClaim, benchNamespace, benchPod, benchVolume, SMALLEST_SIZE, volumeNames } from './static-pairs.js';
import { measureWriteCeiling } from './write-ceiling.js';

/**
 * Objects first (a restart, an upgrade, a new install on a busy cluster): on its own fresh control
 * plane, N volumes and N claims are created with no binder running, then the binder starts and the
 * clock runs from its process start until every claim is Bound. Every claim asks for the smallest
 * volume size, so any volume fits any claim and a greedy binder cannot strand the last claim
 * (exact-size pairs could: a binder that sees only some volumes gives a 1000Mi claim a 1100Mi
 * volume, and the last 1100Mi claim then fits nothing). Upstream's binder re-syncs everything
 * every 15 s, so no warm-up is needed to be fair.
 */
export async function runObjectsFirst(name: ContenderName, n: number, opts: BenchOptions): Promise<BindingRun> {
  const { cp, admin, logDir, cores } = await freshControlPlane(name, opts);
  const claims = new PhaseWatch(admin, Resources.persistentVolumeClaims, 'Bound');
  let binder: Awaited<ReturnType<typeof startContender>> | undefined;
  let sampler: ProcSampler | undefined;
  try {
    for (let i = 0; i < opts.namespaces; i++) await ensureNamespace(admin, benchNamespace(i));
    await claims.start();
    say(`${name}: creating ${n} volumes and ${n} claims${opts.pods ? ` and ${n} pods` : ''} before the binder starts`);
    await createAll(admin, Resources.persistentVolumes, n, opts.concurrency, (i) => benchVolume(i), () => undefined);
    await createAll(admin, Resources.persistentVolumeClaims, n, opts.concurrency, (i) => benchClaim(i, opts.namespaces, SMALLEST_SIZE), () => undefined);
    if (opts.pods) await createAll(admin, Resources.pods, n, opts.concurrency, (i) => benchPod(i, opts.namespaces), () => undefined);

    const writes0 = await volumeWrites(admin);
    const started = performance.now();
    binder = await startContender(name, cp, opts, logDir);
    const pid = binder.process.pid;
    if (pid === undefined) throw new Error(`${name}: binder did not start`);
    sampler = new ProcSampler(pid);
    sampler.start();
    const mark0 = cpuMark(0, started);
    const progress = setInterval(() => say(`${name}: ${claims.reachedAt.size}/${n} Bound`), 10_000);
    let complete: boolean;
    try {
      complete = await claims.waitForCount(n, opts.timeoutMs, opts.stallMs);
    } finally {
      clearInterval(progress);
    }
    const mark1 = cpuMark(sampler.cpuSeconds() ?? NaN, performance.now());
    const writes = writesBetween(writes0, await volumeWrites(admin));
    sampler.stop();
    await binder.process.stop();
    const times = [...claims.reachedAt.values()];
    say(`${name}: ${times.length}/${n} Bound; measuring the write ceiling`);
    const ceiling = await measureWriteCeiling(admin, Resources.persistentVolumes, volumeNames(n), opts.ceilingWrites, opts.concurrency, serverCpuSeconds);
    const cpu = mark1.binder;
    const { cpuMsPerBinding, ...figures } = boundFigures(times, started, cpu, writes, ceiling);
    return {
      contender: name,
      order: 'objects-first',
      pods: opts.pods ? n : 0,
      version: binder.version,
      argv: binder.argv,
      notes: binder.notes,
      n,
      complete,
      clockFrom: "the binder's process start (every volume and claim already stored)",
      ...figures,
      binder: { peakRssMiB: sampler.peakRssMiB, cpuSeconds: cpu, cpuMsPerBinding, rssSeries: sampler.rssSeries },
      ceiling,
      ...busyBetween(mark0, mark1),
      logDir,
      ...(cores ? { cores } : {}),
    };
  } finally {
    sampler?.stop();
    await binder?.process.stop();
    await claims.stop();
    admin.close();
    await cp.stop();
  }
}

import { performance } from 'node:perf_hooks';
import { objectKey, Resources } from '@topovol/shared';
import { ProcSampler, summarize } from '@topovol/testing';
import { volumeWrites, writesBetween } from './apiserver-writes.js';
import type { BenchOptions, ContenderName } from './bench-flags.js';
import { busyBetween, cpuMark, ensureNamespace, freshControlPlane, say, serverCpuSeconds } from './bench-cluster.js';
import { boundFigures, cdf } from './binding-run.js';
import type { BindingRun } from './binding-run.js';
import { startContender } from './contenders.js';
import { createAll } from './create-all.js';
import { PhaseWatch } from './phase-watch.js';
import { benchClaim, benchNamespace, benchVolume, volumeNames, WARMUP_NAMESPACE, warmupClaim, warmupVolume } from './static-pairs.js';
import { measureWriteCeiling } from './write-ceiling.js';

/**
 * Binder first: on its own fresh etcd + kube-apiserver, start the binder, prove it is live with a
 * warm-up pair, create N volumes and wait until all are Available, then create N claims and time
 * each one until Bound. Volumes come first so claim latency measures binding, not volume intake.
 * Then stop the binder and measure the API server's write ceiling on the same control plane.
 */
export async function runBinderFirst(name: ContenderName, n: number, opts: BenchOptions): Promise<BindingRun> {
  const { cp, admin, logDir, cores } = await freshControlPlane(name, opts);
  const volumes = new PhaseWatch(admin, Resources.persistentVolumes, 'Available');
  const claims = new PhaseWatch(admin, Resources.persistentVolumeClaims, 'Bound');
  let binder: Awaited<ReturnType<typeof startContender>> | undefined;
  let sampler: ProcSampler | undefined;
  try {
    for (const ns of [WARMUP_NAMESPACE, ...Array.from({ length: opts.namespaces }, (_, i) => benchNamespace(i))]) await ensureNamespace(admin, ns);
    await volumes.start();
    await claims.start();

    const started = performance.now();
    binder = await startContender(name, cp, opts, logDir);
    const pid = binder.process.pid;
    if (pid === undefined) throw new Error(`${name}: binder did not start`);
    sampler = new ProcSampler(pid);
    sampler.start();
    // Volume first, claim once the binder has seen it: upstream retries a claim that found no
    // volume only at its periodic resync (15 s), which would otherwise count as startup time.
    const warmPv = warmupVolume();
    await admin.create(Resources.persistentVolumes, warmPv);
    if (!(await volumes.waitFor(objectKey(warmPv), 180_000))) {
      throw new Error(`${name}: the warm-up volume did not become Available within 180 s; log: ${binder.process.logFile}\n${binder.process.logTail()}`);
    }
    const warm = warmupClaim();
    await admin.create(Resources.persistentVolumeClaims, warm);
    if (!(await claims.waitFor(objectKey(warm), 180_000))) {
      throw new Error(`${name}: the warm-up claim was not Bound within 180 s; log: ${binder.process.logFile}\n${binder.process.logTail()}`);
    }
    if (!binder.process.running) throw new Error(`${name}: binder exited; log: ${binder.process.logFile}\n${binder.process.logTail()}`);
    say(`${name}: binder live after ${((performance.now() - started) / 1000).toFixed(1)} s (pid ${pid}); creating ${n} volumes`);

    const volStart = performance.now();
    await createAll(admin, Resources.persistentVolumes, n, opts.concurrency, (i) => benchVolume(i), () => undefined);
    // +1: the warm-up volume is in the same watch.
    if (!(await volumes.waitForCount(n + 1, opts.timeoutMs, opts.stallMs))) say(`${name}: only ${volumes.reachedAt.size - 1}/${n} volumes Available; creating claims anyway`);
    say(`${name}: volumes Available in ${((performance.now() - volStart) / 1000).toFixed(1)} s; creating ${n} claims`);

    const createdAt = new Map<string, number>();
    const writes0 = await volumeWrites(admin);
    const mark0 = cpuMark(sampler.cpuSeconds() ?? 0, performance.now());
    const claimStart = mark0.at;
    const progress = setInterval(() => say(`${name}: ${createdAt.size}/${n} claims created, ${claims.reachedAt.size - 1} Bound`), 10_000);
    let allBound: boolean;
    try {
      await createAll(admin, Resources.persistentVolumeClaims, n, opts.concurrency, (i) => benchClaim(i, opts.namespaces), (o, at) => createdAt.set(objectKey(o), at));
      // +1: the warm-up claim is in the same watch.
      allBound = await claims.waitForCount(n + 1, opts.timeoutMs, opts.stallMs);
    } finally {
      clearInterval(progress);
    }
    const mark1 = cpuMark(sampler.cpuSeconds() ?? NaN, performance.now());
    const writes = writesBetween(writes0, await volumeWrites(admin));
    sampler.stop();
    await binder.process.stop();

    const latencies: number[] = [];
    const boundTimes: number[] = [];
    for (const [key, created] of createdAt) {
      const bound = claims.reachedAt.get(key);
      if (bound === undefined) continue;
      boundTimes.push(bound);
      latencies.push(Math.max(0, bound - created));
    }
    say(`${name}: ${boundTimes.length}/${n} Bound; measuring the write ceiling`);
    const ceiling = await measureWriteCeiling(admin, Resources.persistentVolumes, volumeNames(n), opts.ceilingWrites, opts.concurrency, serverCpuSeconds);
    const cpu = mark1.binder - mark0.binder;
    const { cpuMsPerBinding, ...figures } = boundFigures(boundTimes, claimStart, cpu, writes, ceiling);
    return {
      contender: name,
      order: 'binder-first',
      version: binder.version,
      argv: binder.argv,
      notes: binder.notes,
      n,
      complete: allBound,
      clockFrom: 'the first claim create request (every volume already Available)',
      ...figures,
      latencyMs: summarize(latencies),
      latencyCdf: cdf(latencies),
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
    await volumes.stop();
    admin.close();
    await cp.stop();
  }
}

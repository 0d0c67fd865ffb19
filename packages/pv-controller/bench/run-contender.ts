import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { isAlreadyExists, objectKey, Resources } from '@topovol/shared';
import type { KubeClient, KubeObject } from '@topovol/shared';
import { childPids, ControlPlane, cpuSeconds, machineCpuSeconds, ProcSampler, summarize } from '@topovol/shared/testing';
import type { LatencySummary } from '@topovol/shared/testing';
import type { BenchOptions, ContenderName } from './bench-flags.js';
import { startContender } from './contenders.js';
import { createAll } from './create-all.js';
import { PhaseWatch } from './phase-watch.js';
import { benchClaim, benchNamespace, benchVolume, WARMUP_NAMESPACE, warmupClaim, warmupVolume } from './static-pairs.js';

export interface ContenderResult {
  contender: ContenderName;
  version: string;
  argv: string[];
  notes: string[];
  n: number;
  namespaces: number;
  /** Every claim reached Bound within the timeout. */
  complete: boolean;
  bound: number;
  /** Binder process start until the warm-up pair was Bound (process start, informer sync, first writes). */
  startupMs: number;
  volumes: { createSeconds: number; allAvailableSeconds: number };
  claims: {
    createSeconds: number;
    /** First claim create request until the last claim was seen Bound. */
    bindWindowSeconds: number;
    pairsPerSecond: number;
    /** Create response until the first watch event showing phase Bound, per claim. */
    latencyMs: LatencySummary;
    /** Claims whose Bound event we processed before their own create response (latency counted as 0). */
    boundBeforeCreateResponse: number;
  };
  binder: { peakRssMiB: number; cpuSeconds: number; cpuSecondsTotal: number };
  /**
   * CPU spent over the same window by the rest of the machine's actors, which share its cores with
   * the binder: a busy total means the machine, not the binder, set the pace.
   */
  others: {
    apiserverCpuSeconds: number;
    etcdCpuSeconds: number;
    benchCpuSeconds: number;
    /** Share of all cores busy over the window, whoever used them (other work on the machine included). */
    machineBusyFraction: number;
    /** The part of that the binder, kube-apiserver, etcd and the bench account for. */
    ownBusyFraction: number;
  };
  /** The binder's log (kept; set TOPOVOL_KEEP_TEST_DIRS=1 to keep the control plane's too). */
  logDir: string;
}

const say = (msg: string): void => void process.stderr.write(`[bench] ${msg}\n`);

function cpuOf(comm: string): number {
  return childPids(comm).reduce((sum, pid) => sum + (cpuSeconds(pid) ?? 0), 0);
}

async function ensureNamespace(client: KubeClient, name: string): Promise<void> {
  await client.create<KubeObject>(Resources.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name } }).catch((err: unknown) => {
    if (!isAlreadyExists(err)) throw err;
  });
}

/**
 * One contender on its own fresh etcd + kube-apiserver: start the binder, prove it is live with a
 * warm-up pair, create N volumes and wait until all are Available, then create N claims and time
 * each one until Bound. Volumes come first so claim latency measures binding, not volume intake.
 */
export async function runContender(name: ContenderName, opts: BenchOptions): Promise<ContenderResult> {
  const logDir = mkdtempSync(path.join(os.tmpdir(), `topovol-bench-${name}-`));
  const cp = new ControlPlane({
    // Room for the bench's creates and the binder's writes at once; the defaults (400/200) would
    // make the API server, not the binder, the thing measured.
    apiServerFlags: ['--max-requests-inflight=2000', '--max-mutating-requests-inflight=1000'],
  });
  say(`${name}: starting etcd + kube-apiserver in ${cp.dir}`);
  await cp.start();
  const admin = cp.adminClient();
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
    const startupMs = performance.now() - started;
    say(`${name}: binder live after ${(startupMs / 1000).toFixed(1)} s (pid ${pid}); creating ${opts.n} volumes`);

    const cpu0 = sampler.cpuSeconds() ?? 0;
    const api0 = cpuOf('kube-apiserver');
    const etcd0 = cpuOf('etcd');
    const self0 = process.cpuUsage();
    const machine0 = machineCpuSeconds();
    const volStart = performance.now();
    await createAll(admin, Resources.persistentVolumes, opts.n, opts.concurrency, (i) => benchVolume(i), () => undefined);
    const volCreated = performance.now();
    // +1: the warm-up volume is in the same watch.
    const allAvailable = await volumes.waitForCount(opts.n + 1, opts.timeoutMs);
    const volDone = performance.now();
    if (!allAvailable) say(`${name}: only ${volumes.reachedAt.size - 1}/${opts.n} volumes Available after the timeout; creating claims anyway`);
    say(`${name}: volumes Available in ${((volDone - volStart) / 1000).toFixed(1)} s; creating ${opts.n} claims`);

    const createdAt = new Map<string, number>();
    const claimStart = performance.now();
    const progress = setInterval(() => say(`${name}: ${createdAt.size}/${opts.n} claims created, ${claims.reachedAt.size - 1} Bound`), 10_000);
    let allBound: boolean;
    let claimsCreated: number;
    try {
      await createAll(admin, Resources.persistentVolumeClaims, opts.n, opts.concurrency, (i) => benchClaim(i, opts.namespaces), (o, at) => createdAt.set(objectKey(o), at));
      claimsCreated = performance.now();
      // +1: the warm-up claim is in the same watch.
      allBound = await claims.waitForCount(opts.n + 1, opts.timeoutMs);
    } finally {
      clearInterval(progress);
    }
    const cpu1 = sampler.cpuSeconds() ?? NaN;
    const api1 = cpuOf('kube-apiserver');
    const etcd1 = cpuOf('etcd');
    const self1 = process.cpuUsage(self0);
    const machine1 = machineCpuSeconds();
    const windowEnd = performance.now();
    sampler.stop();

    const latencies: number[] = [];
    let early = 0;
    let lastBound = claimStart;
    for (const [key, created] of createdAt) {
      const bound = claims.reachedAt.get(key);
      if (bound === undefined) continue;
      lastBound = Math.max(lastBound, bound);
      if (bound < created) early++;
      latencies.push(Math.max(0, bound - created));
    }
    const bindWindow = (lastBound - claimStart) / 1000;
    const result: ContenderResult = {
      contender: name,
      version: binder.version,
      argv: binder.argv,
      notes: binder.notes,
      n: opts.n,
      namespaces: opts.namespaces,
      complete: allBound,
      bound: latencies.length,
      startupMs,
      volumes: { createSeconds: (volCreated - volStart) / 1000, allAvailableSeconds: (volDone - volStart) / 1000 },
      claims: {
        createSeconds: (claimsCreated - claimStart) / 1000,
        bindWindowSeconds: bindWindow,
        pairsPerSecond: latencies.length / bindWindow,
        latencyMs: summarize(latencies),
        boundBeforeCreateResponse: early,
      },
      binder: { peakRssMiB: sampler.peakRssMiB, cpuSeconds: cpu1 - cpu0, cpuSecondsTotal: cpu1 },
      others: {
        apiserverCpuSeconds: api1 - api0,
        etcdCpuSeconds: etcd1 - etcd0,
        benchCpuSeconds: (self1.user + self1.system) / 1e6,
        machineBusyFraction: (machine1.busy - machine0.busy) / (machine1.total - machine0.total),
        ownBusyFraction: (cpu1 - cpu0 + api1 - api0 + etcd1 - etcd0 + (self1.user + self1.system) / 1e6) / (((windowEnd - volStart) / 1000) * os.cpus().length),
      },
      logDir,
    };
    if (!allBound) say(`${name}: INCOMPLETE: ${latencies.length}/${opts.n} claims Bound within ${opts.timeoutMs / 1000} s`);
    return result;
  } finally {
    sampler?.stop();
    await binder?.process.stop();
    await claims.stop();
    await volumes.stop();
    admin.close();
    await cp.stop();
  }
}

import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { isAlreadyExists, Resources } from '@topovol/shared';
import type { KubeClient, KubeObject } from '@topovol/shared';
import { ControlPlane, ProcSampler } from '@topovol/shared/testing';
import type { BenchOptions, ContenderName } from './bench-flags.js';
import { startContender } from './contenders.js';
import { createAll } from './create-all.js';
import { PhaseWatch } from './phase-watch.js';
import { benchClaim, benchNamespace, benchVolume } from './static-pairs.js';

/** A binder started after N volumes and N claims exist (a restart, an upgrade, a new install on a busy cluster). */
export interface ObjectsFirstResult {
  contender: ContenderName;
  version: string;
  n: number;
  complete: boolean;
  bound: number;
  /** Binder process start until the first claim was seen Bound. */
  firstBoundSeconds: number;
  /** Binder process start until every claim was seen Bound. */
  allBoundSeconds: number;
  pairsPerSecond: number;
  binder: { peakRssMiB: number; cpuSeconds: number };
  logDir: string;
}

const say = (msg: string): void => void process.stderr.write(`[bench] ${msg}\n`);

async function ensureNamespace(client: KubeClient, name: string): Promise<void> {
  await client.create<KubeObject>(Resources.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name } }).catch((err: unknown) => {
    if (!isAlreadyExists(err)) throw err;
  });
}

/**
 * One contender on its own fresh control plane: N volumes and N claims are created with no binder
 * running, then the binder starts and the clock runs from its process start until every claim is
 * Bound. Upstream's binder re-syncs everything every 15 s, so no warm-up is needed to be fair.
 */
export async function runObjectsFirst(name: ContenderName, opts: BenchOptions): Promise<ObjectsFirstResult> {
  const logDir = mkdtempSync(path.join(os.tmpdir(), `topovol-bench-${name}-`));
  const cp = new ControlPlane({ apiServerFlags: ['--max-requests-inflight=2000', '--max-mutating-requests-inflight=1000'] });
  say(`${name}: starting etcd + kube-apiserver in ${cp.dir}`);
  await cp.start();
  const admin = cp.adminClient();
  const claims = new PhaseWatch(admin, Resources.persistentVolumeClaims, 'Bound');
  let binder: Awaited<ReturnType<typeof startContender>> | undefined;
  let sampler: ProcSampler | undefined;
  try {
    for (let i = 0; i < opts.namespaces; i++) await ensureNamespace(admin, benchNamespace(i));
    await claims.start();
    say(`${name}: creating ${opts.n} volumes and ${opts.n} claims before the binder starts`);
    await createAll(admin, Resources.persistentVolumes, opts.n, opts.concurrency, (i) => benchVolume(i), () => undefined);
    await createAll(admin, Resources.persistentVolumeClaims, opts.n, opts.concurrency, (i) => benchClaim(i, opts.namespaces), () => undefined);

    const started = performance.now();
    binder = await startContender(name, cp, opts, logDir);
    const pid = binder.process.pid;
    if (pid === undefined) throw new Error(`${name}: binder did not start`);
    sampler = new ProcSampler(pid);
    sampler.start();
    const progress = setInterval(() => say(`${name}: ${claims.reachedAt.size}/${opts.n} Bound`), 10_000);
    let complete: boolean;
    try {
      complete = await claims.waitForCount(opts.n, opts.timeoutMs);
    } finally {
      clearInterval(progress);
    }
    const cpu = sampler.cpuSeconds() ?? NaN;
    sampler.stop();
    const times = [...claims.reachedAt.values()];
    const first = Math.min(...times);
    const last = Math.max(...times);
    return {
      contender: name,
      version: binder.version,
      n: opts.n,
      complete,
      bound: times.length,
      firstBoundSeconds: (first - started) / 1000,
      allBoundSeconds: (last - started) / 1000,
      pairsPerSecond: times.length / ((last - started) / 1000),
      binder: { peakRssMiB: sampler.peakRssMiB, cpuSeconds: cpu },
      logDir,
    };
  } finally {
    sampler?.stop();
    await binder?.process.stop();
    await claims.stop();
    admin.close();
    await cp.stop();
  }
}

/** The objects-first table and the Topovol/upstream ratios. */
export function formatObjectsFirst(results: readonly ObjectsFirstResult[]): string {
  const rows = results.map((r) =>
    [r.contender.padEnd(9), String(r.n).padStart(6), String(r.bound).padStart(6), r.firstBoundSeconds.toFixed(1).padStart(9), r.allBoundSeconds.toFixed(1).padStart(9), r.pairsPerSecond.toFixed(1).padStart(8), r.binder.cpuSeconds.toFixed(1).padStart(7), r.binder.peakRssMiB.toFixed(1).padStart(9)].join('  '),
  );
  const out = ['objects first (N volumes and N claims exist before the binder starts; times from binder process start)', `${'contender'.padEnd(9)}  ${'N'.padStart(6)}  ${'bound'.padStart(6)}  ${'first s'.padStart(9)}  ${'all s'.padStart(9)}  ${'pairs/s'.padStart(8)}  ${'CPU s'.padStart(7)}  ${'RSS MiB'.padStart(9)}`, ...rows];
  const t = results.find((r) => r.contender === 'topovol');
  const u = results.find((r) => r.contender === 'upstream');
  if (t && u) out.push('', `Topovol/upstream: first Bound ${(t.firstBoundSeconds / u.firstBoundSeconds).toFixed(2)}x, all Bound ${(t.allBoundSeconds / u.allBoundSeconds).toFixed(2)}x (<1 is sooner), CPU ${(t.binder.cpuSeconds / u.binder.cpuSeconds).toFixed(2)}x, peak RSS ${(t.binder.peakRssMiB / u.binder.peakRssMiB).toFixed(2)}x`);
  return out.join('\n');
}

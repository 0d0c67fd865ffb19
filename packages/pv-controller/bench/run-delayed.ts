import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { objectKey, Resources } from '@topovol/shared';
import type { KubeObject, PersistentVolume, Pod } from '@topovol/shared';
import { createReadyNode, ProcSampler, startKubeScheduler, summarize } from '@topovol/testing';
import type { LatencySummary } from '@topovol/testing';
import type { BenchOptions, ContenderName } from './bench-flags.js';
import { busyBetween, cpuMark, ensureNamespace, freshControlPlane, say } from './bench-cluster.js';
import type { CpuSplit } from './bench-cluster.js';
import { cdf } from './binding-run.js';
import { coreEventWrites } from './apiserver-writes.js';
import { startContender } from './contenders.js';
import { createAll } from './create-all.js';
import { delayedClaim, delayedClass, delayedPod, DELAYED_NAMESPACE, localVolume, nodeName, schedulerConfig } from './delayed-objects.js';
import { PhaseWatch } from './phase-watch.js';

/** Delayed binding behind the real kube-scheduler, one contender on its own control plane. */
export interface DelayedRun {
  contender: ContenderName;
  version: string;
  claims: number;
  nodes: number;
  complete: boolean;
  bound: number;
  /** The scheduler's pre-bind (the volume's claimRef first seen) to the claim first seen Bound. */
  preBindToBoundMs: LatencySummary;
  preBindToBoundCdf: [number, number][];
  /** Pod create response to the pod first seen with spec.nodeName (scheduling, pre-bind and binding together). */
  podScheduledMs: LatencySummary;
  /** First pod create to the last claim Bound. */
  windowSeconds: number;
  binder: { peakRssMiB: number; cpuSeconds: number; cpuMsPerBinding: number };
  /** Event creates and patches of the binder over the window (core/v1; kube-scheduler writes events.k8s.io/v1). */
  binderEventWrites?: number;
  machineBusyFraction: number;
  ownBusyFraction: number;
  /** CPU seconds over the window of the binder, kube-apiserver, etcd and the bench. */
  cpuSeconds?: CpuSplit;
  logDir: string;
}

/** The volume's claim once a watch event shows a claimRef (the scheduler's pre-bind, or the binder's own). */
const preBound = {
  keyIfReached: (o: KubeObject): string | undefined => {
    const ref = (o as PersistentVolume).spec?.claimRef;
    return ref?.name ? `${ref.namespace ?? ''}/${ref.name}` : undefined;
  },
  slim: (o: KubeObject): KubeObject => ({ metadata: { name: o.metadata?.name, resourceVersion: o.metadata?.resourceVersion }, spec: { claimRef: (o as PersistentVolume).spec?.claimRef } }) as PersistentVolume,
};

const scheduled = {
  keyIfReached: (o: KubeObject): string | undefined => ((o as Pod).spec?.nodeName ? objectKey(o) : undefined),
  slim: (o: KubeObject): KubeObject => ({ metadata: { name: o.metadata?.name, namespace: o.metadata?.namespace, resourceVersion: o.metadata?.resourceVersion }, spec: { nodeName: (o as Pod).spec?.nodeName } }) as Pod,
};

/**
 * `claims` WaitForFirstConsumer claims and 1.2× as many local volumes spread over `nodes` nodes,
 * the binder and the real kube-scheduler running; then one pod per claim, created in a burst. The
 * scheduler pre-binds a volume to each claim (kube-scheduler's VolumeBinding PreBind writes the
 * volume's claimRef) and waits for the binder to finish the binding: that wait, per claim, is what
 * is measured, from the bench's own watch events on both sides.
 */
export async function runDelayed(name: ContenderName, claims: number, nodes: number, opts: BenchOptions): Promise<DelayedRun> {
  const { cp, admin, logDir } = await freshControlPlane(name);
  const volumes = new PhaseWatch(admin, Resources.persistentVolumes, 'Available');
  const preBinds = new PhaseWatch(admin, Resources.persistentVolumes, preBound);
  const bound = new PhaseWatch(admin, Resources.persistentVolumeClaims, 'Bound');
  const pods = new PhaseWatch(admin, Resources.pods, scheduled);
  let binder: Awaited<ReturnType<typeof startContender>> | undefined;
  let scheduler: Awaited<ReturnType<typeof startKubeScheduler>> | undefined;
  let sampler: ProcSampler | undefined;
  try {
    await ensureNamespace(admin, DELAYED_NAMESPACE);
    for (const w of [volumes, preBinds, bound, pods]) await w.start();
    for (let i = 0; i < nodes; i++) await createReadyNode(admin, nodeName(i));
    await admin.create(Resources.storageClasses, delayedClass());
    const volumeCount = Math.ceil(claims * 1.2);
    say(`${name}: ${nodes} nodes, ${volumeCount} local volumes, ${claims} claims`);
    binder = await startContender(name, cp, opts, logDir);
    if (binder.process.pid === undefined) throw new Error(`${name}: binder did not start`);
    sampler = new ProcSampler(binder.process.pid);
    sampler.start();
    await createAll(admin, Resources.persistentVolumes, volumeCount, opts.concurrency, (i) => localVolume(i, nodes), () => undefined);
    if (!(await volumes.waitForCount(volumeCount, opts.timeoutMs, opts.stallMs))) throw new Error(`${name}: volumes not Available; log ${binder.process.logFile}`);
    await createAll(admin, Resources.persistentVolumeClaims, claims, opts.concurrency, (i) => delayedClaim(i), () => undefined);
    const configFile = path.join(logDir, 'kube-scheduler.yaml');
    writeFileSync(configFile, schedulerConfig(cp.kubeconfigPath, opts.qps, opts.burst));
    scheduler = await startKubeScheduler(cp, [`--config=${configFile}`]);
    // Let the scheduler's informers sync before the burst: a pod created earlier would wait for
    // the sync, not for the binder.
    await new Promise((r) => setTimeout(r, 5000));

    say(`${name}: creating ${claims} pods`);
    const createdAt = new Map<string, number>();
    const events0 = await coreEventWrites(admin);
    const mark0 = cpuMark(sampler.cpuSeconds() ?? 0, performance.now());
    const progress = setInterval(() => say(`${name}: ${pods.reachedAt.size}/${claims} pods scheduled, ${bound.reachedAt.size}/${claims} claims Bound`), 10_000);
    let complete: boolean;
    try {
      await createAll(admin, Resources.pods, claims, opts.concurrency, (i) => delayedPod(i), (o, at) => createdAt.set(objectKey(o), at));
      complete = await bound.waitForCount(claims, opts.timeoutMs, opts.stallMs);
    } finally {
      clearInterval(progress);
    }
    const mark1 = cpuMark(sampler.cpuSeconds() ?? NaN, performance.now());
    sampler.stop();
    const binderEventWrites = (await coreEventWrites(admin)) - events0;

    const waits: number[] = [];
    let lastBound = mark0.at;
    for (const [key, at] of bound.reachedAt) {
      const pre = preBinds.reachedAt.get(key);
      lastBound = Math.max(lastBound, at);
      if (pre !== undefined) waits.push(Math.max(0, at - pre));
    }
    const podWaits: number[] = [];
    for (const [key, at] of createdAt) {
      const s = pods.reachedAt.get(key);
      if (s !== undefined) podWaits.push(Math.max(0, s - at));
    }
    const cpu = mark1.binder - mark0.binder;
    return {
      contender: name,
      version: binder.version,
      claims,
      nodes,
      complete,
      bound: bound.reachedAt.size,
      preBindToBoundMs: summarize(waits),
      preBindToBoundCdf: cdf(waits),
      podScheduledMs: summarize(podWaits),
      windowSeconds: (lastBound - mark0.at) / 1000,
      binder: { peakRssMiB: sampler.peakRssMiB, cpuSeconds: cpu, cpuMsPerBinding: (cpu * 1000) / Math.max(1, bound.reachedAt.size) },
      binderEventWrites,
      ...busyBetween(mark0, mark1),
      logDir,
    };
  } finally {
    sampler?.stop();
    await scheduler?.stop();
    await binder?.process.stop();
    for (const w of [pods, bound, preBinds, volumes]) await w.stop();
    admin.close();
    await cp.stop();
  }
}

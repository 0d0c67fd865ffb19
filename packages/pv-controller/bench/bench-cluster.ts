import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { isAlreadyExists, Resources } from '@topovol/shared';
import type { KubeClient, KubeObject } from '@topovol/shared';
import { childPids, ControlPlane, cpuSeconds, machineCpuSeconds } from '@topovol/testing';
import type { BenchOptions, ContenderName } from './bench-flags.js';
import { coreSplit, onServerCores } from './core-split.js';
import type { CoreSplit } from './core-split.js';

export const say = (msg: string): void => void process.stderr.write(`[bench] ${msg}\n`);

/**
 * A fresh etcd + kube-apiserver for one contender. Room for the bench's creates and the binder's
 * writes at once: the defaults (400/200) would make the API server's limits, not the binder, the
 * thing measured. With --split-cores, etcd and kube-apiserver start on the server's half of the CPUs
 * and the bench goes on (and starts the binder) on the other.
 */
export async function freshControlPlane(name: ContenderName, opts?: Pick<BenchOptions, 'splitCores'>): Promise<{ cp: ControlPlane; admin: KubeClient; logDir: string; cores?: CoreSplit }> {
  const logDir = mkdtempSync(path.join(os.tmpdir(), `topovol-bench-${name}-`));
  const cp = new ControlPlane({ apiServerFlags: ['--max-requests-inflight=2000', '--max-mutating-requests-inflight=1000'] });
  say(`${name}: starting etcd + kube-apiserver in ${cp.dir}`);
  const split = opts?.splitCores ? coreSplit() : undefined;
  if (split) say(`${name}: etcd and kube-apiserver pinned to CPU list ${split.server}, the binder and the bench to ${split.clients}`);
  await onServerCores(split, () => cp.start());
  return { cp, admin: cp.adminClient(), logDir, ...(split ? { cores: split } : {}) };
}

export async function ensureNamespace(client: KubeClient, name: string): Promise<void> {
  await client.create<KubeObject>(Resources.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name } }).catch((err: unknown) => {
    if (!isAlreadyExists(err)) throw err;
  });
}

const cpuOf = (comm: string): number => childPids(comm).reduce((sum, pid) => sum + (cpuSeconds(pid) ?? 0), 0);

/** kube-apiserver's and etcd's CPU seconds so far: the server side of every write. */
export const serverCpuSeconds = (): number => cpuOf('kube-apiserver') + cpuOf('etcd');

/** CPU of the machine and of everyone sharing it with the binder, at one instant. */
export interface CpuMark {
  at: number;
  apiserver: number;
  etcd: number;
  bench: NodeJS.CpuUsage;
  machine: { busy: number; total: number };
  binder: number;
}

export function cpuMark(binderCpu: number, at: number): CpuMark {
  return { at, apiserver: cpuOf('kube-apiserver'), etcd: cpuOf('etcd'), bench: process.cpuUsage(), machine: machineCpuSeconds(), binder: binderCpu };
}

/** CPU seconds each party used between two marks: where the machine's time went while the binder bound. */
export interface CpuSplit {
  binder: number;
  apiserver: number;
  etcd: number;
  bench: number;
}

/** Busy share of the machine between two marks, the part the binder, kube-apiserver, etcd and the bench account for, and their CPU seconds. */
export function busyBetween(a: CpuMark, b: CpuMark): { machineBusyFraction: number; ownBusyFraction: number; cpuSeconds: CpuSplit } {
  const split: CpuSplit = {
    binder: b.binder - a.binder,
    apiserver: b.apiserver - a.apiserver,
    etcd: b.etcd - a.etcd,
    bench: (b.bench.user - a.bench.user + b.bench.system - a.bench.system) / 1e6,
  };
  const own = split.binder + split.apiserver + split.etcd + split.bench;
  return {
    machineBusyFraction: (b.machine.busy - a.machine.busy) / (b.machine.total - a.machine.total),
    ownBusyFraction: own / (((b.at - a.at) / 1000) * os.cpus().length),
    cpuSeconds: split,
  };
}

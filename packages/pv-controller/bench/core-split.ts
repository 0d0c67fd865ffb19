import { execFileSync } from 'node:child_process';
import os from 'node:os';

/**
 * `--split-cores`: etcd and kube-apiserver on the first half of the CPUs, the binder and the bench
 * (its creates, its watch and the ceiling's writes) on the rest, as when a controller-manager runs
 * beside the API server on cores of its own. The bench pins itself before it starts each side, and
 * the processes it starts inherit its affinity (sched_setaffinity(2)), so the Go binaries size
 * GOMAXPROCS to their side at start.
 */
export interface CoreSplit {
  server: string;
  clients: string;
}

/** The split of this machine's CPUs, or why there is none. */
export function coreSplit(cpus = os.cpus().length): CoreSplit {
  if (cpus < 2) throw new Error(`--split-cores needs at least 2 CPUs; this machine has ${cpus}`);
  const half = Math.floor(cpus / 2);
  const list = (from: number, to: number): string => (from === to ? String(from) : `${from}-${to}`);
  return { server: list(0, half - 1), clients: list(half, cpus - 1) };
}

/** Pins every thread of this process to the CPUs listed (taskset's list syntax). */
export function pinSelf(cpus: string): void {
  execFileSync('taskset', ['--all-tasks', '--cpu-list', '--pid', cpus, String(process.pid)], { stdio: 'ignore' });
}

/** Runs start() with this process pinned to the server's CPUs, then pins it back to the clients' side. */
export async function onServerCores<T>(split: CoreSplit | undefined, start: () => Promise<T>): Promise<T> {
  if (!split) return start();
  pinSelf(split.server);
  try {
    return await start();
  } finally {
    pinSelf(split.clients);
  }
}

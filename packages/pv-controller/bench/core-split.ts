import { execFileSync } from 'node:child_process';

/**
 * `--split-cores`: etcd and kube-apiserver on the first half of the CPUs this process may use, the
 * binder and the bench (its creates, its watch and the ceiling's writes) on the rest, as when a
 * controller-manager runs beside the API server on cores of its own. The bench pins itself before
 * it starts each side, and the processes it starts inherit its affinity (sched_setaffinity(2)), so
 * the Go binaries size GOMAXPROCS to their side at start.
 */
export interface CoreSplit {
  /** taskset CPU lists. */
  server: string;
  clients: string;
  serverCpus: number;
}

/** CPU ids from a taskset list ("0-3,6"). */
export function parseCpuList(list: string): number[] {
  return list
    .split(',')
    .filter((p) => p.trim() !== '')
    .flatMap((part) => {
      const [a, b] = part.trim().split('-').map(Number);
      if (!Number.isInteger(a) || (b !== undefined && !Number.isInteger(b))) throw new Error(`not a CPU list: "${list}"`);
      return b === undefined ? [a!] : Array.from({ length: b - a! + 1 }, (_, i) => a! + i);
    });
}

/** The split of the CPUs given (by default the ones this process may use: a container's cpuset), or why there is none. */
export function coreSplit(cpus: readonly number[] = allowedCpus()): CoreSplit {
  if (cpus.length < 2) throw new Error(`--split-cores needs at least 2 CPUs; this process may use ${cpus.length}`);
  const half = Math.floor(cpus.length / 2);
  return { server: cpus.slice(0, half).join(','), clients: cpus.slice(half).join(','), serverCpus: half };
}

/** The CPUs this process may run on now (taskset reads sched_getaffinity(2)). */
export function allowedCpus(): number[] {
  const out = execFileSync('taskset', ['--cpu-list', '--pid', String(process.pid)], { encoding: 'utf8' });
  return parseCpuList(out.slice(out.lastIndexOf(':') + 1));
}

/** Pins every thread of this process to the CPUs listed (taskset's list syntax). */
export function pinSelf(cpus: string): void {
  execFileSync('taskset', ['--all-tasks', '--cpu-list', '--pid', cpus, String(process.pid)], { stdio: 'ignore' });
}

/** Runs start() with this process pinned to the server's CPUs, then pins it to the clients' side. */
export async function onServerCores<T>(split: CoreSplit | undefined, start: () => Promise<T>): Promise<T> {
  if (!split) return start();
  pinSelf(split.server);
  try {
    return await start();
  } finally {
    pinSelf(split.clients);
  }
}

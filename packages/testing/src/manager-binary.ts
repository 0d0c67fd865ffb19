import path from 'node:path';
import { eventually } from './eventually.js';
import { freePort } from './free-port.js';
import { ManagedProcess } from './managed-process.js';
import { repoRoot } from './repo-root.js';

/**
 * `node --import` of the clock preload (clock-skew-preload.ts): with TOPOVOL_TEST_CLOCK_SKEW_MS in
 * its environment, a manager runs as on a node whose wall clock is off by that much.
 */
export const CLOCK_SKEW_PRELOAD: readonly string[] = ['--import', path.join(repoRoot(), 'packages', 'testing', 'dist', 'src', 'clock-skew-preload.js')];

export interface ManagerBinaryOptions {
  name: string;
  kubeconfig: string;
  /** Flags after --kubeconfig (--controllers and the loops' own); metrics are off, probes on loopback. */
  args: readonly string[];
  logFile: string;
  env?: NodeJS.ProcessEnv;
  /** Flags for node itself, before the script (e.g. `--import` of a test preload). */
  nodeArgs?: readonly string[];
  readyTimeoutMs?: number;
  /**
   * false: return once spawned, without waiting for /readyz. For a process expected to die at a
   * failpoint during its start-up walk, which it may reach before a probe would have seen it ready.
   */
  waitUntilReady?: boolean;
  /** host:port for /metrics, served over plain HTTP (--metrics-secure=false: the suites read it unauthenticated); default off. */
  metricsAddress?: string;
  /** The port /healthz and /readyz answer on (127.0.0.1); default a free one. */
  probePort?: number;
}

/**
 * The real topovol-controller-manager binary as an operator runs it, as a child process that dies
 * with the test; resolves once /readyz answers 200 (its informers synced), and fails with the log's
 * tail if it exits or never gets ready (unless `waitUntilReady` is false).
 */
export async function startManagerBinary(o: ManagerBinaryOptions): Promise<ManagedProcess> {
  const root = repoRoot();
  const probePort = o.probePort ?? (await freePort());
  const proc = new ManagedProcess({
    name: o.name,
    command: process.execPath,
    args: [...(o.nodeArgs ?? []), path.join(root, 'bin', 'topovol-controller-manager.js'), `--kubeconfig=${o.kubeconfig}`, `--metrics-bind-address=${o.metricsAddress ?? '0'}`, ...(o.metricsAddress ? ['--metrics-secure=false'] : []), `--health-probe-bind-address=127.0.0.1:${probePort}`, ...o.args],
    logFile: o.logFile,
    cwd: root,
    ...(o.env ? { env: o.env } : {}),
  });
  if (o.waitUntilReady === false) return proc;
  try {
    await eventually(
      async () => {
        if (!proc.running) throw new Error(`exited with code ${String(await proc.waitForExit())}`);
        const res = await fetch(`http://127.0.0.1:${probePort}/readyz`, { signal: AbortSignal.timeout(2_000) });
        await res.body?.cancel();
        if (res.status !== 200) throw new Error(`/readyz answered ${res.status}`);
      },
      o.readyTimeoutMs ?? 120_000,
      200,
    );
  } catch (err) {
    await proc.stop();
    throw new Error(`${o.name} did not become ready (${err instanceof Error ? err.message : String(err)}):\n${proc.logTail(40)}`);
  }
  return proc;
}

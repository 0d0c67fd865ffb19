import http from 'node:http';
import path from 'node:path';
import type { ControlPlane } from '@topovol/shared/testing';
import { eventually, freePort, ManagedProcess, repoRoot } from '@topovol/shared/testing';

/**
 * The real topovol-controller-manager with the pv-binder and rollback loops, as an operator runs
 * it but without leader election and with the metrics endpoint off; the loops' own flags keep
 * their defaults unless `extra` sets them. It talks to the API server as the admin, not through
 * the generated RBAC: the bench times the loops, the RBAC tests prove their permissions.
 */
export async function startTopovol(cp: ControlPlane, logDir: string, extra: readonly string[]): Promise<ManagedProcess> {
  const root = repoRoot();
  const probePort = await freePort();
  const proc = new ManagedProcess({
    name: 'topovol-controller-manager',
    command: process.execPath,
    args: [
      path.join(root, 'bin', 'topovol-controller-manager.js'),
      `--kubeconfig=${cp.kubeconfigPath}`,
      '--controllers=pv-binder,rollback',
      '--leader-elect=false',
      '--metrics-bind-address=0',
      // Loopback only; /readyz says when the informers have synced.
      `--health-probe-bind-address=127.0.0.1:${probePort}`,
      ...extra,
    ],
    logFile: path.join(logDir, 'topovol-controller-manager.log'),
    cwd: root,
  });
  try {
    await eventually(
      async () => {
        if (!proc.running) throw new Error(`exited with code ${String(await proc.waitForExit())}`);
        const status = await httpStatus(`http://127.0.0.1:${probePort}/readyz`);
        if (status !== 200) throw new Error(`/readyz answered ${status}`);
      },
      120_000,
      200,
    );
  } catch (err) {
    await proc.stop();
    throw new Error(`topovol-controller-manager did not become ready (${err instanceof Error ? err.message : String(err)}):\n${proc.logTail(40)}`);
  }
  return proc;
}

function httpStatus(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { timeout: 2000 }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error('timeout')));
  });
}

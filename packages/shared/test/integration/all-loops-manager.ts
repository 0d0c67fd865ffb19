import path from 'node:path';
import { freePort, installCrds, ManagedProcess, repoRoot } from '@topovol/testing';
import type { ControlPlane } from '@topovol/testing';
import { CsiTestDriver } from '@topovol/testing/csi-test-driver';

export interface AllLoopsManager {
  manager: ManagedProcess;
  driver: CsiTestDriver;
  metricsPort: number;
  probePort: number;
  stop: () => Promise<void>;
}

/**
 * The real manager binary with every loop (pv-binder, zonal-pv-upgrade, capacity, rollback), the
 * capacity loop fed by the project's CSI test driver over a unix socket; leases and capacity
 * objects in `ns`. Installs the CRDs the capacity and rollback loops watch, so that a test file
 * using it passes when run alone as well as after the others.
 */
export async function startAllLoopsManager(cp: ControlPlane, ns: string, opts: { instance?: string; args?: string[] } = {}): Promise<AllLoopsManager> {
  await installCrds(cp.adminClient());
  // Replicas (instance) share the driver's name, each with a socket of its own, as sidecars would.
  const id = opts.instance ? `${ns}-${opts.instance}` : ns;
  const driver = new CsiTestDriver({ name: `${ns}.csi.topovol.test`, controllerCapabilities: ['CREATE_DELETE_VOLUME', 'GET_CAPACITY'], capacity: [{ segment: { zone: 'z1' }, capacity: 4n << 30n }] });
  await driver.start(`unix://${path.join(cp.dir, `${id}-csi.sock`)}`);
  const metricsPort = await freePort();
  const probePort = await freePort();
  const manager = new ManagedProcess({
    name: `${id}-manager`,
    command: process.execPath,
    args: [
      path.join(repoRoot(), 'bin', 'topovol-controller-manager.js'),
      `--kubeconfig=${cp.kubeconfigPath}`,
      '--controllers=*,zonal-pv-upgrade,capacity,rollback',
      `--leader-elect-namespace=${ns}`,
      `--metrics-bind-address=127.0.0.1:${metricsPort}`,
      // Plain HTTP for the suites that read metrics with httpGet; prometheus.test.ts scrapes the
      // default (HTTPS, reviewed) and passes --metrics-secure=true after it.
      '--metrics-secure=false',
      `--health-probe-bind-address=127.0.0.1:${probePort}`,
      `--csi-address=${driver.endpoint}`,
      `--capacity-namespace=${ns}`,
      '--capacity-ownerref-level=-1',
      '--log-format=json',
      ...(opts.args ?? []),
    ],
    logFile: path.join(cp.dir, `${id}-manager.log`),
  });
  return {
    manager,
    driver,
    metricsPort,
    probePort,
    stop: async () => {
      await manager.stop();
      await driver.stop();
    },
  };
}

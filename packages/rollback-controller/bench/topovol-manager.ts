import path from 'node:path';
import type { ControlPlane } from '@topovol/testing';
import { startManagerBinary } from '@topovol/testing';
import type { ManagedProcess } from '@topovol/testing';

/**
 * The real topovol-controller-manager with the pv-binder and rollback loops, as an operator runs it
 * but without leader election; the loops' own flags keep their defaults unless `extra` sets them.
 * It talks to the API server as the admin, not through the generated RBAC: the bench times the
 * loops, the RBAC tests prove their permissions.
 */
export function startTopovol(cp: ControlPlane, logDir: string, extra: readonly string[]): Promise<ManagedProcess> {
  return startManagerBinary({
    name: 'topovol-controller-manager',
    kubeconfig: cp.kubeconfigPath,
    args: ['--controllers=pv-binder,rollback', '--leader-elect=false', ...extra],
    logFile: path.join(logDir, 'topovol-controller-manager.log'),
  });
}

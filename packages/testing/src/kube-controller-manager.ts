import path from 'node:path';
import type { ControlPlane } from './control-plane.js';
import { controlPlaneBinaries } from './control-plane-binaries.js';
import { ManagedProcess } from './managed-process.js';

/**
 * The real kube-controller-manager (pinned, built by hack/control-plane-binaries.sh) running only
 * the named controllers against a test control plane, e.g. the pv/pvc protection controllers that
 * remove the kubernetes.io/pv(c)-protection finalizers. Its log is kube-controller-manager.log.
 */
export async function startKubeControllerManager(cp: ControlPlane, controllers: string[], extraFlags: string[] = []): Promise<ManagedProcess> {
  const bin = await controlPlaneBinaries(['kube-controller-manager']);
  return new ManagedProcess({
    name: 'kube-controller-manager',
    command: bin['kube-controller-manager'],
    logFile: path.join(cp.dir, 'kube-controller-manager.log'),
    args: [
      `--kubeconfig=${cp.kubeconfigPath}`,
      `--controllers=${controllers.join(',')}`,
      '--leader-elect=false',
      '--secure-port=0',
      '--use-service-account-credentials=false',
      `--service-account-private-key-file=${cp.serviceAccountKeyFile}`,
      `--root-ca-file=${cp.caFile}`,
      '--v=2',
      ...extraFlags,
    ],
  });
}

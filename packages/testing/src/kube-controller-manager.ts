import path from 'node:path';
import type { ControlPlane } from './control-plane.js';
import { controlPlaneBinaries } from './control-plane-binaries.js';
import { httpGet } from './http-get.js';
import { ManagedProcess } from './managed-process.js';

export interface KubeControllerManagerOptions {
  /**
   * Serve HTTPS on this port of 127.0.0.1 (a self-signed certificate in the control plane's
   * directory), /metrics to anyone as /healthz is by default: read with scrapeKubeControllerManager.
   */
  metricsPort?: number;
}

/**
 * The real kube-controller-manager (pinned, built by hack/control-plane-binaries.sh) running only
 * the named controllers against a test control plane, e.g. the pv/pvc protection controllers that
 * remove the kubernetes.io/pv(c)-protection finalizers. Its log is kube-controller-manager.log.
 */
export async function startKubeControllerManager(cp: ControlPlane, controllers: string[], extraFlags: string[] = [], opts: KubeControllerManagerOptions = {}): Promise<ManagedProcess> {
  const bin = await controlPlaneBinaries(['kube-controller-manager']);
  const serving =
    opts.metricsPort === undefined
      ? ['--secure-port=0']
      : [`--secure-port=${opts.metricsPort}`, '--bind-address=127.0.0.1', `--cert-dir=${path.join(cp.dir, 'kube-controller-manager-certs')}`, '--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics'];
  return new ManagedProcess({
    name: 'kube-controller-manager',
    command: bin['kube-controller-manager'],
    logFile: path.join(cp.dir, 'kube-controller-manager.log'),
    args: [
      `--kubeconfig=${cp.kubeconfigPath}`,
      `--controllers=${controllers.join(',')}`,
      '--leader-elect=false',
      ...serving,
      '--use-service-account-credentials=false',
      `--service-account-private-key-file=${cp.serviceAccountKeyFile}`,
      `--root-ca-file=${cp.caFile}`,
      '--v=2',
      ...extraFlags,
    ],
  });
}

/** kube-controller-manager's /metrics as text, from one started with `metricsPort`. */
export async function scrapeKubeControllerManager(port: number): Promise<string> {
  const { status, body } = await httpGet(`https://127.0.0.1:${port}/metrics`, { timeoutMs: 10_000 });
  if (status !== 200) throw new Error(`kube-controller-manager /metrics: HTTP ${status}: ${body.slice(0, 200)}`);
  return body;
}

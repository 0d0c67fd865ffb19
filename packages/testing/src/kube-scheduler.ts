import path from 'node:path';
import type { ControlPlane } from './control-plane.js';
import { controlPlaneBinaries } from './control-plane-binaries.js';
import { ManagedProcess } from './managed-process.js';

/**
 * The real kube-scheduler (pinned, built by hack/control-plane-binaries.sh) against a test control
 * plane: default profile, no leader election, no serving port (nothing scrapes it in tests).
 * Its log is kube-scheduler.log in the control plane's directory.
 *
 * StorageCapacityScoring (KEP-4049: VolumeBinding prefers the node with the most published free
 * space) is on by default from v1.37 and alpha before; it is turned on so that the stories that rely
 * on it (stale-capacity-story.ts) tell the same on the oldest supported release (hack/skew.sh).
 */
export async function startKubeScheduler(cp: ControlPlane, extraFlags: string[] = []): Promise<ManagedProcess> {
  const bin = await controlPlaneBinaries(['kube-scheduler']);
  const proc = new ManagedProcess({
    name: 'kube-scheduler',
    command: bin['kube-scheduler'],
    logFile: path.join(cp.dir, 'kube-scheduler.log'),
    args: [`--kubeconfig=${cp.kubeconfigPath}`, '--leader-elect=false', '--secure-port=0', '--v=2', '--feature-gates=StorageCapacityScoring=true', ...extraFlags],
  });
  return proc;
}

import { binariesFromScript } from './script-binaries.js';

export type ControlPlaneComponent = 'etcd' | 'kube-apiserver' | 'kube-scheduler' | 'kube-controller-manager' | 'kubectl';

/**
 * Paths of pinned control-plane binaries, provided by hack/control-plane-binaries.sh: built from
 * the Go module proxy and cached outside the repo, or taken from KUBEBUILDER_ASSETS.
 */
export async function controlPlaneBinaries(
  components: ControlPlaneComponent[],
): Promise<Record<ControlPlaneComponent, string>> {
  return binariesFromScript('control-plane-binaries.sh', components, 'control-plane binaries');
}

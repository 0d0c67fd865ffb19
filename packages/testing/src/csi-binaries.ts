import { binariesFromScript } from './script-binaries.js';

/** csi-provisioner-rbac.yaml: external-provisioner's deploy/kubernetes/rbac.yaml at the pinned version (not a binary). */
export type CsiComponent = 'csi-provisioner' | 'csi-provisioner-rbac.yaml';

/**
 * Paths of pinned CSI sidecar binaries, provided by hack/csi-binaries.sh: built from the Go module
 * proxy and cached outside the repo, or taken from TOPOVOL_CSI_ASSETS.
 */
export async function csiBinaries(components: CsiComponent[] = ['csi-provisioner']): Promise<Record<CsiComponent, string>> {
  return binariesFromScript('csi-binaries.sh', components, 'CSI binaries');
}

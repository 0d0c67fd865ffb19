import { csiBinaries } from '@topovol/testing/csi-test-driver';
import { binaryVersion, controlPlaneBinaries, topovolVersion } from '@topovol/testing';

/** The versions of what a capacity bench ran, for its report. */
export async function versions(): Promise<string[]> {
  const cp = await controlPlaneBinaries(['etcd', 'kube-apiserver', 'kube-controller-manager']);
  const csi = await csiBinaries(['csi-provisioner']);
  const named = (name: string, bin: string): string => `${name} ${binaryVersion(bin).replace(/^(Kubernetes|etcd Version:|csi-provisioner)\s*/, '')}`;
  return [named('kube-apiserver', cp['kube-apiserver']), named('etcd', cp.etcd), named('kube-controller-manager', cp['kube-controller-manager']), named('csi-provisioner', csi['csi-provisioner']), topovolVersion()];
}


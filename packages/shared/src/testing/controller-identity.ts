import path from 'node:path';
import type { KubeClient } from '../client/kube-client.js';
import { INSTALL_NAMESPACE } from '../manifests/manifest.js';
import { applyManifestsServerSide, yamlFiles } from './apply-manifests.js';
import { repoRoot } from './repo-root.js';
import { sharedControlPlane } from './shared-control-plane.js';

let installed: Promise<void> | undefined;

/**
 * Applies the install namespace and the generated RBAC of config/rbac (every loop's
 * ServiceAccount, ClusterRole and leader-election Role, and the all-in-one variant) to the shared
 * control plane, once per test process.
 */
export function installGeneratedRbac(): Promise<void> {
  installed ??= (async () => {
    const admin = (await sharedControlPlane()).adminClient();
    const root = repoRoot();
    const files = [path.join(root, 'config', 'manager', 'namespace.yaml'), ...yamlFiles(path.join(root, 'config', 'rbac'))];
    await applyManifestsServerSide(admin, files, 'topovol-tests');
  })();
  return installed;
}

/**
 * The client a loop under test runs with: authenticated as its own ServiceAccount
 * (`topovol-<controller>`) with a real token and only the generated RBAC, as in a cluster (issue 7,
 * acceptance 2). Any permission the loop uses but does not declare fails its suite with Forbidden,
 * and the audit log records what it did use (see mocha-rbac-coverage.ts).
 */
export async function controllerClient(controller: string): Promise<KubeClient> {
  await installGeneratedRbac();
  return (await sharedControlPlane()).serviceAccountClient(INSTALL_NAMESPACE, `topovol-${controller}`);
}

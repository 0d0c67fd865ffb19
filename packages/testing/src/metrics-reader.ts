import path from 'node:path';
import { Resources } from '@topovol/shared';
import type { KubeObject } from '@topovol/shared';
import { applyManifests } from './apply-manifests.js';
import type { ControlPlane } from './control-plane.js';
import { repoRoot } from './repo-root.js';

/**
 * A scraper of the managers' secure /metrics, set up as docs/install.md ("Metrics") says: the
 * shipped topovol-metrics-reader ClusterRole (config/rbac/roles/metrics-reader.yaml) bound to a
 * ServiceAccount `name` in `namespace`. Returns that ServiceAccount's token (what Prometheus's pod
 * has mounted) and the binding's name (cluster-scoped: delete it when done).
 */
export async function metricsReader(cp: ControlPlane, namespace: string, name: string): Promise<{ token: string; binding: string }> {
  const admin = cp.adminClient();
  await applyManifests(admin, [path.join(repoRoot(), 'config', 'rbac', 'roles', 'metrics-reader.yaml')]);
  await admin.create(Resources.serviceAccounts, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace } });
  const binding = `${namespace}-${name}`;
  await admin.create(Resources.clusterRoleBindings, {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: binding },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'topovol-metrics-reader' },
    subjects: [{ kind: 'ServiceAccount', name, namespace }],
  } as KubeObject);
  return { token: await cp.serviceAccountToken(namespace, name), binding };
}

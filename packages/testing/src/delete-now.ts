import type { KubeClient, KubeObject, ResourceType } from '@topovol/shared';

/**
 * Deletes an object and lifts its finalizers: the test control planes run no
 * kube-controller-manager, so nothing else would remove kubernetes.io/pv-protection or
 * pvc-protection, and a claim or volume left Terminating would still be there for other suites'
 * cluster-wide loops to act on. A refused delete throws unless `quiet` (cleanup that must not fail
 * a test); the finalizers' patch never does (the object may be gone already).
 */
export async function deleteNow(client: KubeClient, r: ResourceType, name: string, namespace?: string, opts: { quiet?: boolean } = {}): Promise<void> {
  await client.delete(r, name, namespace).catch((err: unknown) => {
    if (!opts.quiet) throw err;
  });
  await client.patch<KubeObject>(r, name, namespace, 'merge', { metadata: { finalizers: null } }).catch(() => undefined);
}

import type { KubeClient } from '../client/kube-client.js';
import { Resources } from '../informer/resources.js';
import type { KubeObject } from '../informer/object-key.js';

/** Creates a fresh namespace for one test (generateName), returning its name. */
export async function createTestNamespace(client: KubeClient, prefix = 'test-'): Promise<string> {
  const ns = await client.create<KubeObject>(Resources.namespaces, {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { generateName: prefix, labels: { 'topovol.dev/test': 'true' } },
  });
  return ns.metadata!.name!;
}

import type { KubeClient } from '../client/kube-client.js';

/** Creates a fresh namespace for one test (generateName), returning its name. */
export async function createTestNamespace(client: KubeClient, prefix = 'test-'): Promise<string> {
  const ns = await client.core.createNamespace({
    body: { metadata: { generateName: prefix, labels: { 'topovol.dev/test': 'true' } } },
  });
  return ns.metadata!.name!;
}

import type { KubeClient } from '@topovol/shared';
import { Resources } from '@topovol/shared';
import type { KubeObject } from '@topovol/shared';

/** Creates a fresh namespace for one test (generateName), returning its name. */
export async function createTestNamespace(client: KubeClient, prefix = 'test-'): Promise<string> {
  const ns = await client.create<KubeObject>(Resources.namespaces, {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { generateName: prefix, labels: { 'topovol.dev/test': 'true' } },
  });
  return ns.metadata!.name!;
}

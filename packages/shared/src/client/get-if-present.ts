import { isNotFoundNamed } from './errors.js';
import type { KubeClient } from './kube-client.js';
import type { ResourceType } from '../informer/resources.js';
import type { KubeObject } from '../informer/object-key.js';

/**
 * The object as the server has it, or undefined when the server says it is not there. Only a 404
 * whose Status names the object counts (isNotFoundNamed): callers act on "gone" (a volume Released,
 * a selected node removed, a claim taken as deleted), and a bare 404 from a proxy in front of the API
 * server says nothing about the object; it is thrown, as any other failure, and the caller retries.
 * client-go's callers use apierrors.IsNotFound, which takes any 404 (docs/divergences.md).
 */
export async function getIfPresent<T extends KubeObject>(client: Pick<KubeClient, 'get'>, resource: ResourceType, name: string, namespace?: string): Promise<T | undefined> {
  try {
    return await client.get<T>(resource, name, namespace);
  } catch (err) {
    if (isNotFoundNamed(err, resource.plural, name)) return undefined;
    throw err;
  }
}

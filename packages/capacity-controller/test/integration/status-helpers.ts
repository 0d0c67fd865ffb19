import { randomBytes } from 'node:crypto';
import { metricsRegistry, Resources } from '@topovol/shared';
import type { KubeClient, KubeObject } from '@topovol/shared';
import { controllerClient, installCrds, sharedControlPlane } from '@topovol/testing';
import { CSIDriverCapacities, CSIDriverCapacityShards, LABEL_CAPACITY_DRIVER, readDriverStatus } from '../../src/status/index.js';
import type { CSIDriverCapacity, DriverCapacityStatus, StorageStatus } from '../../src/status/index.js';

/**
 * The status suites' clients: admin, which reads (with the CRDs installed), and the capacity loop's
 * ServiceAccount with the generated RBAC, which the writers run as.
 */
export async function statusClients(): Promise<{ admin: KubeClient; writerClient: KubeClient }> {
  const admin = (await sharedControlPlane()).adminClient();
  await installCrds(admin);
  return { admin, writerClient: await controllerClient('capacity') };
}

export const uniqueDriver = (prefix: string): string => `${prefix}-${randomBytes(3).toString('hex')}.csi.topovol.test`;

export async function createCSIDriver(client: KubeClient, name: string): Promise<string> {
  const d = await client.create<KubeObject>(Resources.csiDrivers, { apiVersion: 'storage.k8s.io/v1', kind: 'CSIDriver', metadata: { name }, spec: {} } as KubeObject);
  return d.metadata!.uid!;
}

/** A driver's aggregated status as a reader sees it: the head, every shard, their pools merged. */
export const driverStatus = (client: KubeClient, driverName: string): Promise<DriverCapacityStatus> => readDriverStatus(client, driverName);

/** The head (conditions, totals), or undefined before the first write. */
export const headOf = async (client: KubeClient, driverName: string): Promise<CSIDriverCapacity | undefined> => client.get<CSIDriverCapacity>(CSIDriverCapacities, driverName).catch(() => undefined);

/** Pool names of one class, sorted. */
export function poolsOf(storage: readonly StorageStatus[], cls: string): string[] {
  return (storage.find((s) => s.storageClassName === cls)?.pools ?? []).map((p) => p.name).sort();
}

/** "class/pool" of every pool of a driver, as a reader sees them. */
export async function poolKeys(client: KubeClient, driverName: string): Promise<string[]> {
  return (await readDriverStatus(client, driverName)).storage.flatMap((s) => (s.pools ?? []).map((p) => `${s.storageClassName}/${p.name}`));
}

/** Deletes a driver's head and shards (no garbage collector runs in most tests). */
export async function deleteDriverStatus(client: KubeClient, driverName: string): Promise<void> {
  await client.delete(CSIDriverCapacities, driverName).catch(() => undefined);
  const shards = await client.list<KubeObject>(CSIDriverCapacityShards, { labelSelector: `${LABEL_CAPACITY_DRIVER}=${driverName}` }).catch(() => ({ items: [] }));
  await Promise.all(shards.items.map((s) => client.delete(CSIDriverCapacityShards, s.metadata!.name!).catch(() => undefined)));
}

/** topovol_capacity_status_writes_total for one operation and result. */
export async function statusWrites(operation: string, result: string): Promise<number> {
  const m = metricsRegistry.getSingleMetric('topovol_capacity_status_writes_total');
  if (!m) return 0;
  const { values } = await m.get();
  return values.filter((v) => v.labels.operation === operation && v.labels.result === result).reduce((s, v) => s + v.value, 0);
}

/** One API request: method and path without the query. */
export interface RecordedRequest {
  method: string;
  path: string;
}

/**
 * The client, recording every request it makes (method and path) into `log`. Every public method
 * funnels through requestText() (request() on the target calls the target's own), so calling them
 * with the proxy as `this` sees each exactly once.
 */
export function recordingClient(client: KubeClient, log: RecordedRequest[]): KubeClient {
  return new Proxy(client, {
    get(target, prop, receiver) {
      if (prop === 'request' || prop === 'requestText') {
        return (method: string, path: string, opts?: unknown) => {
          log.push({ method, path: path.split('?')[0]! });
          return prop === 'request' ? target.request(method, path, opts as Parameters<KubeClient['request']>[2]) : target.requestText(method, path, opts as Parameters<KubeClient['requestText']>[2]);
        };
      }
      const v: unknown = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(receiver) : v;
    },
  });
}

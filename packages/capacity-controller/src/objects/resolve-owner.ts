import { setTimeout as wait } from 'node:timers/promises';
import { classifyError, doublingBackoffMs, isNotFound, Resources } from '@topovol/shared';
import type { ApiErrorKind, KubeClient, KubeObject, Logger, ResourceType } from '@topovol/shared';
import type { OwnerReference } from './capacity-object.js';

const APPS: Record<string, ResourceType> = {
  ReplicaSet: { group: 'apps', version: 'v1', plural: 'replicasets', kind: 'ReplicaSet', namespaced: true },
  StatefulSet: { group: 'apps', version: 'v1', plural: 'statefulsets', kind: 'StatefulSet', namespaced: true },
  Deployment: { group: 'apps', version: 'v1', plural: 'deployments', kind: 'Deployment', namespaced: true },
  DaemonSet: { group: 'apps', version: 'v1', plural: 'daemonsets', kind: 'DaemonSet', namespaced: true },
};

/**
 * The owner of our capacity objects, as external-provisioner's --capacity-ownerref-level: start at
 * our own pod ($POD_NAME in $NAMESPACE) and climb `level` controller references, so the objects are
 * garbage-collected with the deployment that made them. Without $POD_NAME it is a start-up error
 * (level -1 means no owner).
 */
export async function resolveOwner(client: KubeClient, level: number, namespace: string, log: Logger, sleep: (ms: number) => Promise<unknown> = wait): Promise<OwnerReference | undefined> {
  if (level < 0) return undefined;
  const podName = process.env.POD_NAME;
  // As external-provisioner: objects without the owner asked for would outlive the deployment.
  if (!podName) throw new Error(`--capacity-ownerref-level=${level} needs $POD_NAME (and $NAMESPACE) to find the owner of the CSIStorageCapacity objects; set them from the downward API, or pass --capacity-ownerref-level=-1 for objects without an owner`);
  // The owner is our pod or its controllers, in the pod's namespace, and must be in the objects'
  // namespace too: the garbage collector takes an owner reference to another namespace's object as
  // absent and deletes the dependents (Kubernetes docs, "Owners and dependents"). Looked up in the
  // objects' namespace instead, a pod there of our pod's name would become their owner.
  const podNamespace = process.env.NAMESPACE;
  if (!podNamespace) throw new Error(`--capacity-ownerref-level=${level} needs $NAMESPACE (and $POD_NAME) to find the owner of the CSIStorageCapacity objects; set them from the downward API, or pass --capacity-ownerref-level=-1 for objects without an owner`);
  if (podNamespace !== namespace) {
    throw new Error(`--capacity-ownerref-level=${level}: the CSIStorageCapacity objects go to namespace ${namespace} (--capacity-namespace), but this pod runs in ${podNamespace} ($NAMESPACE), and an owner in another namespace counts as none (the garbage collector would delete the objects); run in the objects' namespace, or pass --capacity-ownerref-level=-1`);
  }
  log.debug('resolving the owner of capacity objects', { pod: podName, ownerLevel: level });
  const read = (type: ResourceType, name: string): Promise<KubeObject> => waitingOut(() => client.get<KubeObject>(type, name, namespace), `${type.kind}/${name}`, log, sleep);
  let obj: KubeObject = await read(Resources.pods, podName);
  for (let i = 0; i < level; i++) {
    const ref = obj.metadata?.ownerReferences?.find((r) => r.controller);
    // By kind and group: another group's kind of the same name (OpenKruise's apps.kruise.io
    // StatefulSet) is not the apps/v1 object of that name, which may be another workload's.
    const type = ref && ref.apiVersion === 'apps/v1' ? APPS[ref.kind] : undefined;
    if (!ref || !type) {
      const found = ref ? `its controller is ${ref.apiVersion}/${ref.kind} ${ref.name}` : 'it has no controller';
      throw new Error(`--capacity-ownerref-level=${level}: ${obj.kind ?? 'Pod'}/${obj.metadata?.name} has no apps/v1 controller at level ${i + 1} (${found}); Topovol follows apps/v1 ReplicaSets, StatefulSets, Deployments and DaemonSets only (docs/divergences.md)`);
    }
    try {
      obj = await read(type, ref.name);
    } catch (err) {
      if (isNotFound(err)) throw new Error(`--capacity-ownerref-level=${level}: owner ${ref.kind}/${ref.name} not found`);
      throw err;
    }
  }
  const md = obj.metadata ?? {};
  return { apiVersion: obj.apiVersion ?? 'v1', kind: obj.kind ?? 'Pod', name: md.name ?? '', uid: md.uid ?? '', controller: true };
}

/** Errors of the API server or the network, which pass: not of the configuration, which do not. */
const TRANSIENT: ReadonlySet<ApiErrorKind> = new Set<ApiErrorKind>(['TooManyRequests', 'Timeout', 'Connection', 'ServerError']);
const FIRST_WAIT_MS = 1_000;
const MAX_WAIT_MS = 30_000;

/**
 * A read at setup, tried again after transient errors (1 s, doubling, at most 30 s apart, at least
 * what Retry-After asks). external-provisioner exits on the first failure here (klog.Fatalf in
 * cmd/csi-provisioner); once per restart, an API server that is briefly unavailable then held the
 * manager in a crash loop, its other loops included (docs/divergences.md).
 */
async function waitingOut<T>(attempt: () => Promise<T>, what: string, log: Logger, sleep: (ms: number) => Promise<unknown>): Promise<T> {
  for (let failures = 1; ; failures++) {
    try {
      return await attempt();
    } catch (err) {
      const c = classifyError(err);
      if (!TRANSIENT.has(c.kind)) throw err;
      const retryInMs = Math.max(doublingBackoffMs(FIRST_WAIT_MS, failures, MAX_WAIT_MS), (c.retryAfterSeconds ?? 0) * 1000);
      log.warn('reading the owner of the CSIStorageCapacity objects failed; trying again', { object: what, error: c.message, retryInMs });
      await sleep(retryInMs);
    }
  }
}

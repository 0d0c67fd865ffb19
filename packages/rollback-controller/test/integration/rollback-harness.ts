import { rollbackDescriptor } from '../../src/rollback-descriptor.js';
import { claimNamesOfPod, projectClaim, projectPod, Resources, retryOnConflict } from '@topovol/shared';
import type { Event, Informer, KubeClient, KubeObject, Node, PersistentVolume, PersistentVolumeClaim, Pod } from '@topovol/shared';
import { createReadyNode, eventually, InProcessLoop, installCrds, sharedControlPlane } from '@topovol/testing';
import type { InProcessLoopOptions } from '@topovol/testing';
import { ProvisioningRollbacks } from '../../src/rollback/intent/provisioning-rollback.js';
import type { ProvisioningRollback } from '../../src/rollback/intent/provisioning-rollback.js';

/** The rollback loop running in-process against the test API server (its CRD installed first). */
export type RunningRollback = InProcessLoop;
export const RunningRollback = {
  start: async (args: string[] = [], opts?: InProcessLoopOptions): Promise<InProcessLoop> => {
    await installCrds((await sharedControlPlane()).adminClient());
    return InProcessLoop.start(rollbackDescriptor, ['--concurrent-workers=4', ...args], opts);
  },
};

/** The loop's own claim and pod informers (the factory hands back the ones its setup asked for). */
export function loopCaches(loop: RunningRollback): { claims: Informer<PersistentVolumeClaim>; pods: Informer<Pod> } {
  return {
    claims: loop.informers.forResource<PersistentVolumeClaim>(Resources.persistentVolumeClaims, { transform: projectClaim }),
    pods: loop.informers.forResource<Pod>(Resources.pods, { transform: projectPod }),
  };
}

/**
 * Waits until the loop's own cache shows the claim with its selected node and the pod unscheduled,
 * i.e. until the loop has seen the provisioning being asked for: a volume it did not see being
 * provisioned is never marked unused. (A real provisioner takes far longer than the watch.)
 */
export async function seenByLoop(loop: RunningRollback, ns: string, claimName: string): Promise<void> {
  const { claims, pods } = loopCaches(loop);
  await eventually(() => {
    if (!claims.cache.get(`${ns}/${claimName}`)?.metadata?.annotations?.[SEL]) throw new Error(`the loop has not seen ${claimName}'s selected node yet`);
    if (!pods.cache.list().some((p) => p.metadata?.namespace === ns && claimNamesOfPod(p).includes(claimName))) throw new Error('the loop has not seen the pod yet');
    // Provisionings are observed only on claims listed after the pods (the loop lists them again at start-up).
    if (!claims.listedAfter(pods)) throw new Error('the loop has not listed the claims after the pods yet');
  });
  // The handlers run right after the cache is updated.
  await new Promise((r) => setImmediate(r));
}

/** The ProvisioningRollback records of a pod's workload (by pod uid label). */
export async function recordsOf(client: KubeClient, podUid: string): Promise<ProvisioningRollback[]> {
  return (await client.list<ProvisioningRollback>(ProvisioningRollbacks, { labelSelector: `rollback.topovol.io/pod-uid=${podUid}` })).items;
}

export const SEL = 'volume.kubernetes.io/selected-node';
export const HOSTNAME = 'kubernetes.io/hostname';
export const PROVISIONER = 'rollback.test.topovol.io';

export function claim(ns: string, name: string, cls: string): PersistentVolumeClaim {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name, namespace: ns, labels: { app: 'rollback-test' }, annotations: { 'example.com/keep': 'me' } },
    spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, storageClassName: cls },
  };
}

export function pod(ns: string, name: string, claims: string[]): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: ns },
    spec: {
      // Nothing schedules it in these tests: the test plays the scheduler's selected-node writes.
      schedulerName: 'nobody',
      containers: [{ name: 'c', image: 'busybox' }],
      volumes: claims.map((c) => ({ name: c, persistentVolumeClaim: { claimName: c } })),
    },
  };
}

/** What the scheduler's VolumeBinding plugin does for a delayed-binding claim it wants provisioned. */
export async function selectNode(client: KubeClient, ns: string, name: string, node: string | null): Promise<void> {
  await client.patch(Resources.persistentVolumeClaims, name, ns, 'merge', { metadata: { annotations: { [SEL]: node } } });
}

/** What an external provisioner does after CreateVolume succeeded: a PV pre-bound to the claim. */
/**
 * A PV as the external provisioner creates it, pre-bound to the claim. `administrator: true` makes
 * it a statically created PV instead (no provisioned-by annotation from the first write on).
 */
export async function provision(client: KubeClient, ns: string, claimName: string, node: string, pvName: string, opts: { administrator?: boolean; policy?: 'Delete' | 'Retain' } = {}): Promise<PersistentVolume> {
  const c = await client.get<PersistentVolumeClaim>(Resources.persistentVolumeClaims, claimName, ns);
  return client.create<PersistentVolume>(Resources.persistentVolumes, {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name: pvName, annotations: opts.administrator ? {} : { 'pv.kubernetes.io/provisioned-by': PROVISIONER } },
    spec: {
      capacity: { storage: '1Gi' },
      accessModes: ['ReadWriteOnce'],
      persistentVolumeReclaimPolicy: opts.policy ?? 'Delete',
      storageClassName: c.spec?.storageClassName,
      claimRef: { kind: 'PersistentVolumeClaim', apiVersion: 'v1', namespace: ns, name: claimName, uid: c.metadata?.uid, resourceVersion: c.metadata?.resourceVersion },
      csi: { driver: PROVISIONER, volumeHandle: `handle-${pvName}` },
      nodeAffinity: { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: HOSTNAME, operator: 'In', values: [node] }] }] } },
    },
  });
}

/** What the external provisioner records when CreateVolume fails, and its reschedule signal. */
export async function failProvisioning(client: KubeClient, ns: string, claimName: string, message: string): Promise<void> {
  const c = await client.get<PersistentVolumeClaim>(Resources.persistentVolumeClaims, claimName, ns);
  // Event times have whole seconds: a new failure must not share its second with the last one, or
  // it could not be told apart from it (the loop acts only on failures newer than its last rollback).
  const earlier = (await client.list<Event>(Resources.events, { namespace: ns, fieldSelector: `involvedObject.name=${claimName},reason=ProvisioningFailed` })).items;
  const last = Math.max(0, ...earlier.map((e) => Date.parse(e.lastTimestamp ?? '') || 0));
  while (Math.floor(Date.now() / 1000) * 1000 <= last) await new Promise((r) => setTimeout(r, 100));
  await client.create<Event>(Resources.events, provisioningFailed(ns, `${claimName}.failed.${Date.now()}`, claimReference(c), message));
  await selectNode(client, ns, claimName, null);
}

/** What client-go's event recorder names as the Event's object: the claim as the recorder's caller had it, its resourceVersion too (k8s.io/client-go/tools/reference). */
export function claimReference(c: PersistentVolumeClaim): Event['involvedObject'] {
  return { kind: 'PersistentVolumeClaim', apiVersion: 'v1', namespace: c.metadata?.namespace, name: c.metadata?.name, uid: c.metadata?.uid, resourceVersion: c.metadata?.resourceVersion };
}

/** A core/v1 ProvisioningFailed Event named `name` in `ns` about `involved`, as external-provisioner records one, dated `at` (whole seconds). */
export function provisioningFailed(ns: string, name: string, involved: Event['involvedObject'], message: string, at = new Date(), component = `${PROVISIONER}_test_0`): Event {
  const time = at.toISOString().replace(/\.\d+Z$/, 'Z');
  return { apiVersion: 'v1', kind: 'Event', metadata: { name, namespace: ns }, involvedObject: involved, reason: 'ProvisioningFailed', message, type: 'Warning', source: { component }, firstTimestamp: time, lastTimestamp: time, count: 1 };
}

/**
 * A Ready node without taints. A bare Node gets the not-ready NoSchedule taint from the
 * TaintNodesByCondition admission plugin, which the controller would rightly read as "the pod cannot
 * run there" and which would hide the signal a test means to exercise.
 */
export async function createNode(client: KubeClient, name: string): Promise<void> {
  await createReadyNode(client, name);
}

export async function updateNodeStatus(client: KubeClient, name: string, status: NonNullable<Node['status']>): Promise<void> {
  await retryOnConflict(async () => {
    const n = await client.get<Node>(Resources.nodes, name);
    n.status = { ...n.status, ...status };
    await client.replaceStatus(Resources.nodes, n);
  });
}

export async function eventFor(client: KubeClient, obj: KubeObject, reason: string): Promise<Event> {
  const ns = obj.metadata?.namespace || 'default';
  return eventually(async () => {
    const list = await client.list<Event>(Resources.events, { namespace: ns, fieldSelector: `involvedObject.name=${obj.metadata?.name},reason=${reason}` });
    const e = list.items.find((x) => x.involvedObject.kind === obj.kind);
    if (!e) throw new Error(`no ${reason} event for ${obj.kind} ${obj.metadata?.name}`);
    return e;
  });
}

/** What kube-scheduler's bind does: POST pods/binding. */
export async function bindPod(client: KubeClient, ns: string, podName: string, node: string): Promise<void> {
  await client.request('POST', `/api/v1/namespaces/${encodeURIComponent(ns)}/pods/${encodeURIComponent(podName)}/binding`, {
    body: { apiVersion: 'v1', kind: 'Binding', metadata: { name: podName, namespace: ns }, target: { apiVersion: 'v1', kind: 'Node', name: node } },
  });
}

import { rollbackDescriptor } from '../../src/rollback-descriptor.js';
import { Resources, retryOnConflict } from '@topovol/shared';
import type { Event, KubeClient, KubeObject, Node, PersistentVolume, PersistentVolumeClaim, Pod } from '@topovol/shared';
import { createReadyNode, eventually, InProcessLoop } from '@topovol/shared/testing';
import type { InProcessLoopOptions } from '@topovol/shared/testing';

/** The rollback loop running in-process against the test API server. */
export type RunningRollback = InProcessLoop;
export const RunningRollback = {
  start: (args: string[] = [], opts?: InProcessLoopOptions): Promise<InProcessLoop> => InProcessLoop.start(rollbackDescriptor, ['--concurrent-workers=4', ...args], opts),
};

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
export async function provision(client: KubeClient, ns: string, claimName: string, node: string, pvName: string, opts: { administrator?: boolean } = {}): Promise<PersistentVolume> {
  const c = await client.get<PersistentVolumeClaim>(Resources.persistentVolumeClaims, claimName, ns);
  return client.create<PersistentVolume>(Resources.persistentVolumes, {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name: pvName, annotations: opts.administrator ? {} : { 'pv.kubernetes.io/provisioned-by': PROVISIONER } },
    spec: {
      capacity: { storage: '1Gi' },
      accessModes: ['ReadWriteOnce'],
      persistentVolumeReclaimPolicy: 'Delete',
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
  const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  await client.create<Event>(Resources.events, {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { name: `${claimName}.failed.${Date.now()}`, namespace: ns },
    involvedObject: { kind: 'PersistentVolumeClaim', apiVersion: 'v1', namespace: ns, name: claimName, uid: c.metadata?.uid },
    reason: 'ProvisioningFailed',
    message,
    type: 'Warning',
    source: { component: `${PROVISIONER}_test_0` },
    firstTimestamp: now,
    lastTimestamp: now,
    count: 1,
  });
  await selectNode(client, ns, claimName, null);
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

import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { pvBinderDescriptor } from '../../src/pv-binder-descriptor.js';
import { ANN_BOUND_BY_CONTROLLER, projectClaim, Resources } from '@topovol/shared';
import type { Event, KubeClient, KubeObject, PersistentVolume, PersistentVolumeClaim, StorageClass } from '@topovol/shared';
import { createTestNamespace, denyingPolicy, eventually, FaultProxy, INSTALL_NAMESPACE, InProcessLoop, installGeneratedRbac, sharedControlPlane, untilRefused } from '@topovol/testing';
import type { InProcessLoopOptions } from '@topovol/testing';

/** The pv-binder loop running in-process against the test API server. */
export type RunningBinder = InProcessLoop;
export const RunningBinder = {
  start: (args: string[] = [], opts?: InProcessLoopOptions): Promise<InProcessLoop> => InProcessLoop.start(pvBinderDescriptor, ['--concurrent-pv-binder-syncs=8', ...args], opts),
};

export const GiB = (n: number): string => `${n}Gi`;

/**
 * The binder as its ServiceAccount (the generated role) behind a fault proxy (seeded) on the shared
 * control plane: for holding back one of its watches, as a watch that lags would.
 */
export async function binderBehindProxy(seed: number, args: string[] = []): Promise<{ admin: KubeClient; proxy: FaultProxy; binder: InProcessLoop }> {
  const cp = await sharedControlPlane();
  const proxy = await FaultProxy.start(cp.url, readFileSync(cp.caFile), seed);
  await installGeneratedRbac(cp);
  const token = await cp.serviceAccountToken(INSTALL_NAMESPACE, 'topovol-pv-binder');
  const binder = await RunningBinder.start(args, { client: proxy.client(token) });
  return { admin: cp.adminClient(), proxy, binder };
}

/** A binder behind a fault proxy, and a namespace of the suite's own. */
export interface BinderBehindProxy {
  admin: KubeClient;
  proxy: FaultProxy;
  binder: InProcessLoop;
  ns: string;
}

/**
 * Registers a suite's hooks for a binder behind a fault proxy (binderBehindProxy): started with a
 * namespace (prefix `nsPrefix`) before the suite and handed to `use`; whatever a test held released
 * after it; stopped after the suite.
 */
export function binderBehindProxySuite(seed: number, nsPrefix: string, use: (t: BinderBehindProxy) => void, args: string[] = []): void {
  let t: BinderBehindProxy | undefined;
  before(async function () {
    const started = await binderBehindProxy(seed, args);
    t = { ...started, ns: await createTestNamespace(started.admin, nsPrefix) };
    use(t);
  });
  afterEach(function () {
    t?.proxy.release();
  });
  after(async function () {
    t?.proxy.release();
    await t?.binder.stop();
    await t?.proxy.stop();
  });
}

export function pv(name: string, size: string, extra: { class?: string; claimRef?: NonNullable<PersistentVolume['spec']>['claimRef']; policy?: string; annotations?: Record<string, string>; labels?: Record<string, string>; nodeAffinity?: NonNullable<PersistentVolume['spec']>['nodeAffinity']; accessModes?: string[] } = {}): PersistentVolume {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name, annotations: extra.annotations, labels: extra.labels },
    spec: {
      capacity: { storage: size },
      accessModes: extra.accessModes ?? ['ReadWriteOnce'],
      persistentVolumeReclaimPolicy: extra.policy ?? 'Retain',
      storageClassName: extra.class ?? '',
      claimRef: extra.claimRef,
      nodeAffinity: extra.nodeAffinity,
      hostPath: { path: `/tmp/${name}` },
    },
  };
}

export function pvc(namespace: string, name: string, size: string, extra: { class?: string | null; volumeName?: string; selector?: NonNullable<PersistentVolumeClaim['spec']>['selector']; annotations?: Record<string, string> } = {}): PersistentVolumeClaim {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name, namespace, annotations: extra.annotations },
    spec: {
      accessModes: ['ReadWriteOnce'],
      resources: { requests: { storage: size } },
      storageClassName: extra.class === null ? undefined : (extra.class ?? ''),
      volumeName: extra.volumeName,
      selector: extra.selector,
    },
  };
}

export async function getPV(client: KubeClient, name: string): Promise<PersistentVolume> {
  return client.get<PersistentVolume>(Resources.persistentVolumes, name);
}

export async function getPVC(client: KubeClient, ns: string, name: string): Promise<PersistentVolumeClaim> {
  return client.get<PersistentVolumeClaim>(Resources.persistentVolumeClaims, name, ns);
}

/**
 * What someone removing a bound volume's claimRef by hand leaves, once upstream's syncVolume has
 * seen it: no claimRef, no bound-by-controller mark, phase Available.
 */
export async function unreferenceByHand(client: KubeClient, name: string): Promise<void> {
  const v = await getPV(client, name);
  const { [ANN_BOUND_BY_CONTROLLER]: _mark, ...annotations } = v.metadata?.annotations ?? {};
  const unref = await client.replace<PersistentVolume>(Resources.persistentVolumes, { ...v, metadata: { ...v.metadata, annotations }, spec: { ...v.spec, claimRef: undefined } });
  await client.replaceStatus<PersistentVolume>(Resources.persistentVolumes, { ...unref, status: { phase: 'Available' } });
}

export { deleteNow } from '@topovol/testing';

/** Waits for an Event with this reason on the object and returns it. */
export async function eventFor(client: KubeClient, obj: KubeObject, reason: string): Promise<Event> {
  const ns = obj.metadata?.namespace || 'default';
  return eventually(async () => {
    const list = await client.list<Event>(Resources.events, { namespace: ns, fieldSelector: `involvedObject.name=${obj.metadata?.name},reason=${reason}` });
    const e = list.items.find((x) => x.involvedObject.kind === obj.kind);
    if (!e) throw new Error(`no ${reason} event for ${obj.kind} ${obj.metadata?.name}`);
    return e;
  });
}

/**
 * A Provisioning Event forged in `ns` (a tenant's namespace) that names another namespace's claim
 * by its uid, a year ahead: "the provisioner is working on it" for as long as it would be believed.
 */
export function forgedProvisioningEvent(ns: string, claimName: string, uid: string): Event {
  const ahead = new Date(Date.now() + 365 * 24 * 3_600_000).toISOString();
  return {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { name: 'forged', namespace: ns },
    involvedObject: { apiVersion: 'v1', kind: 'PersistentVolumeClaim', namespace: ns, name: claimName, uid },
    reason: 'Provisioning',
    message: 'External provisioner is provisioning volume for claim',
    type: 'Normal',
    firstTimestamp: ahead,
    lastTimestamp: ahead,
    count: 1,
    source: { component: 'example.com/csi' },
  };
}

/**
 * What sig-storage-lib-external-provisioner records at every provisioning attempt: one Event, its
 * count raised on each retry; its timestamps from the provisioner's clock, `clockOffsetMs` off ours.
 */
export async function provisioningAttempt(client: KubeClient, claim: PersistentVolumeClaim, existing?: Event, clockOffsetMs = 0): Promise<Event> {
  const ns = claim.metadata?.namespace ?? '';
  const now = new Date(Date.now() + clockOffsetMs).toISOString().replace(/\.\d+Z$/, 'Z');
  if (existing) {
    return client.patch<Event>(Resources.events, existing.metadata?.name ?? '', ns, 'merge', { count: (existing.count ?? 1) + 1, lastTimestamp: now });
  }
  return client.create<Event>(Resources.events, {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { name: `${claim.metadata?.name}.provisioning`, namespace: ns },
    involvedObject: { kind: 'PersistentVolumeClaim', apiVersion: 'v1', namespace: ns, name: claim.metadata?.name, uid: claim.metadata?.uid },
    reason: 'Provisioning',
    message: `External provisioner is provisioning volume for claim "${ns}/${claim.metadata?.name}"`,
    type: 'Normal',
    source: { component: 'example.com/csi_test-host_0000' },
    firstTimestamp: now,
    lastTimestamp: now,
    count: 1,
  });
}

/**
 * A volume held for a claim (docs/divergences.md, "A free-looking volume a Bound claim names"): the
 * volume `name` (class `name`, 1Gi) is Available with no claimRef, and the claim `holder` in `ns`
 * names it and is Bound, with the annotations a binder leaves (its status written as a binder
 * would, which tenants cannot), in the binder's cache. A policy refuses the volume's writes that
 * would bind it to the holder (a re-binding starts with the volume's phase), so the hold lasts until
 * the holder goes, leaves phase Bound, or `lift` is called. The caller deletes the volume and the
 * class.
 */
export async function heldVolume(admin: KubeClient, binder: InProcessLoop, ns: string, name: string, holder = 'holder'): Promise<{ lift: () => Promise<void> }> {
  await admin.create<StorageClass>(Resources.storageClasses, { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name }, provisioner: 'kubernetes.io/no-provisioner' });
  await admin.create(Resources.persistentVolumes, pv(name, '1Gi', { class: name }));
  await eventually(async () => expect((await getPV(admin, name)).status?.phase).to.equal('Available'));
  const message = 'this volume is not re-bound to its holder';
  const lift = await denyingPolicy(admin, name, {
    rule: { operations: ['UPDATE'], resources: ['persistentvolumes', 'persistentvolumes/status'] },
    validation: { expression: `object.metadata.name != '${name}' || (has(object.spec.claimRef) && object.spec.claimRef.name != '${holder}')`, message },
  });
  try {
    await untilRefused(() => admin.patch(Resources.persistentVolumes, name, undefined, 'merge', { status: { phase: 'Bound' } }, { subresource: 'status', dryRun: true }), message, 'phase writes of the held volume refused');
    await admin.create(Resources.persistentVolumeClaims, pvc(ns, holder, '1Gi', { class: name, volumeName: name, annotations: { 'pv.kubernetes.io/bind-completed': 'yes', 'pv.kubernetes.io/bound-by-controller': 'yes' } }));
    await admin.patch(Resources.persistentVolumeClaims, holder, ns, 'merge', { status: { phase: 'Bound' } }, { subresource: 'status' });
    const claims = binder.informers.forResource<PersistentVolumeClaim>(Resources.persistentVolumeClaims, { transform: projectClaim });
    await eventually(() => expect(claims.cache.get(`${ns}/${holder}`)?.status?.phase, "the holder Bound in the binder's cache").to.equal('Bound'));
    return { lift };
  } catch (err) {
    await lift();
    throw err;
  }
}

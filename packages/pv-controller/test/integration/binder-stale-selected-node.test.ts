import { expect } from 'chai';
import { PROVISIONING_EVENTS, Resources, slimEvent } from '@topovol/shared';
import type { Event, KubeClient, Node, Pod, StorageClass } from '@topovol/shared';
import { createTestNamespace, eventually, namespaceTenant, sharedControlPlane } from '@topovol/testing';
import { eventFor, getPVC, provisioningAttempt, pvc, RunningBinder } from './binder-harness.js';

const SEL = 'volume.kubernetes.io/selected-node';
const GRACE_S = 6;

// kubernetes #112347: a selected-node left behind after its pod went away (deleted, or preempted
// and placed elsewhere) pins provisioning to the wrong node forever. The binder clears it after
// --stale-selected-node-grace, and only while the external provisioner has shown no activity on the
// claim at all: once it has tried, a CreateVolume may have made the volume, and the annotation is
// left to the provisioner (it retries while the annotation is there, or gives the node back).
describe('pv-binder: stale selected-node (kubernetes #112347)', function () {
  this.timeout(90_000);
  let admin: KubeClient;
  let binder: RunningBinder;
  let ns: string;
  let cls: string;
  const name = (s: string): string => `${ns}-${s}`;

  before(async function () {
    admin = (await sharedControlPlane()).adminClient();
    binder = await RunningBinder.start([`--stale-selected-node-grace=${GRACE_S}s`]);
  });
  after(async function () {
    await binder?.stop();
  });
  beforeEach(async function () {
    ns = await createTestNamespace(admin, 'stale-');
    cls = `${ns}-late`;
    await admin.create<StorageClass>(Resources.storageClasses, {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      metadata: { name: cls },
      provisioner: 'example.com/csi',
      volumeBindingMode: 'WaitForFirstConsumer',
    });
    for (const n of ['node-a', 'node-b']) await admin.create<Node>(Resources.nodes, { apiVersion: 'v1', kind: 'Node', metadata: { name: name(n) } });
  });
  afterEach(async function () {
    await admin.delete(Resources.storageClasses, cls).catch(() => undefined);
    for (const n of ['node-a', 'node-b']) await admin.delete(Resources.nodes, name(n)).catch(() => undefined);
  });

  const pod = (podName: string, claim: string, nodeName?: string): Pod => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: podName, namespace: ns },
    spec: { nodeName, containers: [{ name: 'c', image: 'busybox' }], volumes: [{ name: 'v', persistentVolumeClaim: { claimName: claim } }] },
  });
  const selectedNode = async (claim: string): Promise<string | undefined> => (await getPVC(admin, ns, claim)).metadata?.annotations?.[SEL];

  it('clears a selected-node whose pod is gone, but not one the provisioner has tried, while it retries or after', async function () {
    const idle = await admin.create(Resources.persistentVolumeClaims, pvc(ns, 'idle', '1Gi', { class: cls, annotations: { [SEL]: name('node-a') } }));
    const busy = await admin.create(Resources.persistentVolumeClaims, pvc(ns, 'busy', '1Gi', { class: cls, annotations: { [SEL]: name('node-a') } }));
    // The provisioner keeps retrying "busy" (as after a CreateVolume timeout) while "idle" sees nothing.
    let attempt = await provisioningAttempt(admin, busy);
    let retrying = true;
    const retries = (async () => {
      while (retrying) {
        await new Promise((r) => setTimeout(r, 1000));
        if (retrying) attempt = await provisioningAttempt(admin, busy, attempt);
      }
    })();
    try {
      await eventually(async () => expect(await selectedNode('idle')).to.equal(undefined), 60_000);
      await eventFor(admin, idle, 'SelectedNodeStale');
      expect(await selectedNode('busy'), 'a provisioning under way is never interrupted').to.equal(name('node-a'));
    } finally {
      retrying = false;
      await retries;
    }
    // The provisioner went quiet (down, or a call still running): a claim created now, never
    // tried, is cleared after its grace, which ends after busy's would; busy keeps its node.
    await admin.create(Resources.persistentVolumeClaims, pvc(ns, 'idle-later', '1Gi', { class: cls, annotations: { [SEL]: name('node-a') } }));
    await eventually(async () => expect(await selectedNode('idle-later')).to.equal(undefined), 60_000);
    expect(await selectedNode('busy'), 'left to the provisioner that tried').to.equal(name('node-a'));
  });

  it('an attempt whose Event is gone since (its one-hour TTL, or deleted by the tenant) still leaves the selected node to the provisioner', async function () {
    const tried = await admin.create(Resources.persistentVolumeClaims, pvc(ns, 'tried', '1Gi', { class: cls, annotations: { [SEL]: name('node-a') } }));
    const attempt = await provisioningAttempt(admin, tried);
    const cached = binder.informers.forResource<Event>(Resources.events, { fieldSelector: PROVISIONING_EVENTS, transform: slimEvent });
    await eventually(() => expect(cached.cache.list().map((e) => e.metadata?.uid)).to.include(attempt.metadata?.uid));
    // The CreateVolume it announced may have made the volume; the Event that said so goes.
    const tenant = await namespaceTenant(admin, ns);
    await eventually(() => tenant.delete(Resources.events, attempt.metadata?.name ?? '', ns));
    await eventually(() => expect(cached.cache.list().map((e) => e.metadata?.uid)).to.not.include(attempt.metadata?.uid));
    // A claim never tried, created after the delete, is cleared after its grace, which ends after
    // the tried claim's would; the tried one keeps its node.
    const never = await admin.create(Resources.persistentVolumeClaims, pvc(ns, 'never', '1Gi', { class: cls, annotations: { [SEL]: name('node-a') } }));
    await eventFor(admin, never, 'SelectedNodeStale');
    expect(await selectedNode('tried'), 'left to the provisioner that tried').to.equal(name('node-a'));
  });

  it('keeps selected-node while an unscheduled pod may still be bound there', async function () {
    await admin.create(Resources.persistentVolumeClaims, pvc(ns, 'waiting', '1Gi', { class: cls, annotations: { [SEL]: name('node-a') } }));
    await admin.create(Resources.pods, pod('p-waiting', 'waiting'));
    const gone = await admin.create(Resources.persistentVolumeClaims, pvc(ns, 'gone', '1Gi', { class: cls, annotations: { [SEL]: name('node-a') } }));
    await eventFor(admin, gone, 'SelectedNodeStale');
    expect(await selectedNode('waiting')).to.equal(name('node-a'));
  });

  it('a pod rescheduled to another node gets its claim provisioned there', async function () {
    const claim = await admin.create(Resources.persistentVolumeClaims, pvc(ns, 'moved', '1Gi', { class: cls, annotations: { [SEL]: name('node-a') } }));
    // The first pod was preempted; its replacement runs on node-b.
    await admin.create(Resources.pods, pod('p-new', 'moved', name('node-b')));
    await eventFor(admin, claim, 'SelectedNodeStale');
    // Then the scheduler-bypass rule selects the pod's node, so the provisioner provisions there.
    await eventually(async () => expect(await selectedNode('moved')).to.equal(name('node-b')), 60_000);
  });
});

import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { Resources } from '@topovol/shared';
import type { KubeClient, PersistentVolume, Pod, StorageClass } from '@topovol/shared';
import { createReadyNode, createTestNamespace, eventually, localVolume, sharedControlPlane, startKubeScheduler, SuiteProcess } from '@topovol/testing';
import type { ControlPlane, ManagedProcess } from '@topovol/testing';
import { deleteNow, getPV, getPVC, pvc, RunningBinder } from './binder-harness.js';

// KEP-490 (topology-aware volume scheduling) end to end with the real kube-scheduler v1.37.2: its VolumeBinding plugin picks a node
// and pre-binds a node-local PV; Topovol's binder completes the binding, which the scheduler's
// PreBind waits for before it binds the pod.
describe('pv-binder with the real kube-scheduler (delayed binding)', function () {
  this.timeout(180_000);
  const SCHEDULER = 'topovol-interop';
  let cp: ControlPlane;
  let admin: KubeClient;
  let binder: RunningBinder;
  let scheduler: ManagedProcess;
  const schedulerProcess = new SuiteProcess<ManagedProcess>();
  let ns: string;
  let cls: string;
  const name = (s: string): string => `${ns}-${s}`;

  before(async function () {
    cp = await sharedControlPlane();
    admin = cp.adminClient();
    ns = await createTestNamespace(admin, 'sched-');
    cls = `${ns}-local`;
    // A profile of our own name: the real default plugins, but only this suite's pods are scheduled
    // (other suites leave unscheduled pods behind in the shared control plane).
    const config = path.join(cp.dir, `${ns}-scheduler.yaml`);
    writeFileSync(
      config,
      [
        'apiVersion: kubescheduler.config.k8s.io/v1',
        'kind: KubeSchedulerConfiguration',
        'leaderElection: { leaderElect: false }',
        `clientConnection: { kubeconfig: ${JSON.stringify(cp.kubeconfigPath)} }`,
        `profiles: [{ schedulerName: ${SCHEDULER} }]`,
        '',
      ].join('\n'),
    );
    binder = await RunningBinder.start();
    scheduler = await schedulerProcess.start(() => startKubeScheduler(cp, [`--config=${config}`]));
    await admin.create<StorageClass>(Resources.storageClasses, {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      metadata: { name: cls },
      provisioner: 'kubernetes.io/no-provisioner',
      volumeBindingMode: 'WaitForFirstConsumer',
    });
    for (const n of ['node-a', 'node-b']) await createReadyNode(admin, name(n));
  });
  after(async function () {
    await schedulerProcess.stop();
    await binder?.stop();
    const all = await admin.list<PersistentVolume>(Resources.persistentVolumes);
    await Promise.all(all.items.filter((v) => v.metadata!.name!.startsWith(`${ns}-`)).map((v) => deleteNow(admin, Resources.persistentVolumes, v.metadata!.name!)));
    for (const n of ['node-a', 'node-b']) await admin.delete(Resources.nodes, name(n)).catch(() => undefined);
    await admin.delete(Resources.storageClasses, cls).catch(() => undefined);
  });

  const pod = (podName: string, claim: string): Pod => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: podName, namespace: ns },
    spec: { schedulerName: SCHEDULER, containers: [{ name: 'c', image: 'busybox' }], volumes: [{ name: 'v', persistentVolumeClaim: { claimName: claim } }] },
  });

  async function scheduledWithVolume(podName: string, claim: string): Promise<{ node: string; volume: PersistentVolume }> {
    return eventually(
      async () => {
        const p = await admin.get<Pod>(Resources.pods, podName, ns);
        if (!p.spec?.nodeName) throw new Error(`pod ${podName} not scheduled yet\n${scheduler.logTail(5)}`);
        const c = await getPVC(admin, ns, claim);
        expect(c.status?.phase).to.equal('Bound');
        const v = await getPV(admin, c.spec!.volumeName!);
        expect(v.spec?.claimRef?.uid).to.equal(c.metadata?.uid);
        expect(v.status?.phase).to.equal('Bound');
        return { node: p.spec.nodeName, volume: v };
      },
      150_000,
      250,
    );
  }

  it('schedules a pod with a delayed-binding claim onto a node with a local PV, and the claim ends Bound to that node\'s PV', async function () {
    await admin.create(Resources.persistentVolumes, localVolume(name('a-1g'), '1Gi', cls, name('node-a')));
    await admin.create(Resources.persistentVolumes, localVolume(name('b-1g'), '1Gi', cls, name('node-b')));
    await admin.create(Resources.persistentVolumeClaims, pvc(ns, 'data', '1Gi', { class: cls }));
    await admin.create(Resources.pods, pod('app', 'data'));
    const { node, volume } = await scheduledWithVolume('app', 'data');
    expect([name('node-a'), name('node-b')]).to.include(node);
    expect(volume.spec?.nodeAffinity?.required?.nodeSelectorTerms?.[0]?.matchExpressions?.[0]?.values).to.deep.equal([node]);
  });

  it('lets the volume decide the node: a claim only a node-b PV can hold puts the pod on node-b', async function () {
    await admin.create(Resources.persistentVolumes, localVolume(name('a-2g'), '2Gi', cls, name('node-a')));
    await admin.create(Resources.persistentVolumes, localVolume(name('b-10g'), '10Gi', cls, name('node-b')));
    await admin.create(Resources.persistentVolumeClaims, pvc(ns, 'big', '5Gi', { class: cls }));
    await admin.create(Resources.pods, pod('big-app', 'big'));
    const { node, volume } = await scheduledWithVolume('big-app', 'big');
    expect(node).to.equal(name('node-b'));
    expect(volume.metadata?.name).to.equal(name('b-10g'));
  });
});

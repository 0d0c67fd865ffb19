import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { Resources } from '@topovol/shared';
import type { CSIDriver, Event, KubeClient, PersistentVolumeClaim, Pod, StorageClass } from '@topovol/shared';
import { createReadyNode, createTestNamespace, eventually, sharedControlPlane, startKubeScheduler, SuiteProcess } from '@topovol/testing';
import type { ControlPlane, ManagedProcess } from '@topovol/testing';
import type { CsiTestDriver } from '@topovol/testing/csi-test-driver';
import { GiB } from '@topovol/testing/csi-test-driver';
import { capacityObjects, registerDriverOnNode, RunningCapacity, startDriver } from './capacity-harness.js';

const ZONE = 'topology.kubernetes.io/zone';
const SELECTED_NODE = 'volume.kubernetes.io/selected-node';

// KEP-1472 (storage capacity tracking) end to end: the real kube-scheduler v1.37.2 reads Topovol's CSIStorageCapacity objects
// (its VolumeBinding plugin checks them for CSIDrivers with storageCapacity: true) and only picks a
// node whose segment has room for the claim.
describe('capacity with the real kube-scheduler: pods go where the storage is', function () {
  this.timeout(180_000);
  const SCHEDULER = 'topovol-capacity-interop';
  let cp: ControlPlane;
  let admin: KubeClient;
  let scheduler: ManagedProcess;
  const schedulerProcess = new SuiteProcess<ManagedProcess>();
  let loop: RunningCapacity;
  let driver: CsiTestDriver;
  let stopDriver: () => Promise<void>;
  let ns: string;
  let driverName: string;
  const name = (s: string): string => `${ns}-${s}`;

  before(async function () {
    cp = await sharedControlPlane();
    admin = cp.adminClient();
    ns = await createTestNamespace(admin, 'capsched-');
    driverName = `${ns}.csi.topovol.test`;
    ({ driver, cleanup: stopDriver } = await startDriver({ name: driverName }));
    await admin.create<CSIDriver>(Resources.csiDrivers, { apiVersion: 'storage.k8s.io/v1', kind: 'CSIDriver', metadata: { name: driverName }, spec: { attachRequired: false, storageCapacity: true } });
    await admin.create<StorageClass>(Resources.storageClasses, { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: name('local') }, provisioner: driverName, volumeBindingMode: 'WaitForFirstConsumer' });
    for (const [n, zone] of [['a', 'z1'], ['b', 'z2']] as const) {
      await createReadyNode(admin, name(n), { [ZONE]: zone });
      await registerDriverOnNode(admin, name(n), driverName, [ZONE]);
    }
    driver.setCapacity({ [ZONE]: 'z1' }, 1n * GiB);
    driver.setCapacity({ [ZONE]: 'z2' }, 100n * GiB);
    loop = await RunningCapacity.start([`--csi-address=${driver.endpoint}`, `--capacity-namespace=${ns}`, '--capacity-poll-interval=1s', '--capacity-min-refresh-interval=100ms']);
    const config = path.join(cp.dir, `${ns}-scheduler.yaml`);
    writeFileSync(
      config,
      ['apiVersion: kubescheduler.config.k8s.io/v1', 'kind: KubeSchedulerConfiguration', 'leaderElection: { leaderElect: false }', `clientConnection: { kubeconfig: ${JSON.stringify(cp.kubeconfigPath)} }`, `profiles: [{ schedulerName: ${SCHEDULER} }]`, ''].join('\n'),
    );
    scheduler = await schedulerProcess.start(() => startKubeScheduler(cp, [`--config=${config}`]));
  });
  after(async function () {
    await schedulerProcess.stop();
    await loop?.stop();
    await stopDriver?.();
    for (const n of ['a', 'b', 'c', 'd']) {
      await admin.delete(Resources.nodes, name(n)).catch(() => undefined);
      await admin.delete(Resources.csiNodes, name(n)).catch(() => undefined);
    }
    await admin.delete(Resources.storageClasses, name('local')).catch(() => undefined);
    await admin.delete(Resources.csiDrivers, driverName).catch(() => undefined);
  });

  async function podWithClaim(p: string, size: string, nodeSelector?: Record<string, string>): Promise<void> {
    await admin.create<PersistentVolumeClaim>(Resources.persistentVolumeClaims, {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: p, namespace: ns },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: size } }, storageClassName: name('local') },
    });
    await admin.create<Pod>(Resources.pods, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: p, namespace: ns },
      spec: { schedulerName: SCHEDULER, ...(nodeSelector ? { nodeSelector } : {}), containers: [{ name: 'c', image: 'busybox' }], volumes: [{ name: 'v', persistentVolumeClaim: { claimName: p } }] },
    });
  }

  const selectedNode = (claim: string): Promise<string> =>
    eventually(
      async () => {
        const c = await admin.get<PersistentVolumeClaim>(Resources.persistentVolumeClaims, claim, ns);
        const n = c.metadata?.annotations?.[SELECTED_NODE];
        if (!n) throw new Error(`no node selected for ${claim} yet\n${scheduler.logTail(5)}`);
        return n;
      },
      120_000,
      250,
    );

  /** kube-scheduler's reason for a node without room for the claim (VolumeBinding's capacity check). */
  const NO_ROOM = /did not have enough free storage/;

  /** Every FailedScheduling message kube-scheduler has said about `pod`, one per line. */
  const failedSchedulingMessages = async (pod: string): Promise<string> =>
    (await admin.list<Event>(Resources.events, { namespace: ns, fieldSelector: `involvedObject.name=${pod},reason=FailedScheduling` })).items.map((e) => e.message).join('\n');

  /** Waits until kube-scheduler has said the pod finds no room for its claim. */
  const failedScheduling = (pod: string): Promise<void> => eventually(
    async () => {
      expect(await failedSchedulingMessages(pod)).to.match(NO_ROOM);
    },
    60_000,
    250,
  );

  /**
   * Returns once kube-scheduler itself finds no room for 10Gi in `zone`: probe pods pinned there until
   * one fails for storage. A probe picked on an older figure keeps its node; the next probe asks again.
   */
  async function schedulerSeesNoRoomIn(zone: string): Promise<void> {
    for (let i = 0; i < 20; i++) {
      const probe = `probe-${zone}-${i}`;
      await podWithClaim(probe, '10Gi', { [ZONE]: zone });
      const outcome = await eventually(
        async () => {
          const c = await admin.get<PersistentVolumeClaim>(Resources.persistentVolumeClaims, probe, ns);
          if (c.metadata?.annotations?.[SELECTED_NODE]) return 'picked';
          if (NO_ROOM.test(await failedSchedulingMessages(probe))) return 'no room';
          throw new Error(`${probe}: neither picked nor refused for storage yet\n${scheduler.logTail(5)}`);
        },
        60_000,
        250,
      );
      if (outcome === 'no room') return;
    }
    throw new Error(`kube-scheduler still found room in ${zone} for 20 probes`);
  }

  it('selects the node whose zone has room, and follows the capacity when it changes', async function () {
    await eventually(async () => expect(await capacityObjects(admin, ns)).to.have.length(2));
    await podWithClaim('p1', '10Gi');
    expect(await selectedNode('p1')).to.equal(name('b'));

    // z2 full first, and on to z1's room only once kube-scheduler's own cache has z2's new figure:
    // a pick made on z2's old figure would stay (nothing here takes a selected node back), while a
    // pick made on z1's old figure only fails and is tried again.
    driver.setCapacity({ [ZONE]: 'z2' }, 1n * GiB);
    await eventually(async () => expect((await capacityObjects(admin, ns)).map((o) => o.capacity)).to.deep.equal(['1Gi', '1Gi']));
    await schedulerSeesNoRoomIn('z2');
    driver.setCapacity({ [ZONE]: 'z1' }, 100n * GiB);
    await eventually(async () => expect((await capacityObjects(admin, ns)).map((o) => o.capacity)).to.deep.equal(['100Gi', '1Gi']));
    await podWithClaim('p2', '10Gi');
    expect(await selectedNode('p2')).to.equal(name('a'));

    // Room nowhere: the scheduler says so instead of picking a node (a coin could not pass this).
    await podWithClaim('p3', '500Gi');
    await failedScheduling('p3');
    const p3 = await admin.get<PersistentVolumeClaim>(Resources.persistentVolumeClaims, 'p3', ns);
    expect(p3.metadata?.annotations?.[SELECTED_NODE]).to.equal(undefined);
  });


  it('nodes labelled to different depths: a region\'s figure does not make room on a node of a full zone', async function () {
    // The driver reports region and zone on c, region only on d: two overlapping segments. Its
    // GetCapacity sums the pools a segment overlaps, so z3 answers 1Gi and the region 100Gi (z3's and
    // z4's pools). Set before the nodes register: the loop asks about a segment as soon as it
    // appears, and the test driver tells it of no change after that.
    const REGION = 'topology.kubernetes.io/region';
    driver.setCapacity({ [REGION]: 'r9', [ZONE]: 'z3' }, 1n * GiB);
    driver.setCapacity({ [REGION]: 'r9', [ZONE]: 'z4' }, 99n * GiB);
    await createReadyNode(admin, name('c'), { [REGION]: 'r9', [ZONE]: 'z3', 'topovol.test/pin': name('c') });
    await registerDriverOnNode(admin, name('c'), driverName, [REGION, ZONE]);
    await createReadyNode(admin, name('d'), { [REGION]: 'r9' });
    await registerDriverOnNode(admin, name('d'), driverName, [REGION]);
    // The region's two objects, not the first test's (z1 and z2, still there with 100Gi and 1Gi).
    const inRegion = async (): Promise<Record<string, string | undefined>> =>
      Object.fromEntries((await capacityObjects(admin, ns)).filter((o) => o.segment[REGION] === 'r9').map((o) => [o.segment[ZONE] ?? '(region)', o.capacity]));
    await eventually(async () => expect(await inRegion()).to.deep.equal({ z3: '1Gi', '(region)': '100Gi' }));
    // In the region, a pod goes to d, where the region's room is (and the scheduler has both objects).
    await podWithClaim('p4', '10Gi', { [REGION]: 'r9' });
    expect(await selectedNode('p4')).to.equal(name('d'));
    // Pinned to c, whose zone has 1Gi: without the region object's exclusion, its 100Gi would match c too.
    await podWithClaim('p5', '10Gi', { 'topovol.test/pin': name('c') });
    await failedScheduling('p5');
    const p5 = await admin.get<PersistentVolumeClaim>(Resources.persistentVolumeClaims, 'p5', ns);
    expect(p5.metadata?.annotations?.[SELECTED_NODE]).to.equal(undefined);
  });
});

import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { Resources } from '../../src/index.js';
import type { CSINode, CSIStorageCapacity, KubeClient, PersistentVolume, PersistentVolumeClaim, StorageClass } from '../../src/index.js';
import { createReadyNode, createTestNamespace, eventually, sharedControlPlane } from '@topovol/testing';
import type { ManagedProcess } from '@topovol/testing';
import type { ControlPlane } from '@topovol/testing';
import type { CsiTestDriver } from '@topovol/testing/csi-test-driver';
import { startAllLoopsManager } from './all-loops-manager.js';
import { httpGet } from './manager-process.js';

// Every loop in one process, as config/manager's all-in-one variant and the demo run them: the
// loops share informers, so their projections must agree (this once failed at start-up with
// "conflicting transforms", and before that could silently hand one loop another's slim objects).
describe('the real manager binary with every loop in one process', function () {
  this.timeout(120_000);
  let cp: ControlPlane;
  let admin: KubeClient;
  let ns: string;
  let driver: CsiTestDriver;
  let manager: ManagedProcess;
  let probePort: number;
  let stopAll: (() => Promise<void>) | undefined;
  const name = (s: string): string => `${ns}-${s}`;

  before(async function () {
    cp = await sharedControlPlane();
    admin = cp.adminClient();
    ns = await createTestNamespace(admin, 'all-');
    const started = await startAllLoopsManager(cp, ns);
    ({ manager, driver, probePort } = started);
    stopAll = started.stop;
  });
  after(async function () {
    await stopAll?.();
    await admin.delete(Resources.nodes, name('n1')).catch(() => undefined);
    await admin.delete(Resources.csiNodes, name('n1')).catch(() => undefined);
    await admin.delete(Resources.storageClasses, name('fast')).catch(() => undefined);
    await admin.delete(Resources.persistentVolumes, name('pv')).catch(() => undefined);
  });

  it('starts all four loops, becomes ready, binds a claim and publishes capacity', async function () {
    await eventually(async () => expect((await httpGet(probePort, '/readyz')).status, manager.logTail(10)).to.equal(200), 60_000);
    await createReadyNode(admin, name('n1'), { zone: 'z1' });
    await admin.create<CSINode>(Resources.csiNodes, { apiVersion: 'storage.k8s.io/v1', kind: 'CSINode', metadata: { name: name('n1') }, spec: { drivers: [{ name: driver.name, nodeID: name('n1'), topologyKeys: ['zone'] }] } });
    await admin.create<StorageClass>(Resources.storageClasses, { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: name('fast') }, provisioner: driver.name, volumeBindingMode: 'WaitForFirstConsumer' });
    await admin.create<PersistentVolume>(Resources.persistentVolumes, { apiVersion: 'v1', kind: 'PersistentVolume', metadata: { name: name('pv') }, spec: { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], hostPath: { path: '/tmp/x' } } });
    await admin.create<PersistentVolumeClaim>(Resources.persistentVolumeClaims, { apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name: 'c', namespace: ns }, spec: { accessModes: ['ReadWriteOnce'], storageClassName: '', resources: { requests: { storage: '1Gi' } } } });
    await eventually(async () => expect((await admin.get<PersistentVolumeClaim>(Resources.persistentVolumeClaims, 'c', ns)).spec?.volumeName).to.equal(name('pv')), 60_000);
    await eventually(async () => {
      const caps = (await admin.list<CSIStorageCapacity>(Resources.csiStorageCapacities, { namespace: ns })).items;
      expect(caps.map((c) => [c.storageClassName, c.capacity])).to.deep.equal([[name('fast'), '4Gi']]);
    }, 60_000);
    const log = readFileSync(manager.logFile, 'utf8');
    expect(log).to.not.match(/setup failed|conflicting transforms/);
  });
});

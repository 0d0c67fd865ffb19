import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { isNotFound, Resources } from '@topovol/shared';
import type { CSINode, KubeClient, KubeObject, Node, PersistentVolume, StorageClass } from '@topovol/shared';
import { CsiTestDriver, GiB, csiBinaries } from '@topovol/testing/csi-test-driver';
import { createTestNamespace, eventually, ManagedProcess, sharedControlPlane } from '@topovol/testing';
import type { ControlPlane } from '@topovol/testing';
import { deleteNow, getPVC, pvc, RunningBinder } from './binder-harness.js';

// Interop: the real CSI external-provisioner (kubernetes-csi
// external-provisioner v6.3.0, built from the Go module proxy by hack/csi-binaries.sh) provisions
// and deletes volumes through Topovol's CSI test driver against the real API server. No
// kube-controller-manager runs here, so Topovol's own pv-binder plays its part: it asks for
// provisioning (volume.kubernetes.io/storage-provisioner), binds the new PV and releases it when the
// claim goes. The test lives in pv-controller because shared cannot depend on the binder.
const DRIVER = 'interop.csi.topovol.dev';
const ZONE_KEY = 'topology.interop.csi.topovol.dev/zone';
const PV_PROTECTION = 'kubernetes.io/pv-protection';
const PROVISIONER_FINALIZER = 'external-provisioner.volume.kubernetes.io/finalizer';

describe('CSI external-provisioner v6.3.0 against the CSI test driver (real API server)', function () {
  this.timeout(120_000);
  let cp: ControlPlane;
  let admin: KubeClient;
  let ns: string;
  let dir: string;
  let driver: CsiTestDriver;
  let binder: RunningBinder | undefined;
  let provisioner: ManagedProcess | undefined;
  let nodes: string[] = [];
  const className = (): string => `${ns}-interop`;

  /** Runs `check` until it passes; on timeout the error carries the provisioner's log tail. */
  async function until<T>(what: string, check: () => Promise<T>, timeoutMs = 60_000): Promise<T> {
    try {
      return await eventually(check, timeoutMs, 200);
    } catch (err) {
      const msg = err instanceof Error ? err.message : String(err);
      throw new Error(`${what}: ${msg}\ndriver calls: ${JSON.stringify(driver.callCountsByMethod())}\n--- csi-provisioner log ---\n${provisioner?.logTail(60) ?? ''}`);
    }
  }

  before(async function () {
    // A cold build of csi-provisioner takes minutes on two cores; cached afterwards.
    this.timeout(50 * 60_000);
    const { 'csi-provisioner': binary } = await csiBinaries(['csi-provisioner']);
    cp = await sharedControlPlane();
    admin = cp.adminClient();
    ns = await createTestNamespace(admin, 'csi-interop-');
    dir = mkdtempSync(path.join(os.tmpdir(), 'topovol-csi-interop-'));

    // Zone a is too small for the claim below, zone b has room: the driver must honour the
    // provisioner's topology requirements and pick b whatever order it prefers.
    driver = new CsiTestDriver({
      name: DRIVER,
      capacity: [
        { segment: { [ZONE_KEY]: 'zone-a' }, capacity: 1n * GiB },
        { segment: { [ZONE_KEY]: 'zone-b' }, capacity: 10n * GiB },
      ],
    });
    const socket = path.join(dir, 'csi.sock');
    await driver.start(socket);

    // The provisioner aggregates Immediate-binding topology from CSINodes that list the driver and
    // their Nodes' labels, as a kubelet with the node plugin registered would have written them.
    nodes = ['zone-a', 'zone-b'].map((z) => `${ns}-node-${z}`);
    for (const [i, node] of nodes.entries()) {
      const zone = i === 0 ? 'zone-a' : 'zone-b';
      await admin.create<Node>(Resources.nodes, { apiVersion: 'v1', kind: 'Node', metadata: { name: node, labels: { [ZONE_KEY]: zone } } });
      await admin.create<CSINode>(Resources.csiNodes, {
        apiVersion: 'storage.k8s.io/v1',
        kind: 'CSINode',
        metadata: { name: node },
        spec: { drivers: [{ name: DRIVER, nodeID: node, topologyKeys: [ZONE_KEY] }] },
      });
    }
    await admin.create<StorageClass>(Resources.storageClasses, {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      metadata: { name: className() },
      provisioner: DRIVER,
      reclaimPolicy: 'Delete',
      volumeBindingMode: 'Immediate',
      parameters: { flavour: 'interop' },
    });

    binder = await RunningBinder.start();
    provisioner = new ManagedProcess({
      name: 'csi-provisioner',
      command: binary,
      logFile: path.join(dir, 'csi-provisioner.log'),
      args: [
        `--csi-address=${socket}`,
        `--kubeconfig=${cp.kubeconfigPath}`,
        '--leader-election=false',
        '--extra-create-metadata',
        '--timeout=30s',
        '--retry-interval-start=500ms',
        '--retry-interval-max=5s',
        '--worker-threads=4',
        '--v=5',
      ],
    });
    // Ready once it has asked the driver who it is and what it can do.
    await until('csi-provisioner did not start', () => {
      if (!provisioner!.running) throw new Error('csi-provisioner exited');
      expect(driver.calls('ControllerGetCapabilities')).to.be.at.least(1);
      return Promise.resolve();
    });
  });

  after(async function () {
    await provisioner?.stop();
    await binder?.stop();
    await driver?.stop();
    if (!admin) return;
    // Leave no provisioned volume behind for later tests (a failed run may have left one).
    const pvs = await admin.list<PersistentVolume>(Resources.persistentVolumes);
    for (const v of pvs.items.filter((p) => p.spec?.csi?.driver === DRIVER)) await deleteNow(admin, Resources.persistentVolumes, v.metadata!.name!);
    await admin.delete(Resources.storageClasses, className()).catch(() => undefined);
    for (const n of nodes) {
      await admin.delete(Resources.csiNodes, n).catch(() => undefined);
      await admin.delete(Resources.nodes, n).catch(() => undefined);
    }
    // TOPOVOL_KEEP_TEST_DIRS keeps the provisioner's log, as it keeps the control plane's.
    if (dir && !process.env.TOPOVOL_KEEP_TEST_DIRS) rmSync(dir, { recursive: true, force: true });
  });

  /** Waits for the claim to be Bound to its provisioned PV and checks both against the driver. */
  async function provisioned(claimName: string): Promise<{ pvName: string; volumeId: string }> {
    const claim = await until(`claim ${claimName} not Bound`, async () => {
      const c = await getPVC(admin, ns, claimName);
      expect(c.status?.phase).to.equal('Bound');
      return c;
    });
    const pvName = `pvc-${claim.metadata!.uid!}`;
    expect(claim.spec?.volumeName).to.equal(pvName);
    // Topovol's binder asked for provisioning the way kube-controller-manager does.
    expect(claim.metadata?.annotations?.['volume.kubernetes.io/storage-provisioner']).to.equal(DRIVER);

    // The driver created exactly the volume the PV points at, in zone b (zone a is too small).
    const vol = driver.volumeByName(pvName);
    expect(vol, `driver volume ${pvName}`).to.not.equal(undefined);
    expect(vol!.segment).to.deep.equal({ [ZONE_KEY]: 'zone-b' });
    expect(vol!.capacityBytes).to.equal(2n * GiB);

    const req = driver.createVolumeRequests().find((r) => r.name === pvName)!;
    expect(req.requiredBytes).to.equal(2n * GiB);
    // --extra-create-metadata and the class's own parameters reach the driver.
    expect(req.parameters).to.include({
      flavour: 'interop',
      'csi.storage.k8s.io/pvc/name': claimName,
      'csi.storage.k8s.io/pvc/namespace': ns,
      'csi.storage.k8s.io/pv/name': pvName,
    });
    expect(req.accessibilityRequirements?.requisite).to.have.deep.members([{ [ZONE_KEY]: 'zone-a' }, { [ZONE_KEY]: 'zone-b' }]);

    const pv = await until(`PV ${pvName} not Bound`, async () => {
      const v = await admin.get<PersistentVolume>(Resources.persistentVolumes, pvName);
      expect(v.status?.phase).to.equal('Bound');
      return v;
    });
    expect(pv.spec?.csi).to.include({ driver: DRIVER, volumeHandle: vol!.volumeId });
    expect(pv.spec?.capacity?.storage).to.equal('2Gi');
    expect(pv.spec?.persistentVolumeReclaimPolicy).to.equal('Delete');
    expect(pv.spec?.storageClassName).to.equal(className());
    expect(pv.spec?.claimRef).to.include({ namespace: ns, name: claimName, uid: claim.metadata!.uid! });
    expect(pv.metadata?.annotations?.['pv.kubernetes.io/provisioned-by']).to.equal(DRIVER);
    expect(pv.metadata?.finalizers).to.include(PROVISIONER_FINALIZER);
    // The volume's accessible topology became the PV's node affinity.
    expect(pv.spec?.nodeAffinity?.required?.nodeSelectorTerms).to.deep.equal([
      { matchExpressions: [{ key: ZONE_KEY, operator: 'In', values: ['zone-b'] }] },
    ]);
    return { pvName, volumeId: vol!.volumeId };
  }

  /**
   * Deleting the claim: the binder releases the PV, the provisioner calls DeleteVolume and deletes
   * the PV. Only kube-controller-manager's pv-protection finalizer is stripped here; the
   * provisioner must remove its own finalizer for the PV to go.
   */
  async function deprovisioned(claimName: string, pvName: string): Promise<void> {
    await deleteNow(admin, Resources.persistentVolumeClaims, claimName, ns);
    await until(`PV ${pvName} not deleted`, async () => {
      let v: PersistentVolume;
      try {
        v = await admin.get<PersistentVolume>(Resources.persistentVolumes, pvName);
      } catch (err) {
        if (isNotFound(err)) return;
        throw err;
      }
      if (v.metadata?.deletionTimestamp && v.metadata.finalizers?.includes(PV_PROTECTION)) {
        const rest = v.metadata.finalizers.filter((f) => f !== PV_PROTECTION);
        await admin.patch<KubeObject>(Resources.persistentVolumes, pvName, undefined, 'merge', { metadata: { finalizers: rest } }).catch(() => undefined);
      }
      throw new Error(`PV ${pvName} still exists (phase ${v.status?.phase}, finalizers ${JSON.stringify(v.metadata?.finalizers)})`);
    });
  }

  it('provisions claims through CreateVolume in the topology with room, binds them, then deletes them through DeleteVolume', async function () {
    expect(driver.calls('GetPluginInfo')).to.be.at.least(1);
    expect(driver.calls('GetPluginCapabilities')).to.be.at.least(1);

    // StatefulSet-style names: the provisioner rotates its preferred zone by the ordinal, so one of
    // the two requests prefers zone a first and the driver must pass over it.
    const claims = ['data-0', 'data-1'];
    for (const c of claims) await admin.create(Resources.persistentVolumeClaims, pvc(ns, c, '2Gi', { class: className() }));
    const volumes = [];
    for (const c of claims) volumes.push(await provisioned(c));
    const firstPreferred = driver.createVolumeRequests().map((r) => r.accessibilityRequirements?.preferred?.[0]?.[ZONE_KEY]);
    expect(firstPreferred).to.include('zone-a');
    expect(driver.calls('CreateVolume')).to.be.at.least(2);
    expect(driver.capacityOf({ [ZONE_KEY]: 'zone-b' })).to.equal(6n * GiB);
    expect(driver.capacityOf({ [ZONE_KEY]: 'zone-a' })).to.equal(1n * GiB);

    for (const [i, c] of claims.entries()) await deprovisioned(c, volumes[i]!.pvName);
    expect(driver.deleteVolumeRequests()).to.include.members(volumes.map((v) => v.volumeId));
    expect(driver.volumes()).to.deep.equal([]);
    expect(driver.capacityOf({ [ZONE_KEY]: 'zone-b' })).to.equal(10n * GiB);
  });
});

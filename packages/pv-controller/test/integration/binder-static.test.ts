import { expect } from 'chai';
import { metricsRegistry, Resources } from '@topovol/shared';
import type { KubeClient, Node, PersistentVolume, StorageClass } from '@topovol/shared';
import { createTestNamespace, eventually, sharedControlPlane } from '@topovol/testing';
import { deleteNow, eventFor, getPV, getPVC, pv, pvc, RunningBinder } from './binder-harness.js';

// End-to-end behaviour of the binder on the real API server, following upstream's
// pkg/controller/volume/persistentvolume/binder_test.go scenarios (written anew).
describe('pv-binder: static binding, release and reclaim (real API server)', function () {
  this.timeout(60_000);
  let admin: KubeClient;
  let binder: RunningBinder;
  let ns: string;
  const name = (s: string): string => `${ns}-${s}`;

  before(async function () {
    admin = (await sharedControlPlane()).adminClient();
    binder = await RunningBinder.start();
  });
  after(async function () {
    await binder?.stop();
  });
  beforeEach(async function () {
    ns = await createTestNamespace(admin, 'binder-');
  });
  // Volumes are cluster-scoped: remove this test's, so that later tests cannot bind to them.
  afterEach(async function () {
    const all = await admin.list<PersistentVolume>(Resources.persistentVolumes);
    await Promise.all(all.items.filter((v) => v.metadata!.name!.startsWith(`${ns}-`)).map((v) => deleteNow(admin, Resources.persistentVolumes, v.metadata!.name!)));
  });

  async function bound(claim: string): Promise<void> {
    await eventually(async () => expect((await getPVC(admin, ns, claim)).status?.phase).to.equal('Bound'));
  }

  it('binds the smallest matching class-less volume and writes upstream annotations and phases', async function () {
    await admin.create(Resources.persistentVolumes, pv(name('big'), '5Gi'));
    await admin.create(Resources.persistentVolumes, pv(name('small'), '1Gi'));
    await admin.create(Resources.persistentVolumes, pv(name('tiny'), '100Mi'));
    await admin.create(Resources.persistentVolumes, pv(name('rwx-only'), '1Gi', { accessModes: ['ReadWriteMany'] }));
    // As upstream, only Available volumes are candidates: a claim racing new volumes could take any
    // of those the binder has already made Available.
    for (const v of ['big', 'small', 'tiny', 'rwx-only']) await eventually(async () => expect((await getPV(admin, name(v))).status?.phase).to.equal('Available'));
    await admin.create(Resources.persistentVolumeClaims, pvc(ns, 'c', '1Gi'));
    await bound('c');
    const claim = await getPVC(admin, ns, 'c');
    expect(claim.spec?.volumeName).to.equal(name('small'));
    expect(claim.metadata?.annotations).to.include({ 'pv.kubernetes.io/bind-completed': 'yes', 'pv.kubernetes.io/bound-by-controller': 'yes' });
    expect(claim.status?.capacity?.storage).to.equal('1Gi');
    expect(claim.status?.accessModes).to.deep.equal(['ReadWriteOnce']);
    const vol = await eventually(async () => {
      const v = await getPV(admin, name('small'));
      expect(v.status?.phase).to.equal('Bound');
      return v;
    });
    expect(vol.spec?.claimRef).to.include({ namespace: ns, name: 'c', uid: claim.metadata?.uid });
    expect(vol.metadata?.annotations?.['pv.kubernetes.io/bound-by-controller']).to.equal('yes');
    expect((await getPV(admin, name('big'))).spec?.claimRef).to.equal(undefined);
  });

  /** A sample's value as a scrape of /metrics would see it (every collector runs), 0 when absent. */
  async function sample(metric: string, labels: Record<string, string>, suffix = ''): Promise<number> {
    const all = (await metricsRegistry.getMetricsAsJSON()) as unknown as { name: string; values: { value: number; labels: Record<string, string | number>; metricName?: string }[] }[];
    const family = all.find((m) => m.name === metric);
    const hit = family?.values.find((v) => (v.metricName ?? metric) === metric + suffix && Object.entries(labels).every(([k, want]) => String(v.labels[k]) === want));
    return hit?.value ?? 0;
  }

  // Upstream's pv_collector_* gauges (pkg/controller/volume/persistentvolume/metrics/metrics.go) and
  // Topovol's bind counter and claim-to-Bound histogram, read from the registry /metrics serves.
  it('exports upstream\'s pv_collector gauges, a bind counter and the bind latency histogram', async function () {
    const boundBefore = await sample('topovol_pv_binder_binds_total', { result: 'bound' });
    const latencyBefore = await sample('topovol_pv_binder_claim_bind_duration_seconds', { mode: 'Immediate' }, '_count');
    for (const i of [1, 2, 3]) await admin.create(Resources.persistentVolumes, pv(name(`m${i}`), '1Gi'));
    for (const i of [1, 2]) await admin.create(Resources.persistentVolumeClaims, pvc(ns, `m${i}`, '1Gi'));
    await admin.create(Resources.persistentVolumeClaims, pvc(ns, 'unbindable', '50Gi'));
    await bound('m1');
    await bound('m2');
    await eventually(async () => {
      expect(await sample('pv_collector_bound_pvc_count', { namespace: ns, storage_class: '' })).to.equal(2);
      expect(await sample('pv_collector_unbound_pvc_count', { namespace: ns, storage_class: '' })).to.equal(1);
      expect(await sample('pv_collector_bound_pv_count', { storage_class: '' })).to.be.at.least(2);
      expect(await sample('pv_collector_unbound_pv_count', { storage_class: '' })).to.be.at.least(1);
      // Counted once the binder has the answer to its last write, which may come after our read.
      expect(await sample('topovol_pv_binder_binds_total', { result: 'bound' })).to.equal(boundBefore + 2);
      expect(await sample('topovol_pv_binder_claim_bind_duration_seconds', { mode: 'Immediate' }, '_count')).to.equal(latencyBefore + 2);
    });
    // A claim the scheduler placed (selected-node) and nothing provisioned yet: what the
    // "claims Pending with a selected node" alert of config/prometheus watches.
    const cls = name('wffc');
    await admin.create<StorageClass>(Resources.storageClasses, { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: cls }, provisioner: 'example.com/slow', volumeBindingMode: 'WaitForFirstConsumer' });
    await admin.create<Node>(Resources.nodes, { apiVersion: 'v1', kind: 'Node', metadata: { name: name('node') } });
    const waiting = { ...pvc(ns, 'placed', '1Gi'), spec: { ...pvc(ns, 'placed', '1Gi').spec, storageClassName: cls } };
    waiting.metadata = { ...waiting.metadata, annotations: { 'volume.kubernetes.io/selected-node': name('node') } };
    await admin.create(Resources.persistentVolumeClaims, waiting);
    await eventually(async () => {
      expect(await sample('topovol_pv_binder_selected_node_pending_claims', { storage_class: cls })).to.equal(1);
      expect(await sample('topovol_pv_binder_selected_node_pending_oldest_seconds', { storage_class: cls })).to.be.at.least(0).and.below(600);
    });
    // A class name no StorageClass has, in the spec or in the beta annotation (which nothing
    // validates): a tenant's choice, reported as one value, not one series per name.
    const madeUp = name('made-up-class');
    await admin.create(Resources.persistentVolumeClaims, { ...pvc(ns, 'madeup', '1Gi'), spec: { ...pvc(ns, 'madeup', '1Gi').spec, storageClassName: madeUp } });
    const beta = pvc(ns, 'madeup-beta', '1Gi');
    beta.metadata = { ...beta.metadata, annotations: { 'volume.beta.kubernetes.io/storage-class': `${madeUp}-beta ${'x'.repeat(400)}` } };
    await admin.create(Resources.persistentVolumeClaims, beta);
    await eventually(async () => expect(await sample('pv_collector_unbound_pvc_count', { namespace: ns, storage_class: '<unknown>' })).to.equal(2));
    expect(await metricsRegistry.metrics()).to.not.include(madeUp);
    await admin.delete(Resources.nodes, name('node')).catch(() => undefined);
    await admin.delete(Resources.storageClasses, cls).catch(() => undefined);
    const text = await metricsRegistry.metrics();
    expect(text).to.match(/^# TYPE pv_collector_bound_pvc_count gauge$/m);
    expect(text).to.match(/^workqueue_adds_total\{name="pv-binder"\} \d+/m);
  });

  it('honours a claim pre-bound with spec.volumeName, and reports VolumeMismatch when it cannot fit', async function () {
    await admin.create(Resources.persistentVolumes, pv(name('chosen'), '2Gi'));
    await admin.create(Resources.persistentVolumes, pv(name('other'), '1Gi'));
    await admin.create(Resources.persistentVolumeClaims, pvc(ns, 'named', '1Gi', { volumeName: name('chosen') }));
    await bound('named');
    const claim = await getPVC(admin, ns, 'named');
    expect(claim.spec?.volumeName).to.equal(name('chosen'));
    expect(claim.metadata?.annotations?.['pv.kubernetes.io/bound-by-controller']).to.equal(undefined);

    await admin.create(Resources.persistentVolumes, pv(name('too-small'), '1Gi'));
    const big = await admin.create(Resources.persistentVolumeClaims, pvc(ns, 'too-big', '10Gi', { volumeName: name('too-small') }));
    const ev = await eventFor(admin, big, 'VolumeMismatch');
    expect(ev.type).to.equal('Warning');
    expect(ev.message).to.contain('requested PV is too small');
    expect((await getPVC(admin, ns, 'too-big')).status?.phase).to.equal('Pending');
  });

  it('honours a volume pre-bound by claimRef (name only) over a smaller free one', async function () {
    await admin.create(Resources.persistentVolumes, pv(name('free'), '1Gi'));
    await admin.create(Resources.persistentVolumes, pv(name('reserved'), '3Gi', { claimRef: { namespace: ns, name: 'mine' } }));
    // Seen by the binder first (it writes both Available): the volume and claim watches deliver in
    // any order, and a claim decided before its pre-bound volume reaches the cache takes the free
    // one, here as in kube-controller-manager. What is tested is the choice on a cache that has both.
    for (const v of ['free', 'reserved']) await eventually(async () => expect((await getPV(admin, name(v))).status?.phase).to.equal('Available'));
    await admin.create(Resources.persistentVolumeClaims, pvc(ns, 'mine', '1Gi'));
    await bound('mine');
    expect((await getPVC(admin, ns, 'mine')).spec?.volumeName).to.equal(name('reserved'));
    // Someone else's claim may not take the reserved volume.
    expect((await getPV(admin, name('free'))).spec?.claimRef).to.equal(undefined);
  });

  it('marks a bound claim Lost with ClaimLost when its volume disappears', async function () {
    await admin.create(Resources.persistentVolumes, pv(name('doomed'), '1Gi'));
    await admin.create(Resources.persistentVolumeClaims, pvc(ns, 'lost', '1Gi'));
    await bound('lost');
    await deleteNow(admin, Resources.persistentVolumes, name('doomed'));
    await eventually(async () => expect((await getPVC(admin, ns, 'lost')).status?.phase).to.equal('Lost'));
    const ev = await eventFor(admin, await getPVC(admin, ns, 'lost'), 'ClaimLost');
    expect(ev.type).to.equal('Warning');
  });

  const reclaimCases: [string, string, Record<string, string>, string, string | undefined][] = [
    ['Retain keeps a Released volume', 'Retain', {}, 'Released', undefined],
    ['Delete of a provisioned volume is left to its external deleter', 'Delete', { 'pv.kubernetes.io/provisioned-by': 'example.com/csi' }, 'Released', undefined],
    ['Delete without a provisioner ends in Failed', 'Delete', {}, 'Failed', 'VolumeFailedDelete'],
    ['Recycle ends in Failed', 'Recycle', {}, 'Failed', 'VolumeFailedRecycle'],
  ];
  for (const [what, policy, annotations, phase, reason] of reclaimCases) {
    it(`claim deleted → ${what}; the volume is never deleted by the binder`, async function () {
      await admin.create(Resources.persistentVolumes, pv(name('r'), '1Gi', { policy, annotations }));
      await admin.create(Resources.persistentVolumeClaims, pvc(ns, 'r', '1Gi'));
      await bound('r');
      await deleteNow(admin, Resources.persistentVolumeClaims, 'r', ns);
      const v = await eventually(async () => {
        const x = await getPV(admin, name('r'));
        expect(x.status?.phase).to.equal(phase);
        return x;
      });
      if (reason) expect((await eventFor(admin, v, reason)).type).to.equal('Warning');
      // Still there after the binder settled.
      await binder.events.flush();
      expect((await getPV(admin, name('r'))).metadata?.deletionTimestamp).to.equal(undefined);
    });
  }

  it('assigns the default StorageClass retroactively and signals the external provisioner', async function () {
    const sc: StorageClass = {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      metadata: { name: name('default'), annotations: { 'storageclass.kubernetes.io/is-default-class': 'true' } },
      provisioner: 'example.com/csi',
    };
    const retroactive = await sample('retroactive_storageclass_total', {});
    const claim = await admin.create(Resources.persistentVolumeClaims, pvc(ns, 'classless', '1Gi', { class: null }));
    await admin.create(Resources.storageClasses, sc);
    try {
      const c = await eventually(async () => {
        const x = await getPVC(admin, ns, 'classless');
        expect(x.spec?.storageClassName).to.equal(name('default'));
        expect(x.metadata?.annotations).to.include({
          'volume.kubernetes.io/storage-provisioner': 'example.com/csi',
          'volume.beta.kubernetes.io/storage-provisioner': 'example.com/csi',
        });
        return x;
      });
      expect(c.metadata?.uid).to.equal(claim.metadata?.uid);
      const ev = await eventFor(admin, c, 'ExternalProvisioning');
      expect(ev.message).to.contain("external provisioner 'example.com/csi'");
      // kube-controller-manager's counter of these assignments (other class-less claims may be assigned too).
      expect(await sample('retroactive_storageclass_total', {})).to.be.at.least(retroactive + 1);
    } finally {
      await admin.delete(Resources.storageClasses, name('default'));
    }
  });

  // kube-controller-manager's operation metrics (pkg/controller/volume/persistentvolume/metrics): the
  // time from a claim's hand-over to its provisioner to its binding, and from a released Delete
  // volume's hand-over to its deleter to the volume gone; the test plays the provisioner and deleter.
  it("times provisioning and deletion end to end under kube-controller-manager's metric names, and counts volumes by plugin", async function () {
    const provisioner = 'example.com/ops';
    const cls = name('ops');
    await admin.create<StorageClass>(Resources.storageClasses, { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: cls }, provisioner });
    try {
      const prov = { plugin_name: provisioner, operation_name: 'provision' };
      const del = { plugin_name: provisioner, operation_name: 'delete' };
      const [provisioned, deleted] = [await sample('volume_operation_total_seconds', prov, '_count'), await sample('volume_operation_total_seconds', del, '_count')];
      const claim = await admin.create(Resources.persistentVolumeClaims, pvc(ns, 'op', '1Gi', { class: cls }));
      await eventually(async () => expect((await getPVC(admin, ns, 'op')).metadata?.annotations?.['volume.kubernetes.io/storage-provisioner']).to.equal(provisioner));
      // As external-provisioner provisions: a volume pre-bound to the claim.
      const claimRef = { kind: 'PersistentVolumeClaim', apiVersion: 'v1', namespace: ns, name: 'op', uid: claim.metadata?.uid };
      await admin.create(Resources.persistentVolumes, pv(name('op'), '1Gi', { class: cls, policy: 'Delete', annotations: { 'pv.kubernetes.io/provisioned-by': provisioner }, claimRef }));
      await bound('op');
      await eventually(async () => expect(await sample('volume_operation_total_seconds', prov, '_count')).to.equal(provisioned + 1));
      // The harness's volumes are hostPath ones: kube-controller-manager's binder names that plugin.
      expect(await sample('pv_collector_total_pv_count', { plugin_name: 'kubernetes.io/host-path', volume_mode: 'Filesystem' })).to.be.at.least(1);
      await deleteNow(admin, Resources.persistentVolumeClaims, 'op', ns);
      await eventually(async () => expect((await getPV(admin, name('op'))).status?.phase).to.equal('Released'));
      await deleteNow(admin, Resources.persistentVolumes, name('op'));
      await eventually(async () => expect(await sample('volume_operation_total_seconds', del, '_count')).to.equal(deleted + 1));
      expect(await sample('volume_operation_errors_total', prov)).to.equal(0);
    } finally {
      await admin.delete(Resources.storageClasses, cls).catch(() => undefined);
    }
  });

  it('signals provisioning for a claim with a selector (the provisioner decides), and FailedBinding for class-less claims', async function () {
    await admin.create(Resources.storageClasses, { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: name('fast') }, provisioner: 'example.com/csi' });
    try {
      await admin.create(Resources.persistentVolumeClaims, pvc(ns, 'sel', '1Gi', { class: name('fast'), selector: { matchLabels: { tier: 'gold' } } }));
      await eventually(async () => expect((await getPVC(admin, ns, 'sel')).metadata?.annotations?.['volume.kubernetes.io/storage-provisioner']).to.equal('example.com/csi'));
      const none = await admin.create(Resources.persistentVolumeClaims, pvc(ns, 'none', '1Ti'));
      expect((await eventFor(admin, none, 'FailedBinding')).message).to.contain('no storage class is set');
    } finally {
      await admin.delete(Resources.storageClasses, name('fast'));
    }
  });
});

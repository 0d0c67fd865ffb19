import { expect } from 'chai';
import { metricsRegistry } from '@topovol/shared';
import type { PersistentVolume, PersistentVolumeClaim } from '@topovol/shared';
import { event } from '../../src/binder/actions.js';
import type { BinderAction } from '../../src/binder/actions.js';
import { Reasons } from '../../src/binder/binder-reasons.js';
import { collectorPluginName } from '../../src/binder/binder-metrics.js';
import { countRetroactiveClass, deleteStarted, OperationTimestamps, provisioningStarted } from '../../src/binder/operation-metrics.js';
import { world } from './world-fixture.js';

/** A series' value from the registry /metrics serves; a histogram's by its _count or _sum series. */
async function sample(series: string, labels: Record<string, string> = {}): Promise<number> {
  const family = series.replace(/_(count|sum)$/, '');
  const m = await metricsRegistry.getSingleMetric(metricsRegistry.getSingleMetric(series) ? series : family)?.get();
  const rows = m?.values.filter((v) => ((v as { metricName?: string }).metricName ?? series) === series && Object.entries(labels).every(([k, want]) => v.labels[k] === want));
  return rows?.reduce((n, v) => n + v.value, 0) ?? 0;
}

const claim: PersistentVolumeClaim = { metadata: { name: 'c', namespace: 'ns', uid: 'u1' }, spec: { storageClassName: 'fast' } };
const sc = (provisioner: string) => ({ metadata: { name: 'fast' }, provisioner });
const volume = (phase: string, extra: Partial<NonNullable<PersistentVolume['spec']>> = {}, annotations: Record<string, string> = {}): PersistentVolume => ({
  metadata: { name: 'v', annotations },
  spec: { persistentVolumeReclaimPolicy: 'Delete', storageClassName: 'fast', csi: { driver: 'csi.example.com', volumeHandle: 'h' }, ...extra },
  status: { phase },
});

// kube-controller-manager's operation metrics (pkg/controller/volume/persistentvolume/metrics/metrics.go).
describe('operation metrics: kube-controller-manager\'s volume_operation_* and retroactive_storageclass_* under its names', function () {
  it('volume_operation_total_errors, hidden in kube-controller-manager since 1.36 (deprecated ALPHA), is not exported', function () {
    expect(metricsRegistry.getSingleMetric('volume_operation_total_errors')).to.equal(undefined);
  });

  it('a provisioning is timed from its first hand-over to its binding: later hand-overs keep the first start, a failed step is an error and keeps it', async function () {
    let now = 1_000_000;
    const ops = new OperationTimestamps(() => now);
    const labels = { plugin_name: 'csi.example.com', operation_name: 'provision' };
    const count0 = await sample('volume_operation_total_seconds_count', labels);
    const sum0 = await sample('volume_operation_total_seconds_sum', labels);
    const errors0 = await sample('volume_operation_errors_total', labels);
    ops.addIfNotExist('ns/c', 'csi.example.com', 'provision');
    now += 2_000;
    ops.addIfNotExist('ns/c', 'csi.example.com', 'provision');
    ops.record('ns/c', true);
    expect(await sample('volume_operation_errors_total', labels)).to.equal(errors0 + 1);
    expect(ops.size).to.equal(1);
    now += 3_000;
    ops.record('ns/c', false);
    expect(await sample('volume_operation_total_seconds_count', labels)).to.equal(count0 + 1);
    expect((await sample('volume_operation_total_seconds_sum', labels)) - sum0).to.be.closeTo(5, 1e-9);
    // Ended: nothing more is recorded for it, and nothing for a key never started.
    ops.record('ns/c', false);
    ops.record('ns/other', true);
    expect(await sample('volume_operation_total_seconds_count', labels)).to.equal(count0 + 1);
    expect(ops.size).to.equal(0);
  });

  it('an empty plugin name is reported as N/A, as upstream; a forgotten operation records nothing', async function () {
    const ops = new OperationTimestamps();
    const before = await sample('volume_operation_errors_total', { plugin_name: 'N/A', operation_name: 'delete' });
    ops.addIfNotExist('v', '', 'delete');
    ops.record('v', true);
    expect(await sample('volume_operation_errors_total', { plugin_name: 'N/A', operation_name: 'delete' })).to.equal(before + 1);
    ops.forget('v');
    expect(ops.size).to.equal(0);
  });

  it('retroactive_storageclass_total counts every assignment, retroactive_storageclass_errors_total the failed ones', async function () {
    const [total0, errors0] = [await sample('retroactive_storageclass_total'), await sample('retroactive_storageclass_errors_total')];
    countRetroactiveClass(true);
    countRetroactiveClass(false);
    expect([await sample('retroactive_storageclass_total'), await sample('retroactive_storageclass_errors_total')]).to.deep.equal([total0 + 2, errors0 + 1]);
  });

  describe('provisioningStarted: the claim handed to its provisioner (the ExternalProvisioning Event)', function () {
    const handOver: BinderAction[] = [event(claim, 'Normal', Reasons.ExternalProvisioning, 'waiting')];
    const cases: { name: string; actions: BinderAction[]; provisioner?: string; want: string | undefined }[] = [
      { name: 'an external provisioner: its name', actions: handOver, provisioner: 'csi.example.com', want: 'csi.example.com' },
      { name: 'a migrated in-tree provisioner: its CSI driver, as upstream names it', actions: handOver, provisioner: 'kubernetes.io/gce-pd', want: 'pd.csi.storage.gke.io' },
      { name: 'no hand-over (waiting for a consumer)', actions: [event(claim, 'Normal', Reasons.WaitForFirstConsumer, 'waiting')], provisioner: 'csi.example.com', want: undefined },
      { name: 'no class: nothing to time (upstream fails before its timestamp)', actions: handOver, want: undefined },
    ];
    for (const c of cases) {
      it(c.name, function () {
        expect(provisioningStarted(c.actions, claim, c.provisioner ? sc(c.provisioner) : undefined)).to.equal(c.want);
      });
    }
  });

  describe('deleteStarted: a volume released to an external deleter by this decision (upstream reclaimVolume with Delete)', function () {
    const claimed = (v: PersistentVolume): PersistentVolume => ({ ...v, spec: { ...v.spec, claimRef: { namespace: 'ns', name: 'c', uid: 'u1' } } });
    const live: PersistentVolumeClaim = { ...claim, spec: { ...claim.spec, volumeName: 'v' } };
    const cases: { name: string; v: PersistentVolume; claims: PersistentVolumeClaim[]; classes?: string[]; want: string | undefined }[] = [
      { name: 'its claim gone: the class provisioner', v: claimed(volume('Bound')), claims: [], want: 'csi.example.com' },
      { name: 'already Released, claim gone (a resync): the same name, kept from the first start', v: claimed(volume('Released')), claims: [], want: 'csi.example.com' },
      { name: 'its claim re-created under the name (another uid)', v: claimed(volume('Bound')), claims: [{ ...live, metadata: { ...live.metadata, uid: 'u2' } }], want: 'csi.example.com' },
      { name: 'its claim still bound to it', v: claimed(volume('Bound')), claims: [live], want: undefined },
      { name: 'Released with no claimRef (made Available again by hand)', v: volume('Released'), claims: [], want: undefined },
      { name: 'Retain', v: claimed(volume('Bound', { persistentVolumeReclaimPolicy: 'Retain' })), claims: [], want: undefined },
      { name: 'migrated to CSI: upstream stands down', v: claimed(volume('Bound', {}, { 'pv.kubernetes.io/migrated-to': 'pd.csi.storage.gke.io' })), claims: [], want: undefined },
      { name: 'no deleter (an NFS volume, marked Failed): not timed', v: claimed(volume('Bound', { csi: undefined, nfs: { server: 's', path: '/p' } })), claims: [], want: undefined },
      { name: 'no class: N/A', v: claimed(volume('Bound')), claims: [], classes: [], want: 'N/A' },
    ];
    for (const c of cases) {
      it(c.name, function () {
        const classes = (c.classes ?? ['fast']).map(() => ({ ...sc('csi.example.com'), apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass' }));
        expect(deleteStarted(c.v, world({ claims: c.claims, classes }))).to.equal(c.want);
      });
    }
  });

  it("collectorPluginName: the plugins kube-controller-manager's binder probes (hostpath, nfs), every other volume N/A", function () {
    expect(collectorPluginName(volume('Bound', { csi: undefined, hostPath: { path: '/tmp/x' } }))).to.equal('kubernetes.io/host-path');
    expect(collectorPluginName(volume('Bound', { csi: undefined, nfs: { server: 's', path: '/p' } }))).to.equal('kubernetes.io/nfs');
    expect(collectorPluginName(volume('Bound'))).to.equal('N/A');
    expect(collectorPluginName(volume('Bound', { csi: undefined, local: { path: '/mnt' } }))).to.equal('N/A');
  });
});

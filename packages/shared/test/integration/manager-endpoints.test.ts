import { expect } from 'chai';
import { Resources } from '../../src/index.js';
import type { KubeClient, KubeObject } from '../../src/index.js';
import { createTestNamespace, eventually, sharedControlPlane } from '@topovol/testing';
import type { ControlPlane } from '@topovol/testing';
import { httpGet, sample, startEchoManager } from './manager-process.js';
import type { EchoManager } from './manager-process.js';

const WIDGET_CRD = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'widgets.test.topovol.dev' },
  spec: {
    group: 'test.topovol.dev',
    names: { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList' },
    scope: 'Cluster',
    versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }],
  },
};

describe('manager HTTP endpoints: /metrics and /readyz', function () {
  this.timeout(120_000);
  let cp: ControlPlane;
  let admin: KubeClient;
  let ns: string;
  let mgr: EchoManager | undefined;

  before(async function () {
    cp = await sharedControlPlane();
    admin = cp.adminClient();
  });

  beforeEach(async function () {
    ns = await createTestNamespace(admin);
  });

  afterEach(async function () {
    await mgr?.proc.kill();
    mgr = undefined;
    await admin.delete(Resources.customResourceDefinitions, WIDGET_CRD.metadata.name).catch(() => undefined);
  });

  it('/readyz is not ready before the caches sync, and ready after', async function () {
    // The widgets resource does not exist yet, so that informer cannot sync.
    mgr = await startEchoManager(cp, `ready-${ns}`, ['--leader-elect=false', '--echo-watch-widgets']);
    const m = mgr;
    const notReady = await eventually(async () => {
      const r = await httpGet(m.probePort, '/readyz?verbose');
      expect(r.status).to.equal(500);
      return r.body;
    });
    expect(notReady).to.match(/\[-\]loop-echo failed: waiting for caches: .*widgets/);
    expect((await httpGet(m.probePort, '/healthz')).status).to.equal(200);
    await admin.create(Resources.customResourceDefinitions, WIDGET_CRD);
    await eventually(async () => expect((await httpGet(m.probePort, '/readyz')).status).to.equal(200), 60_000);
  });

  it('a loop whose informer cannot sync holds up only itself; its readiness names the resource, after --cache-sync-timeout too', async function () {
    mgr = await startEchoManager(cp, `own-sync-${ns}`, ['--leader-elect=false', '--controllers=echo,widgets', '--cache-sync-timeout=1s']);
    const m = mgr;
    await admin.create(Resources.configMaps, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm', namespace: ns, labels: { 'test.topovol.dev/echo': '' } } });
    // The echo loop works although the widgets loop's cache never syncs.
    await eventually(async () => expect((await admin.get<KubeObject>(Resources.configMaps, 'cm', ns)).metadata?.annotations?.['test.topovol.dev/reconciled-by']).to.be.a('string'), 60_000);
    const body = await eventually(async () => {
      const r = await httpGet(m.probePort, '/readyz?verbose');
      expect(r.body).to.match(/\[-\]loop-widgets failed: caches not synced after 1s: widgets\.test\.topovol\.dev/);
      return r.body;
    });
    expect(body).to.match(/\[\+\]loop-echo ok/);
  });

  it('probes are served while a loop is still being set up; that loop is not ready, the others work', async function () {
    mgr = await startEchoManager(cp, `setup-${ns}`, ['--leader-elect=false', '--controllers=echo,stuck']);
    const m = mgr;
    await eventually(async () => expect((await httpGet(m.probePort, '/healthz')).status).to.equal(200), 60_000);
    const r = await httpGet(m.probePort, '/readyz?verbose');
    expect(r.status).to.equal(500);
    expect(r.body).to.match(/\[-\]loop-stuck failed: setting up: waiting for the fixture, which never comes/);
    await admin.create(Resources.configMaps, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm', namespace: ns, labels: { 'test.topovol.dev/echo': '' } } });
    await eventually(async () => expect((await admin.get<KubeObject>(Resources.configMaps, 'cm', ns)).metadata?.annotations?.['test.topovol.dev/reconciled-by']).to.be.a('string'), 60_000);
  });

  it('/metrics shows work-queue and reconcile metrics with client-go and controller-runtime names', async function () {
    mgr = await startEchoManager(cp, `metrics-${ns}`, ['--leader-elect=false']);
    const label = { 'test.topovol.dev/echo': '' };
    await admin.create(Resources.configMaps, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'ok', namespace: ns, labels: label } });
    await admin.create(Resources.configMaps, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'retry', namespace: ns, labels: label }, data: { fail: 'retry' } } as KubeObject);
    await admin.create(Resources.configMaps, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'terminal', namespace: ns, labels: label }, data: { fail: 'terminal' } } as KubeObject);
    const m = mgr;
    const body = await eventually(async () => {
      const r = await httpGet(m.metricsPort, '/metrics');
      expect(r.status).to.equal(200);
      expect(sample(r.body, 'workqueue_retries_total', { name: 'echo' })).to.be.at.least(3);
      expect(sample(r.body, 'controller_runtime_reconcile_total', { controller: 'echo', result: 'success' })).to.be.at.least(1);
      expect(sample(r.body, 'controller_runtime_terminal_reconcile_errors_total', { controller: 'echo' })).to.equal(1);
      return r.body;
    });
    for (const name of [
      'workqueue_depth',
      'workqueue_adds_total',
      'workqueue_queue_duration_seconds_bucket',
      'workqueue_work_duration_seconds_bucket',
      'workqueue_unfinished_work_seconds',
      'workqueue_longest_running_processor_seconds',
    ]) {
      expect(sample(body, name, { name: 'echo' }), name).to.be.a('number');
    }
    expect(sample(body, 'controller_runtime_reconcile_errors_total', { controller: 'echo' })).to.be.at.least(4);
    expect(sample(body, 'controller_runtime_reconcile_time_seconds_count', { controller: 'echo' })).to.be.at.least(5);
    expect(sample(body, 'process_resident_memory_bytes', {})).to.be.greaterThan(0);
    const ok = await admin.get<KubeObject>(Resources.configMaps, 'ok', ns);
    expect(ok.metadata?.annotations?.['test.topovol.dev/reconciled-by']).to.be.a('string');
  });

  it('rejects a bad flag with a one-line reason and a non-zero exit', async function () {
    mgr = await startEchoManager(cp, `badflag-${ns}`, ['--kube-api-qps=fast']);
    expect(await mgr.proc.waitForExit()).to.equal(2);
    expect(mgr.proc.logTail().trim()).to.match(/^Error: .*--kube-api-qps/);
  });

  it('rejects an unknown controller name at start-up', async function () {
    mgr = await startEchoManager(cp, `badctl-${ns}`, ['--controllers=echo,nope']);
    expect(await mgr.proc.waitForExit()).to.equal(2);
    expect(mgr.proc.logTail()).to.contain('unknown controller "nope"');
  });
});

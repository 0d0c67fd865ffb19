import { execFile } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { dump, load } from 'js-yaml';
import { Resources } from '../../src/index.js';
import type { CSINode, KubeClient, PersistentVolume, PersistentVolumeClaim, StorageClass } from '../../src/index.js';
import { createReadyNode, createTestNamespace, eventually, freePort, httpGet, ManagedProcess, metricsReader, repoRoot, sharedControlPlane } from '@topovol/testing';
import type { ControlPlane } from '@topovol/testing';
import type { AllLoopsManager } from './all-loops-manager.js';
import { startAllLoopsManager } from './all-loops-manager.js';

const run = promisify(execFile);
// Debian's prometheus package (2.42) provides both; hack/test.sh installs it when missing.
const PROMETHEUS = process.env.PROMETHEUS ?? 'prometheus';
const PROMTOOL = process.env.PROMTOOL ?? 'promtool';
const CONFIG = path.join(repoRoot(), 'config');

interface ServiceMonitor {
  metadata: { name: string; namespace: string };
  spec: {
    endpoints: { port: string; path?: string; scheme?: string; interval?: string; scrapeTimeout?: string; honorLabels?: boolean; bearerTokenFile?: string; tlsConfig?: { insecureSkipVerify?: boolean } }[];
  };
}

/**
 * What the Prometheus Operator renders for one ServiceMonitor endpoint, pointed at one local
 * target; the token file the pod would have mounted at the endpoint's bearerTokenFile is `tokenFile`.
 */
function scrapeConfigFrom(sm: ServiceMonitor, target: string, tokenFile: string): Record<string, unknown> {
  const ep = sm.spec.endpoints[0]!;
  return {
    job_name: `serviceMonitor/${sm.metadata.namespace}/${sm.metadata.name}/0`,
    metrics_path: ep.path ?? '/metrics',
    scheme: ep.scheme ?? 'http',
    ...(ep.bearerTokenFile ? { bearer_token_file: tokenFile } : {}),
    ...(ep.tlsConfig ? { tls_config: { insecure_skip_verify: ep.tlsConfig.insecureSkipVerify ?? false } } : {}),
    honor_labels: ep.honorLabels ?? false,
    // The ServiceMonitor's interval, shortened so the test does not wait 30 s for a sample.
    scrape_interval: '1s',
    scrape_timeout: '1s',
    static_configs: [{ targets: [target], labels: { job: 'topovol-metrics', namespace: sm.metadata.namespace, service: 'topovol-metrics', endpoint: ep.port } }],
  };
}

async function promQuery(port: number, query: string): Promise<{ metric: Record<string, string>; value: [number, string] }[]> {
  const res = await fetch(`http://127.0.0.1:${port}/api/v1/query?query=${encodeURIComponent(query)}`);
  const body = (await res.json()) as { status: string; data: { result: { metric: Record<string, string>; value: [number, string] }[] } };
  if (body.status !== 'success') throw new Error(`query ${query}: ${JSON.stringify(body)}`);
  return body.data.result;
}

/** Metric names in PromQL: identifiers followed by a label matcher (every dashboard query has one). */
function metricNames(expr: string): string[] {
  return [...expr.matchAll(/([a-zA-Z_:][a-zA-Z0-9_:]*)\{/g)].map((m) => m[1]!);
}

describe('observability: ServiceMonitor scrape by a real Prometheus, alert rules, Grafana dashboard', function () {
  this.timeout(180_000);
  let cp: ControlPlane;
  let admin: KubeClient;
  let ns: string;
  let mgr: AllLoopsManager;
  let prometheus: ManagedProcess | undefined;
  let token: string;
  const name = (s: string): string => `${ns}-${s}`;

  before(async function () {
    cp = await sharedControlPlane();
    admin = cp.adminClient();
    ns = await createTestNamespace(admin, 'obs-');
    // As shipped: HTTPS, each scrape reviewed by the API server; Prometheus's ServiceAccount is bound
    // to the shipped topovol-metrics-reader ClusterRole.
    mgr = await startAllLoopsManager(cp, ns, { args: ['--metrics-secure=true'] });
    ({ token } = await metricsReader(cp, ns, 'prometheus'));
    await eventually(async () => expect((await httpGet(`http://127.0.0.1:${mgr.probePort}/readyz`)).status, mgr.manager.logTail(10)).to.equal(200), 60_000);
    // Something for every loop to report: a node with the driver, a class, a bound static pair.
    await createReadyNode(admin, name('n1'), { zone: 'z1' });
    await admin.create<CSINode>(Resources.csiNodes, { apiVersion: 'storage.k8s.io/v1', kind: 'CSINode', metadata: { name: name('n1') }, spec: { drivers: [{ name: mgr.driver.name, nodeID: name('n1'), topologyKeys: ['zone'] }] } });
    await admin.create<StorageClass>(Resources.storageClasses, { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: name('fast') }, provisioner: mgr.driver.name, volumeBindingMode: 'WaitForFirstConsumer' });
    await admin.create<PersistentVolume>(Resources.persistentVolumes, { apiVersion: 'v1', kind: 'PersistentVolume', metadata: { name: name('pv') }, spec: { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], hostPath: { path: '/tmp/x' } } });
    await admin.create<PersistentVolumeClaim>(Resources.persistentVolumeClaims, { apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name: 'c', namespace: ns }, spec: { accessModes: ['ReadWriteOnce'], storageClassName: '', resources: { requests: { storage: '1Gi' } } } });
    await eventually(async () => expect((await admin.get<PersistentVolumeClaim>(Resources.persistentVolumeClaims, 'c', ns)).status?.phase).to.equal('Bound'), 60_000);
  });
  after(async function () {
    await prometheus?.stop();
    await mgr?.stop();
    for (const [r, n] of [[Resources.nodes, name('n1')], [Resources.csiNodes, name('n1')], [Resources.storageClasses, name('fast')], [Resources.persistentVolumes, name('pv')], [Resources.clusterRoleBindings, `${ns}-prometheus`]] as const) await admin.delete(r, n).catch(() => undefined);
  });

  it('promtool: the PrometheusRule groups pass check rules, and every alert passes its unit tests', async function () {
    const rule = load(readFileSync(path.join(CONFIG, 'prometheus', 'prometheus-rule.yaml'), 'utf8')) as { spec: { groups: unknown[] } };
    const dir = mkdtempSync(path.join(tmpdir(), 'topovol-rules-'));
    writeFileSync(path.join(dir, 'rules.yaml'), dump({ groups: rule.spec.groups }));
    copyFileSync(path.join(CONFIG, 'prometheus', 'tests', 'rules.test.yaml'), path.join(dir, 'rules.test.yaml'));
    const alerts = (rule.spec.groups as { rules: { alert?: string }[] }[]).flatMap((g) => g.rules.flatMap((r) => (r.alert ? [r.alert] : [])));
    const check = await run(PROMTOOL, ['check', 'rules', path.join(dir, 'rules.yaml')]);
    expect(check.stdout).to.contain(`SUCCESS: ${alerts.length} rules found`);
    const test = await run(PROMTOOL, ['test', 'rules', path.join(dir, 'rules.test.yaml')]);
    expect(test.stdout).to.match(/SUCCESS/);
    // Every alert in the rule file has a test case.
    const tests = readFileSync(path.join(dir, 'rules.test.yaml'), 'utf8');
    for (const a of alerts) expect(tests, `a promtool test for ${a}`).to.contain(`alertname: ${a}`);
  });

  it('a real Prometheus scrapes the manager with the ServiceMonitor\'s endpoint and answers binding, queue and capacity queries', async function () {
    const sm = load(readFileSync(path.join(CONFIG, 'prometheus', 'service-monitor.yaml'), 'utf8')) as ServiceMonitor;
    const dir = mkdtempSync(path.join(tmpdir(), 'topovol-prometheus-'));
    const port = await freePort();
    writeFileSync(path.join(dir, 'token'), token);
    writeFileSync(path.join(dir, 'prometheus.yml'), dump({ global: { scrape_interval: '1s' }, scrape_configs: [scrapeConfigFrom(sm, `127.0.0.1:${mgr.metricsPort}`, path.join(dir, 'token'))] }));
    prometheus = new ManagedProcess({
      name: 'prometheus',
      command: PROMETHEUS,
      args: [`--config.file=${path.join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${path.join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`],
      logFile: path.join(dir, 'prometheus.log'),
    });
    await eventually(async () => expect((await promQuery(port, 'up{job="topovol-metrics"}')).map((r) => r.value[1])).to.deep.equal(['1']), 60_000, 500);
    const one = async (q: string): Promise<number> => {
      const r = await promQuery(port, q);
      expect(r, q).to.have.length.greaterThan(0);
      return Number(r[0]!.value[1]);
    };
    await eventually(async () => {
      expect(await one('sum(topovol_pv_binder_binds_total{result="bound"})')).to.be.at.least(1);
      expect(await one(`pv_collector_bound_pvc_count{namespace="${ns}"}`)).to.equal(1);
      expect(await one('workqueue_depth{name="pv-binder"}')).to.be.at.least(0);
      expect(await one('sum(workqueue_adds_total{name="capacity"})')).to.be.at.least(1);
      expect(await one('csistoragecapacities_desired_goal')).to.equal(1);
      expect(await one(`topovol_capacity_available_bytes{storage_class="${name('fast')}"}`)).to.equal(4 * 2 ** 30);
      expect(await one('leader_election_master_status{name="topovol-pv-binder"}')).to.equal(1);
    }, 60_000, 500);
  });

  it('every metric the Grafana dashboard queries is one the running manager exports', async function () {
    const dash = JSON.parse(readFileSync(path.join(CONFIG, 'grafana', 'topovol-dashboard.json'), 'utf8')) as { panels: { title: string; targets: { expr: string }[] }[] };
    const exported = (await httpGet(`https://127.0.0.1:${mgr.metricsPort}/metrics`, { token })).body;
    const families = new Set([...exported.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]!));
    const names = dash.panels.flatMap((p) => p.targets.flatMap((t) => metricNames(t.expr)));
    expect(names.length).to.be.greaterThan(15);
    for (const n of names) {
      const family = n.replace(/_(bucket|sum|count)$/, '');
      expect(families.has(n) || families.has(family), `dashboard metric ${n} is exported`).to.equal(true);
    }
  });
});

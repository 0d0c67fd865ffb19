import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import type { KubeObject } from '@topovol/shared';
import { FLOW_SCHEMA_NAME, INSTALL_NAMESPACE, LEADER_ELECTION_FLOW_SCHEMA_NAME, METRICS_CERT_DIR } from '../../../src/index.js';
import { controlPlaneBinaries, repoRoot, sharedControlPlane } from '@topovol/testing';
import type { ControlPlane } from '@topovol/testing';
import { loadManifests } from '@topovol/testing';
import { kubectl } from './kubectl.js';
import type { RunResult } from './kubectl.js';

function exec(bin: string, args: string[], cwd: string, timeout = 120_000): Promise<RunResult> {
  return new Promise((resolve) => {
    execFile(bin, args, { cwd, maxBuffer: 64 << 20, timeout }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr });
    });
  });
}

/** The pinned helm from hack/helm-binary.sh (built from the Go module proxy on first use, cached). */
async function helmBinary(root: string): Promise<string> {
  const res = await exec('bash', [path.join(root, 'hack', 'helm-binary.sh')], root, 45 * 60_000);
  if (res.code !== 0) throw new Error(`helm unavailable: ${res.stderr}`);
  return res.stdout.trim().split('\n').pop()!;
}

function key(o: KubeObject): string {
  return `${o.kind}/${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;
}

function byKey(objects: KubeObject[]): Map<string, KubeObject> {
  return new Map(objects.map((o) => [key(o), o]));
}

/** Same objects (by kind, namespace and name), each deep-equal: order and comments do not matter. */
function expectSameObjects(actual: KubeObject[], expected: KubeObject[], what: string): void {
  const a = byKey(actual);
  const e = byKey(expected);
  expect([...a.keys()].sort(), what).to.deep.equal([...e.keys()].sort());
  for (const [k, o] of e) expect(a.get(k), `${what}: ${k}`).to.deep.equal(o);
}

const isWorkload = (o: KubeObject): boolean => o.kind === 'Deployment' || o.kind === 'DaemonSet' || o.kind === 'PodDisruptionBudget';
const isRbac = (o: KubeObject): boolean => ['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding'].includes(o.kind ?? '');

// The Helm chart and dist/install.yaml: both are rendered from
// config/ (hack/generate.mjs), helm lint passes, and what they render is accepted by the real API
// server and is the same set of objects config/ installs.
describe('charts/topovol and dist/install.yaml against the real kube-apiserver', function () {
  this.timeout(180_000);
  let cp: ControlPlane;
  let kubectlBin: string;
  let helmBin: string;
  const root = repoRoot();
  const run = (...args: string[]): Promise<RunResult> => kubectl(kubectlBin, cp, args, root);
  const helm = (...args: string[]): Promise<RunResult> => exec(helmBin, args, root);
  const fromFile = (rel: string): KubeObject[] => loadManifests(readFileSync(path.join(root, rel), 'utf8'));

  /** helm template with these values (none: the chart's defaults), CRDs included, as objects and text. */
  async function template(values?: object): Promise<{ text: string; objects: KubeObject[] }> {
    const args = ['template', 'topovol', 'charts/topovol', '--include-crds'];
    if (values) {
      const file = path.join(cp.dir, `values-${Math.random().toString(36).slice(2)}.json`);
      writeFileSync(file, JSON.stringify(values));
      args.push('--values', file);
    }
    const res = await helm(...args);
    expect(res.code, res.stderr).to.equal(0);
    return { text: res.stdout, objects: loadManifests(res.stdout) };
  }

  /** kubectl apply --server-side --dry-run=server of a manifest text: every object accepted, no warnings. */
  async function expectDryRunAccepts(text: string, name: string): Promise<void> {
    const file = path.join(cp.dir, `${name}.yaml`);
    writeFileSync(file, text);
    const res = await run('apply', '--server-side', '--dry-run=server', '-f', file);
    expect(res.code, res.stderr).to.equal(0);
    expect(res.stderr, 'warnings').to.not.match(/warning/i);
    const lines = res.stdout.trim().split('\n');
    expect(lines, res.stdout).to.have.length(loadManifests(text).length);
    for (const line of lines) expect(line).to.match(/serverside-applied \(server dry run\)$/);
  }

  const everyLoop = { controllers: { pvBinder: { enabled: true }, zonalPvUpgrade: { enabled: true }, rollback: { enabled: true }, capacity: { enabled: true } } };
  const everyLoopAllInOne = { ...everyLoop, allInOne: true, controllers: { ...everyLoop.controllers, capacity: { enabled: true, perNode: true } } };

  before(async function () {
    cp = await sharedControlPlane();
    kubectlBin = (await controlPlaneBinaries(['kubectl'])).kubectl;
    helmBin = await helmBinary(root);
    // Server-side dry run cannot create the namespace its namespaced objects go to; apply it first.
    const ns = await run('apply', '--server-side', '-f', 'config/manager/namespace.yaml');
    expect(ns.code, ns.stderr).to.equal(0);
  });

  it('helm lint --strict passes, with the default values and with every loop enabled', async function () {
    for (const values of [undefined, everyLoop, everyLoopAllInOne]) {
      const args = ['lint', '--strict', 'charts/topovol'];
      if (values) {
        const file = path.join(cp.dir, 'lint-values.json');
        writeFileSync(file, JSON.stringify(values));
        args.push('--values', file);
      }
      const res = await helm(...args);
      expect(res.code, res.stdout + res.stderr).to.equal(0);
      expect(res.stdout).to.contain('0 chart(s) failed');
    }
  });

  const cases: { name: string; values?: object }[] = [
    { name: 'default values' },
    { name: 'every loop, a Deployment each, capacity as a CSI driver sidecar', values: everyLoop },
    { name: 'every loop, all-in-one, capacity per node', values: everyLoopAllInOne },
  ];
  for (const c of cases) {
    it(`helm template (${c.name}) | kubectl apply --server-side --dry-run=server succeeds without Pod Security warnings`, async function () {
      const { text } = await template(c.values);
      await expectDryRunAccepts(text, `helm-${cases.indexOf(c)}`);
    });
  }

  it('dist/install.yaml is accepted by kubectl apply --server-side --dry-run=server', async function () {
    await expectDryRunAccepts(readFileSync(path.join(root, 'dist/install.yaml'), 'utf8'), 'install');
  });

  it('dist/install.yaml is exactly what kubectl kustomize config/default prints, under its header', async function () {
    const res = await run('kustomize', 'config/default');
    expect(res.code, res.stderr).to.equal(0);
    const text = readFileSync(path.join(root, 'dist/install.yaml'), 'utf8');
    const body = text.replace(/^(#.*\n)+/, '');
    expect(text.length - body.length, 'a comment header').to.be.greaterThan(0);
    expect(body).to.equal(res.stdout);
  });

  it('with default values the chart renders the same objects as config/default (dist/install.yaml)', async function () {
    const { objects } = await template();
    expectSameObjects(objects, fromFile('dist/install.yaml'), 'helm template vs dist/install.yaml');
  });

  it('with every loop enabled: the Deployments and RBAC of config/manager and config/rbac', async function () {
    const { objects } = await template(everyLoop);
    const rbac = await run('kustomize', 'config/rbac');
    expect(rbac.code, rbac.stderr).to.equal(0);
    expectSameObjects(objects.filter(isRbac), loadManifests(rbac.stdout), 'RBAC');
    const workloads = ['config/manager/pv-binder.yaml', 'config/manager/zonal-pv-upgrade/deployment.yaml', 'config/manager/rollback/deployment.yaml', 'config/manager/capacity-sidecar/deployment.yaml'];
    expectSameObjects(objects.filter(isWorkload), workloads.flatMap(fromFile), 'workloads');
  });

  it('with every loop in one process: config/manager/all-in-one, its RBAC, and the per-node capacity DaemonSet', async function () {
    const { objects } = await template(everyLoopAllInOne);
    expectSameObjects(objects.filter(isWorkload), [...fromFile('config/manager/all-in-one/deployment.yaml'), ...fromFile('config/manager/capacity-per-node/daemonset.yaml')], 'workloads');
    const rbac = await run('kustomize', 'config/rbac/all-in-one');
    expect(rbac.code, rbac.stderr).to.equal(0);
    // The capacity DaemonSet keeps its own ServiceAccount (config/rbac/capacity.yaml).
    expectSameObjects(objects.filter(isRbac), [...loadManifests(rbac.stdout), ...fromFile('config/rbac/capacity.yaml')], 'RBAC');
    // The admission policy exempts the ServiceAccount that runs the rollback loop: here the all-in-one one.
    const policy = objects.find((o) => o.kind === 'ValidatingAdmissionPolicy') as unknown as { spec: { matchConditions: { expression: string }[] } };
    expect(policy.spec.matchConditions[0]!.expression).to.contain(`'system:serviceaccount:${INSTALL_NAMESPACE}:topovol-controller-manager'`);
  });

  it('the metrics toggles render config/prometheus (Service, ServiceMonitor, PrometheusRule)', async function () {
    const off = await template();
    expect(off.objects.filter((o) => ['Service', 'ServiceMonitor', 'PrometheusRule'].includes(o.kind ?? ''))).to.have.length(0);
    const { objects } = await template({ metrics: { serviceMonitor: { enabled: true }, prometheusRule: { enabled: true } } });
    const expected = ['metrics-service.yaml', 'service-monitor.yaml', 'prometheus-rule.yaml'].flatMap((f) => fromFile(`config/prometheus/${f}`));
    expectSameObjects(objects.filter((o) => ['Service', 'ServiceMonitor', 'PrometheusRule'].includes(o.kind ?? '')), expected, 'prometheus');
  });

  it('values reach every object: namespace, image, replicas, resources, metrics port, capacity driver', async function () {
    // Helm merges maps with the defaults, so every key the defaults have is given.
    const resources = { requests: { cpu: '50m', memory: '100Mi' }, limits: { cpu: '1', memory: '1Gi' } };
    const { objects, text } = await template({
      namespace: { name: 'storage-ops', create: true },
      image: { repository: 'registry.example.com/topovol', tag: 'v9', pullPolicy: 'Always' },
      replicas: 3,
      resources,
      metrics: { port: 9090, serviceMonitor: { enabled: true } },
      controllers: { rollback: { enabled: true }, capacity: { enabled: true, driverName: 'hostpath.csi.k8s.io', csiAddress: '/csi/driver.sock', driver: { image: 'registry.example.com/hostpath:v1', extraArgs: ['--v=5'] } } },
    });
    expect(text).to.not.contain(INSTALL_NAMESPACE);
    for (const o of objects) {
      if (o.kind === 'Namespace') expect(o.metadata?.name).to.equal('storage-ops');
      else if (o.metadata?.namespace !== undefined) expect(o.metadata.namespace, key(o)).to.equal('storage-ops');
    }
    type Pod = { containers: { name: string; image: string; imagePullPolicy?: string; args: string[]; resources?: object; ports?: { name: string; containerPort: number }[] }[] };
    const deployments = objects.filter((o) => o.kind === 'Deployment') as unknown as { metadata: { name: string }; spec: { replicas: number; template: { spec: Pod } } }[];
    expect(deployments.map((d) => d.metadata.name).sort()).to.deep.equal(['topovol-capacity', 'topovol-pv-binder', 'topovol-rollback']);
    for (const d of deployments) {
      expect(d.spec.replicas).to.equal(3);
      const manager = d.spec.template.spec.containers.find((c) => c.name === 'manager')!;
      expect(manager.image).to.equal('registry.example.com/topovol:v9');
      expect(manager.imagePullPolicy).to.equal('Always');
      expect(manager.resources).to.deep.equal(resources);
      expect(manager.args).to.include('--metrics-bind-address=:9090');
      expect(manager.ports?.find((p) => p.name === 'metrics')?.containerPort).to.equal(9090);
    }
    const capacity = deployments.find((d) => d.metadata.name === 'topovol-capacity')!.spec.template.spec.containers;
    expect(capacity[0]!.args).to.include.members(['--csi-address=/csi/driver.sock', '--driver-name=hostpath.csi.k8s.io']);
    expect(capacity[1]).to.deep.include({ image: 'registry.example.com/hostpath:v1', args: ['--endpoint=unix:///csi/driver.sock', '--mode=controller', '--v=5'] });
    const service = objects.find((o) => o.kind === 'Service') as unknown as { spec: { ports: { port: number }[] } };
    expect(service.spec.ports[0]!.port).to.equal(9090);
    const sm = objects.find((o) => o.kind === 'ServiceMonitor') as unknown as { spec: { namespaceSelector: { matchNames: string[] } } };
    expect(sm.spec.namespaceSelector.matchNames).to.deep.equal(['storage-ops']);
    const policy = objects.find((o) => o.kind === 'ValidatingAdmissionPolicy') as unknown as { spec: { matchConditions: { expression: string }[] } };
    expect(policy.spec.matchConditions[0]!.expression).to.contain("'system:serviceaccount:storage-ops:topovol-rollback'");
    type Schema = { spec: { rules: { subjects: { serviceAccount: { namespace: string } }[]; resourceRules: { namespaces: string[] }[] }[] } };
    const schemas = objects.filter((o) => o.kind === 'FlowSchema') as unknown as Schema[];
    expect(schemas).to.have.length(2);
    for (const r of schemas.flatMap((x) => x.spec.rules)) {
      for (const subject of r.subjects) expect(subject.serviceAccount.namespace).to.equal('storage-ops');
      for (const rule of r.resourceRules) expect(rule.namespaces).to.satisfy((ns: string[]) => ns.every((n) => n === 'storage-ops' || n === '*'));
    }
  });

  it('metrics.certSecretName mounts that Secret in every manager container and passes --metrics-cert-path; serviceMonitor.tlsConfig replaces insecureSkipVerify', async function () {
    type Container = { name: string; args: string[]; volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[] };
    type Workload = { kind: string; metadata: { name: string }; spec: { template: { spec: { containers: Container[]; volumes: { name: string; secret?: { secretName: string } }[] } } } };
    const workloadsOf = (objects: KubeObject[]): Workload[] => objects.filter((o) => o.kind === 'Deployment' || o.kind === 'DaemonSet') as unknown as Workload[];
    const tlsConfig = { ca: { secret: { name: 'topovol-metrics-tls', key: 'ca.crt' } }, serverName: `topovol-metrics.${INSTALL_NAMESPACE}.svc` };
    const metrics = { port: 8443, certSecretName: 'topovol-metrics-tls', serviceMonitor: { enabled: true, tlsConfig } };
    const seen = new Set<string>();
    for (const values of [{ ...everyLoop, metrics }, { ...everyLoopAllInOne, metrics, extraArgs: ['--metrics-cert-path=/elsewhere'] }]) {
      const { text, objects } = await template(values);
      const workloads = workloadsOf(objects);
      expect(workloads.length).to.be.at.least(2);
      for (const w of workloads) {
        seen.add(w.kind);
        const pod = w.spec.template.spec;
        expect(pod.volumes.filter((v) => v.secret), w.metadata.name).to.deep.equal([{ name: 'metrics-cert', secret: { secretName: 'topovol-metrics-tls' } }]);
        for (const c of pod.containers) {
          const mounts = (c.volumeMounts ?? []).filter((m) => m.name === 'metrics-cert');
          if (c.name !== 'manager') {
            expect(mounts, `${w.metadata.name}/${c.name}: only the manager reads the key`).to.have.length(0);
            continue;
          }
          expect(mounts, w.metadata.name).to.deep.equal([{ name: 'metrics-cert', mountPath: METRICS_CERT_DIR, readOnly: true }]);
          const paths = c.args.filter((a) => a.startsWith('--metrics-cert-path='));
          // extraArgs come after it, so that one given there is the value the flag parser keeps.
          expect(paths, w.metadata.name).to.deep.equal('extraArgs' in values ? [`--metrics-cert-path=${METRICS_CERT_DIR}`, '--metrics-cert-path=/elsewhere'] : [`--metrics-cert-path=${METRICS_CERT_DIR}`]);
        }
      }
      const sm = objects.find((o) => o.kind === 'ServiceMonitor') as unknown as { spec: { endpoints: { tlsConfig: object }[] } };
      expect(sm.spec.endpoints[0]!.tlsConfig).to.deep.equal(tlsConfig);
      expect(text).to.contain('metrics-cert');
      // This API server has no Prometheus Operator CRDs: the rest of the render, without the ServiceMonitor.
      const withoutMonitor = await template({ ...values, metrics: { ...metrics, serviceMonitor: { enabled: false } } });
      await expectDryRunAccepts(withoutMonitor.text, `helm-metrics-cert-${seen.size}`);
    }
    expect([...seen].sort()).to.deep.equal(['DaemonSet', 'Deployment']);
    // Not set (the default, or an older release's values without the keys): no volume, no flag, the self-signed certificate unverified.
    for (const values of [{ ...everyLoopAllInOne, metrics: { port: 8443, serviceMonitor: { enabled: true } } }, { ...everyLoop, metrics: { port: 8443, certSecretName: null, serviceMonitor: { enabled: true, tlsConfig: null } } }]) {
      const { text, objects } = await template(values);
      expect(text).to.not.contain('metrics-cert');
      const sm = objects.find((o) => o.kind === 'ServiceMonitor') as unknown as { spec: { endpoints: { tlsConfig: object }[] } };
      expect(sm.spec.endpoints[0]!.tlsConfig).to.deep.equal({ insecureSkipVerify: true });
    }
  });

  it('flowSchemas.create=false leaves the FlowSchemas out; values without the key (an older release reused) keep them', async function () {
    const off = await template({ flowSchemas: { create: false } });
    expect(off.objects.filter((o) => o.kind === 'FlowSchema')).to.have.length(0);
    expect(off.objects.filter((o) => o.kind === 'Deployment')).to.have.length.at.least(1);
    const reused = await template({ flowSchemas: null });
    expect(reused.objects.filter((o) => o.kind === 'FlowSchema').map((o) => o.metadata?.name).sort()).to.deep.equal([FLOW_SCHEMA_NAME, LEADER_ELECTION_FLOW_SCHEMA_NAME].sort());
  });

  it('where pods run and extra flags reach every workload; the per-node DaemonSet follows the driver, and the API server accepts it all', async function () {
    type Pod = { metadata: { annotations?: Record<string, string> }; spec: Record<string, unknown> & { containers: { name: string; args: string[] }[] } };
    type Workload = { kind: string; metadata: { name: string }; spec: { template: Pod } };
    const workloadsOf = (objects: KubeObject[]): Workload[] => objects.filter((o) => o.kind === 'Deployment' || o.kind === 'DaemonSet') as unknown as Workload[];
    const tolerations = [{ key: 'node-role.kubernetes.io/control-plane', operator: 'Exists', effect: 'NoSchedule' }];
    const affinity = { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'storage-ops', operator: 'In', values: ['true'] }] }] } } };
    const chosen = {
      nodeSelector: { 'kubernetes.io/arch': 'amd64' },
      tolerations,
      affinity,
      priorityClassName: 'system-cluster-critical',
      podAnnotations: { 'example.com/team': 'storage' },
      extraArgs: ['--kube-api-qps=50', '--shutdown-timeout=60s'],
      terminationGracePeriodSeconds: 70,
    };
    const daemonSet = { nodeSelector: { 'storage.example.com/plugin': 'true' }, tolerations: [{ key: 'storage', operator: 'Exists' }] };
    const cases: { allInOne: boolean; values: object }[] = [
      { allInOne: false, values: { ...everyLoop, ...chosen } },
      { allInOne: true, values: { ...everyLoopAllInOne, ...chosen, controllers: { ...everyLoopAllInOne.controllers, capacity: { enabled: true, perNode: true, daemonSet } } } },
    ];
    for (const { allInOne, values } of cases) {
      const { text, objects } = await template(values);
      const workloads = workloadsOf(objects);
      expect(workloads.length).to.be.at.least(2);
      for (const w of workloads) {
        const pod = w.spec.template;
        expect(pod.metadata.annotations, w.metadata.name).to.deep.equal(chosen.podAnnotations);
        expect(pod.spec.priorityClassName, w.metadata.name).to.equal('system-cluster-critical');
        expect(pod.spec.terminationGracePeriodSeconds, w.metadata.name).to.equal(70);
        const manager = pod.spec.containers.find((c) => c.name === 'manager')!;
        expect(manager.args.slice(-2), w.metadata.name).to.deep.equal(chosen.extraArgs);
        if (w.kind === 'DaemonSet') {
          expect(pod.spec.nodeSelector).to.deep.equal({ 'kubernetes.io/os': 'linux', ...daemonSet.nodeSelector });
          expect(pod.spec.tolerations).to.deep.equal(daemonSet.tolerations);
          expect(pod.spec.affinity).to.equal(undefined);
        } else {
          // Helm merges maps: the default kubernetes.io/os stays beside the chosen key.
          expect(pod.spec.nodeSelector, w.metadata.name).to.deep.equal({ 'kubernetes.io/os': 'linux', ...chosen.nodeSelector });
          expect(pod.spec.tolerations, w.metadata.name).to.deep.equal(tolerations);
          expect(pod.spec.affinity, w.metadata.name).to.deep.equal(affinity);
        }
      }
      expect(workloads.some((w) => w.kind === 'DaemonSet')).to.equal(allInOne);
      await expectDryRunAccepts(text, `helm-scheduling-${allInOne ? 'all-in-one' : 'each'}`);
    }
    // Values YAML would read as numbers or booleans stay strings; values an older release lacks
    // (helm upgrade --reuse-values) fall back to the defaults instead of an empty grace period.
    const typed = workloadsOf((await template({ ...everyLoopAllInOne, priorityClassName: 1000, podAnnotations: { 'example.com/on': true, 'example.com/n': 1 }, terminationGracePeriodSeconds: null, controllers: { ...everyLoopAllInOne.controllers, capacity: { enabled: true, perNode: true, daemonSet: null } } })).objects);
    for (const w of typed) {
      expect(w.spec.template.spec.priorityClassName, w.metadata.name).to.equal('1000');
      expect(w.spec.template.metadata.annotations, w.metadata.name).to.deep.equal({ 'example.com/on': 'true', 'example.com/n': '1' });
      expect(w.spec.template.spec.terminationGracePeriodSeconds, w.metadata.name).to.equal(40);
    }
    // The defaults: Linux nodes, no priority class, no annotations, no extra flags; the DaemonSet
    // tolerates every taint, as a driver's node plugin does.
    const defaults = workloadsOf((await template(everyLoopAllInOne)).objects);
    for (const w of defaults) {
      expect(w.spec.template.spec.nodeSelector).to.deep.equal({ 'kubernetes.io/os': 'linux' });
      expect(w.spec.template.spec).to.not.have.any.keys('priorityClassName', 'affinity');
      expect(w.spec.template.metadata.annotations).to.equal(undefined);
      expect(w.spec.template.spec.tolerations).to.deep.equal(w.kind === 'DaemonSet' ? [{ operator: 'Exists' }] : undefined);
    }
  });
});

import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { repoRoot } from '@topovol/testing';
import { csiDriverPlaceholder, gracePeriodSeconds, HEALTH_PORT, MANAGER_IMAGE, managerArgs, managerWorkload, METRICS_PORT } from '../../src/index.js';
import { MANAGER_FLAGS, parseManagerFlags } from '@topovol/shared';

interface Container {
  name: string;
  image: string;
  args: string[];
  env: { name: string; valueFrom?: { fieldRef?: { fieldPath: string } } }[];
  ports: { name: string; containerPort: number }[];
  livenessProbe: { httpGet: { path: string; port: string } };
  readinessProbe: { httpGet: { path: string; port: string } };
  resources: { requests: Record<string, string>; limits: Record<string, string> };
  securityContext: Record<string, unknown>;
}
interface PodSpec {
  serviceAccountName: string;
  nodeSelector?: Record<string, string>;
  tolerations?: { operator?: string; key?: string; effect?: string }[];
  securityContext: Record<string, unknown>;
  containers: Container[];
}
interface Workload {
  kind: string;
  spec: { replicas?: number; selector: { matchLabels: Record<string, string> }; template: { metadata: { labels: Record<string, string> }; spec: PodSpec } };
}

describe('manifests: manager workloads (config/manager)', function () {
  const deployment = managerWorkload({ kind: 'Deployment', name: 'topovol-pv-binder', component: 'pv-binder', serviceAccountName: 'topovol-pv-binder', controllers: 'pv-binder', leaderElect: true }) as unknown as Workload;
  const pod = deployment.spec.template.spec;
  const manager = pod.containers[0]!;

  it('runs 2 replicas under the loop\'s ServiceAccount, selector matching the template', function () {
    expect(deployment.spec.replicas).to.equal(2);
    expect(pod.serviceAccountName).to.equal('topovol-pv-binder');
    expect(deployment.spec.template.metadata.labels).to.deep.include(deployment.spec.selector.matchLabels);
  });

  it('passes args the manager accepts, with leader election in the pod namespace', function () {
    expect(manager.image).to.equal(MANAGER_IMAGE);
    expect(manager.args).to.include.members(['--controllers=pv-binder', '--leader-elect=true', '--leader-elect-namespace=$(NAMESPACE)']);
    const opts = parseManagerFlags(manager.args.map((a) => a.replace('$(NAMESPACE)', 'topovol-system')));
    expect(opts).to.deep.include({ controllers: ['pv-binder'], leaderElect: true, leaderElectNamespace: 'topovol-system', metricsBindAddress: `:${METRICS_PORT}`, healthProbeBindAddress: `:${HEALTH_PORT}` });
    expect(MANAGER_FLAGS.find((f) => f.name === 'metrics-bind-address')!.default).to.equal(`:${METRICS_PORT}`);
  });

  it('gets POD_NAME, NAMESPACE and NODE_NAME from the downward API', function () {
    const env = Object.fromEntries(manager.env.map((e) => [e.name, e.valueFrom?.fieldRef?.fieldPath]));
    expect(env).to.deep.equal({ POD_NAME: 'metadata.name', NAMESPACE: 'metadata.namespace', NODE_NAME: 'spec.nodeName' });
  });

  it('probes /healthz and /readyz on the health port and names the metrics port "metrics"', function () {
    expect(manager.ports).to.deep.include.members([{ name: 'metrics', containerPort: METRICS_PORT, protocol: 'TCP' }, { name: 'health', containerPort: HEALTH_PORT, protocol: 'TCP' }]);
    expect(manager.livenessProbe.httpGet).to.deep.equal({ path: '/healthz', port: 'health' });
    expect(manager.readinessProbe.httpGet).to.deep.equal({ path: '/readyz', port: 'health' });
  });

  it('meets the restricted Pod Security Standard and sets requests and limits', function () {
    expect(pod.securityContext).to.deep.equal({ runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } });
    expect(manager.securityContext).to.deep.include({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, runAsNonRoot: true, capabilities: { drop: ['ALL'] }, seccompProfile: { type: 'RuntimeDefault' } });
    expect(manager.resources.requests).to.have.keys('cpu', 'memory');
    expect(manager.resources.limits).to.have.keys('cpu', 'memory');
  });

  it('gives every pod longer to stop than the manager takes: its --shutdown-timeout, 5 s for Events and the Lease, and a margin', function () {
    const grace = (args?: string[]): number => {
      const w = managerWorkload({ kind: 'Deployment', name: 'x', component: 'pv-binder', serviceAccountName: 'sa', controllers: 'pv-binder', leaderElect: true, args }) as unknown as { spec: { template: { spec: { terminationGracePeriodSeconds: number } } } };
      return w.spec.template.spec.terminationGracePeriodSeconds;
    };
    // manager.ts exits at --shutdown-timeout + 5 s whatever is still running.
    expect(grace()).to.be.above(30 + 5);
    expect(grace(['--shutdown-timeout=2m'])).to.be.above(120 + 5);
    expect(grace(['--shutdown-timeout=90s', '--shutdown-timeout=45s'])).to.equal(gracePeriodSeconds(['--shutdown-timeout=45s'])).and.above(45 + 5);
    // The flag parser's other spelling, and nothing after "--".
    expect(gracePeriodSeconds(['--shutdown-timeout', '1m30s'])).to.be.above(90 + 5);
    expect(gracePeriodSeconds(['--', '--shutdown-timeout=5m'])).to.equal(gracePeriodSeconds([]));
  });

  it("leaves the binder twice its measured peak memory at 10,000 volumes, claims and pods (a limit below it is a crash loop in such a cluster)", function () {
    // hack/bench/results/pv-binder-pods-latest.json: the record behind docs/benchmarks.md's "Memory with pods cached".
    const record = JSON.parse(readFileSync(path.join(repoRoot(), 'hack/bench/results/pv-binder-pods-latest.json'), 'utf8')) as { runs: { contender: string; n: number; pods: number; binder: { peakRssMiB: number } }[] };
    const peaks = record.runs.filter((r) => r.contender === 'topovol' && r.n >= 10_000 && r.pods >= r.n).map((r) => r.binder.peakRssMiB);
    expect(peaks, 'recorded Topovol runs').to.not.be.empty;
    const limit = /^(\d+)(Mi|Gi)$/.exec(manager.resources.limits.memory ?? '');
    expect(limit, 'memory limit in Mi or Gi').to.not.equal(null);
    const limitMiB = Number(limit![1]) * (limit![2] === 'Gi' ? 1024 : 1);
    expect(limitMiB).to.be.at.least(2 * Math.max(...peaks));
  });

  it('per-node DaemonSet: no replicas, no leader election, the node name from the downward API', function () {
    const ds = managerWorkload({
      kind: 'DaemonSet',
      name: 'topovol-capacity-node',
      component: 'capacity',
      serviceAccountName: 'topovol-capacity',
      controllers: 'capacity',
      leaderElect: false,
      args: ['--capacity-node-name=$(NODE_NAME)'],
      sidecars: [csiDriverPlaceholder('csi-node-driver', [])],
    }) as unknown as Workload;
    expect(ds.spec.replicas).to.equal(undefined);
    const [mgr, driver] = ds.spec.template.spec.containers;
    expect(mgr!.args).to.include.members(['--leader-elect=false', '--capacity-node-name=$(NODE_NAME)']);
    expect(mgr!.args.some((a) => a.startsWith('--leader-elect-namespace'))).to.equal(false);
    expect(driver!.name).to.equal('csi-node-driver');
    // It runs where the driver's node plugin runs: node plugins tolerate every taint, and a node
    // left without the instance never has its capacity published.
    expect(ds.spec.template.spec.tolerations).to.deep.equal([{ operator: 'Exists' }]);
    expect(ds.spec.template.spec.nodeSelector).to.deep.equal({ 'kubernetes.io/os': 'linux' });
  });

  it('runs on Linux nodes only (the image is built for Linux), tolerating no taint of its own choosing', function () {
    expect(pod.nodeSelector).to.deep.equal({ 'kubernetes.io/os': 'linux' });
    expect(pod.tolerations).to.equal(undefined);
  });

  it('managerArgs lists the common flags first, then the loop\'s own', function () {
    expect(managerArgs({ controllers: 'capacity', leaderElect: false, args: ['--csi-address=/csi/csi.sock'] })).to.deep.equal([
      '--controllers=capacity',
      '--leader-elect=false',
      '--metrics-bind-address=:8443',
      '--health-probe-bind-address=:8081',
      '--csi-address=/csi/csi.sock',
    ]);
  });
});

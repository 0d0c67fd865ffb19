import { pathToFileURL } from 'node:url';
import path from 'node:path';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { expect } from 'chai';
import { Resources, resolveControllers } from '@topovol/shared';
import type { ControllerDescriptor, KubeClient, KubeObject, PersistentVolume, PersistentVolumeClaim } from '@topovol/shared';
import { INSTALL_NAMESPACE, mergeRules, serviceAccountUser } from '../../../src/index.js';
import { controlPlaneBinaries, createTestNamespace, httpGet, installCrds, eventually, freePort, ManagedProcess, repoRoot, SERVICE_ACCOUNT_GROUPS, sharedControlPlane } from '@topovol/testing';
import type { ControlPlane } from '@topovol/testing';
import { yamlFiles } from '@topovol/testing';
import { loadManifests } from '@topovol/testing';
import { expandKubeletVars, workloadFromFile } from '@topovol/testing';
import { impersonatingKubeconfig, kubectl } from './kubectl.js';
import { createWorkloadPod, startCsiTestDriver } from './workload-pod.js';

const CSI_DRIVER_CAPACITIES = { group: 'topovol.io', version: 'v1alpha1', plural: 'csidrivercapacities', kind: 'CSIDriverCapacity', namespaced: false };
const SA_GROUPS = [...SERVICE_ACCOUNT_GROUPS];

interface Lease extends KubeObject {
  spec?: { holderIdentity?: string };
}
interface AccessReview {
  status?: { allowed: boolean; reason?: string };
}

async function canI(client: KubeClient, group: string, resource: string, verb: string, namespace?: string, name?: string): Promise<boolean> {
  const [res, sub] = resource.split('/');
  const review = await client.request<AccessReview>('POST', '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews', {
    body: {
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SelfSubjectAccessReview',
      spec: { resourceAttributes: { group, resource: res, subresource: sub ?? '', verb, namespace: namespace ?? '', name: name ?? '' } },
    },
  });
  return review.status?.allowed === true;
}

// The kustomize install is accepted by the real API server (with the
// pinned kubectl, as users apply it), and the generated RBAC is enough for the manager, run with
// config/manager's exact args as the ServiceAccount the Deployment names, and not more.
describe('config/ install against the real kube-apiserver', function () {
  this.timeout(300_000);
  let cp: ControlPlane;
  let admin: KubeClient;
  let kubectlBin: string;
  let descriptors: ControllerDescriptor[];
  const root = repoRoot();
  const run = (...args: string[]): ReturnType<typeof kubectl> => kubectl(kubectlBin, cp, args, root);

  before(async function () {
    cp = await sharedControlPlane();
    admin = cp.adminClient();
    kubectlBin = (await controlPlaneBinaries(['kubectl'])).kubectl;
    // The list the binary and hack/generate.mjs share (plain JS at the repository root).
    ({ descriptors } = (await import(pathToFileURL(path.join(root, 'bin', 'descriptors.js')).href)) as { descriptors: ControllerDescriptor[] });
    // Server-side dry run cannot create the namespace its namespaced objects go to; apply it first
    // (the install's own Namespace object, with its Pod Security labels).
    const ns = await run('apply', '--server-side', '-f', 'config/manager/namespace.yaml');
    expect(ns.code, ns.stderr).to.equal(0);
  });

  const overlays = ['config/default', 'config/default/all-in-one', 'config/default/without-pv-binder', 'config/manager/zonal-pv-upgrade', 'config/manager/rollback', 'config/manager/capacity-sidecar', 'config/manager/capacity-per-node'];
  for (const overlay of overlays) {
    it(`kubectl apply -k ${overlay} --server-side --dry-run=server succeeds without Pod Security warnings`, async function () {
      const res = await run('apply', '-k', overlay, '--server-side', '--dry-run=server');
      expect(res.code, res.stderr).to.equal(0);
      expect(res.stderr, 'warnings').to.not.match(/warning/i);
      const rendered = await run('kustomize', overlay);
      const objects = rendered.stdout.split('\n---\n').length;
      expect(res.stdout.trim().split('\n'), res.stdout).to.have.length(objects);
      for (const line of res.stdout.trim().split('\n')) expect(line).to.match(/serverside-applied \(server dry run\)$/);
    });
  }

  it('config/default/without-pv-binder (a control plane whose upstream binder keeps running) runs no pv-binder, and the loops that work next to it', async function () {
    const rendered = await run('kustomize', 'config/default/without-pv-binder');
    expect(rendered.code, rendered.stderr).to.equal(0);
    const objects = loadManifests(rendered.stdout);
    // Nothing of pv-binder: no workload, and no ServiceAccount keeping its rights.
    expect(objects.filter((o) => String(o.metadata?.name).includes('pv-binder')).map((o) => `${String(o.kind)}/${String(o.metadata?.name)}`)).to.deep.equal([]);
    const workloads = objects
      .filter((o) => o.kind === 'Deployment' || o.kind === 'PodDisruptionBudget')
      .map((o) => `${String(o.kind)}/${String(o.metadata?.name)}`)
      .sort();
    expect(workloads).to.deep.equal(['Deployment/topovol-rollback', 'Deployment/topovol-zonal-pv-upgrade', 'PodDisruptionBudget/topovol-rollback', 'PodDisruptionBudget/topovol-zonal-pv-upgrade']);
  });

  it('every sample in config/samples is accepted (kubectl apply -R --server-side --dry-run=server)', async function () {
    await installCrds(admin);
    const res = await run('apply', '-R', '-f', 'config/samples', '--server-side', '--dry-run=server');
    expect(res.code, res.stderr).to.equal(0);
    const objects = yamlFiles(path.join(root, 'config', 'samples')).flatMap((f) => loadManifests(readFileSync(f, 'utf8')));
    expect(res.stdout.trim().split('\n'), res.stdout).to.have.length(objects.length);
  });

  // A corpus of invalid custom resources (packages/manifests/test/fixtures/invalid-resources): each file
  // says what kubectl must report ("# expect:"), and whether it is a status write ("# subresource:").
  describe('invalid custom resources are rejected by the CRD schema with a clear message', function () {
    const dir = path.join(root, 'packages', 'manifests', 'test', 'fixtures', 'invalid-resources');
    before(async function () {
      await installCrds(admin);
      const base = { apiVersion: 'topovol.io/v1alpha1', kind: 'CSIDriverCapacity' };
      await admin.create(CSI_DRIVER_CAPACITIES, { ...base, metadata: { name: 'invalid-status.csi.topovol.test' }, spec: { driverName: 'invalid-status.csi.topovol.test' } }).catch(() => undefined);
    });
    for (const file of readdirSync(dir).filter((f) => f.endsWith('.yaml')).sort()) {
      it(file, async function () {
        const text = readFileSync(path.join(dir, file), 'utf8');
        const want = /^# expect: (.*)$/m.exec(text)?.[1];
        const sub = /^# subresource: (.*)$/m.exec(text)?.[1];
        expect(want, `${file} has no "# expect:" line`).to.be.a('string');
        const res = await run('apply', '--server-side', '--dry-run=server', '-f', path.join(dir, file), ...(sub ? [`--subresource=${sub}`] : []));
        expect(res.code, res.stdout).to.not.equal(0);
        expect(res.stderr).to.contain(want!);
      });
    }
  });

  it('control: the install namespace does warn about a workload that is not restricted', async function () {
    const file = path.join(cp.dir, 'unrestricted-deployment.yaml');
    writeFileSync(
      file,
      JSON.stringify({
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'unrestricted', namespace: INSTALL_NAMESPACE },
        spec: { selector: { matchLabels: { app: 'x' } }, template: { metadata: { labels: { app: 'x' } }, spec: { containers: [{ name: 'c', image: 'busybox' }] } } },
      }),
    );
    const res = await run('apply', '-f', file, '--server-side', '--dry-run=server');
    expect(res.code, res.stderr).to.equal(0);
    expect(res.stderr).to.match(/warning: .*violate PodSecurity "restricted/i);
  });

  describe('with the generated RBAC applied', function () {
    const SCRAPER = 'topovol-test-scraper';
    let scraperToken: string;
    before(async function () {
      // The capacity workloads write CSIDriverCapacity objects (config/crd, part of config/default).
      await installCrds(admin);
      for (const dir of ['config/rbac', 'config/rbac/all-in-one']) {
        const res = await run('apply', '-k', dir, '--server-side');
        expect(res.code, res.stderr).to.equal(0);
      }
      // A scraper as config/prometheus/service-monitor.yaml's comment says to bind one.
      await admin.create(Resources.serviceAccounts, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: SCRAPER, namespace: INSTALL_NAMESPACE } }).catch(() => undefined);
      const bound = await run('create', 'clusterrolebinding', SCRAPER, '--clusterrole=topovol-metrics-reader', `--serviceaccount=${INSTALL_NAMESPACE}:${SCRAPER}`);
      expect(bound.code, bound.stderr).to.equal(0);
      scraperToken = await cp.serviceAccountToken(INSTALL_NAMESPACE, SCRAPER);
    });
    after(async function () {
      await admin.delete(Resources.clusterRoleBindings, SCRAPER).catch(() => undefined);
    });

    it('each ServiceAccount may do exactly what its descriptor declares, and the all-in-one one all of it but capacity (never run there)', async function () {
      for (const d of descriptors) {
        for (const sa of [`topovol-${d.name}`, ...(d.name === 'capacity' ? [] : ['topovol-controller-manager'])]) {
          const as = cp.clientAs(serviceAccountUser(sa), SA_GROUPS);
          for (const rule of mergeRules(d.rbac ?? [], d.name)) {
            for (const group of rule.apiGroups)
              for (const resource of rule.resources)
                for (const verb of rule.verbs) expect(await canI(as, group, resource, verb), `${sa}: ${verb} ${group}/${resource}`).to.equal(true);
          }
          for (const verb of ['get', 'update']) expect(await canI(as, 'coordination.k8s.io', 'leases', verb, INSTALL_NAMESPACE, `topovol-${d.name}`), `${sa}: ${verb} its lease`).to.equal(true);
          // Namespaced rules: in the install namespace, and nowhere else.
          for (const rule of mergeRules(d.namespacedRbac ?? [], d.name)) {
            for (const group of rule.apiGroups)
              for (const resource of rule.resources)
                for (const verb of rule.verbs) {
                  expect(await canI(as, group, resource, verb, INSTALL_NAMESPACE), `${sa}: ${verb} ${group}/${resource} in ${INSTALL_NAMESPACE}`).to.equal(true);
                  expect(await canI(as, group, resource, verb, 'default'), `${sa}: ${verb} ${group}/${resource} in default`).to.equal(false);
                  expect(await canI(as, group, resource, verb), `${sa}: ${verb} ${group}/${resource} in every namespace`).to.equal(false);
                }
          }
        }
      }
    });

    it('grants nothing beyond that: no secrets, no other loop\'s Lease, no leases elsewhere', async function () {
      const binder = cp.clientAs(serviceAccountUser('topovol-pv-binder'), SA_GROUPS);
      expect(await canI(binder, '', 'secrets', 'get', INSTALL_NAMESPACE)).to.equal(false);
      expect(await canI(binder, '', 'persistentvolumeclaims', 'delete', 'default')).to.equal(false);
      expect(await canI(binder, 'coordination.k8s.io', 'leases', 'update', INSTALL_NAMESPACE, 'topovol-rollback')).to.equal(false);
      expect(await canI(binder, 'coordination.k8s.io', 'leases', 'create', 'kube-system')).to.equal(false);
      const zonal = cp.clientAs(serviceAccountUser('topovol-zonal-pv-upgrade'), SA_GROUPS);
      expect(await canI(zonal, '', 'persistentvolumes', 'update')).to.equal(false);
      // Capacity writes CSIStorageCapacity objects in its own namespace only (as external-provisioner's
      // Role): not another driver's elsewhere, which kube-scheduler would then find missing; and it
      // reads its own pod and owners, not other namespaces' pods. It still sees every namespace's
      // objects, to report other publishers of its driver.
      const capacity = cp.clientAs(serviceAccountUser('topovol-capacity'), SA_GROUPS);
      for (const verb of ['create', 'update', 'delete']) expect(await canI(capacity, 'storage.k8s.io', 'csistoragecapacities', verb, 'kube-system'), `${verb} csistoragecapacities in kube-system`).to.equal(false);
      expect(await canI(capacity, '', 'pods', 'get', 'default')).to.equal(false);
      expect(await canI(capacity, 'apps', 'deployments', 'get', 'default')).to.equal(false);
      expect(await canI(capacity, 'storage.k8s.io', 'csistoragecapacities', 'list')).to.equal(true);
      // The all-in-one process never runs capacity (it needs its driver's socket), so its identity has none of capacity's rights.
      const allInOne = cp.clientAs(serviceAccountUser('topovol-controller-manager'), SA_GROUPS);
      expect(await canI(allInOne, 'storage.k8s.io', 'csistoragecapacities', 'create', INSTALL_NAMESPACE)).to.equal(false);
      expect(await canI(allInOne, 'topovol.io', 'csidrivercapacities', 'create')).to.equal(false);
      expect(await canI(allInOne, 'coordination.k8s.io', 'leases', 'update', INSTALL_NAMESPACE, 'topovol-capacity')).to.equal(false);
    });

    // Every config/manager Deployment that needs no CSI driver, run as the real binary with its
    // exact args (the kubelet's $(VAR) expansion done here), authenticated as its ServiceAccount.
    // Only the bind addresses change: the test machine runs many managers side by side.
    // The capacity workloads talk to the project's CSI test driver in place of the driver container.
    const cases: { file: string; bindsClaims: boolean; csi?: boolean }[] = [
      { file: 'config/manager/pv-binder.yaml', bindsClaims: true },
      { file: 'config/manager/zonal-pv-upgrade/deployment.yaml', bindsClaims: false },
      { file: 'config/manager/rollback/deployment.yaml', bindsClaims: false },
      { file: 'config/manager/capacity-sidecar/deployment.yaml', bindsClaims: false, csi: true },
      { file: 'config/manager/capacity-per-node/daemonset.yaml', bindsClaims: false, csi: true },
      { file: 'config/manager/all-in-one/deployment.yaml', bindsClaims: true },
    ];
    it('control: the same pv-binder args as a ServiceAccount without these bindings are refused, and the log says so', async function () {
      const w = workloadFromFile(path.join(root, 'config/manager/pv-binder.yaml'));
      const probePort = await freePort();
      const args = expandKubeletVars(w.args, { NAMESPACE: INSTALL_NAMESPACE }).map((a) =>
        a.startsWith('--metrics-bind-address=') ? '--metrics-bind-address=0' : a.startsWith('--health-probe-bind-address=') ? `--health-probe-bind-address=127.0.0.1:${probePort}` : a,
      );
      const kubeconfig = impersonatingKubeconfig(cp, serviceAccountUser('topovol-unbound'), path.join(cp.dir, 'topovol-unbound.kubeconfig'));
      const manager = new ManagedProcess({
        name: 'unbound-manager',
        command: process.execPath,
        args: [path.join(root, 'bin', 'topovol-controller-manager.js'), ...args],
        env: { ...process.env, KUBECONFIG: kubeconfig },
        logFile: path.join(cp.dir, 'unbound-manager.log'),
      });
      try {
        await eventually(() => expect(readFileSync(manager.logFile, 'utf8')).to.match(/forbidden/i), 30_000);
        const res = await fetch(`http://127.0.0.1:${probePort}/readyz`);
        expect(res.status).to.not.equal(200);
      } finally {
        await manager.stop();
      }
    });

    for (const c of cases) {
      it(`${c.file}: the manager runs its loops as its ServiceAccount without a single Forbidden`, async function () {
        const w = workloadFromFile(path.join(root, c.file));
        const ns = await createTestNamespace(admin, 'deploy-');
        // The pod the kubelet would run, with its owners, for --capacity-ownerref-level.
        const env = { NAMESPACE: INSTALL_NAMESPACE, POD_NAME: await createWorkloadPod(admin, root, c.file, ns), NODE_NAME: 'test-node' };
        const driver = c.csi ? await startCsiTestDriver(admin, cp, ns) : undefined;
        const probePort = await freePort();
        const metricsPort = await freePort();
        const args = expandKubeletVars(w.args, env).map((a) =>
          a.startsWith('--metrics-bind-address=')
            ? `--metrics-bind-address=127.0.0.1:${metricsPort}`
            : a.startsWith('--health-probe-bind-address=')
              ? `--health-probe-bind-address=127.0.0.1:${probePort}`
              : a.startsWith('--csi-address=') && driver
                ? `--csi-address=${driver.endpoint}`
                : a,
        );
        // Authenticated as the ServiceAccount with its own token, as in its pod (not impersonated).
        const kubeconfig = await cp.writeServiceAccountKubeconfig(INSTALL_NAMESPACE, w.serviceAccountName, path.join(cp.dir, `${ns}.kubeconfig`));
        // A fresh install: no Leases yet, so this identity creates its own (the Role's create rule).
        for (const d of descriptors) await admin.delete(Resources.leases, `topovol-${d.name}`, INSTALL_NAMESPACE).catch(() => undefined);
        const manager = new ManagedProcess({
          name: `${ns}-manager`,
          command: process.execPath,
          args: [path.join(root, 'bin', 'topovol-controller-manager.js'), ...args],
          env: { ...process.env, ...env, KUBECONFIG: kubeconfig },
          logFile: path.join(cp.dir, `${ns}-manager.log`),
        });
        try {
          const controllers = args.find((a) => a.startsWith('--controllers='))!.slice('--controllers='.length);
          const enabled = resolveControllers(
            controllers.split(','),
            descriptors.map((d) => d.name),
            descriptors.filter((d) => d.disabledByDefault).map((d) => d.name),
          );
          const leaderElect = !args.includes('--leader-elect=false');
          // Ready means every informer listed and watches as this identity, and leadership is healthy.
          await eventually(async () => {
            const res = await fetch(`http://127.0.0.1:${probePort}/readyz`);
            expect(res.status, manager.logTail(10)).to.equal(200);
          }, 90_000);
          for (const lease of leaderElect ? enabled.map((n) => `topovol-${n}`) : []) {
            await eventually(async () => {
              const l = await admin.get<Lease>(Resources.leases, lease, INSTALL_NAMESPACE);
              expect(l.spec?.holderIdentity ?? '', lease).to.match(/_/);
            }, 60_000);
          }
          // Objects for every loop to reconcile; a binder binds them (PV and claim writes, Events).
          {
            await admin.create<PersistentVolume>(Resources.persistentVolumes, {
              apiVersion: 'v1',
              kind: 'PersistentVolume',
              metadata: { name: `${ns}-pv` },
              spec: { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], storageClassName: `${ns}-none`, hostPath: { path: '/tmp/x' }, persistentVolumeReclaimPolicy: 'Retain' },
            });
            await admin.create<PersistentVolumeClaim>(Resources.persistentVolumeClaims, {
              apiVersion: 'v1',
              kind: 'PersistentVolumeClaim',
              metadata: { name: 'claim', namespace: ns },
              spec: { accessModes: ['ReadWriteOnce'], storageClassName: `${ns}-none`, resources: { requests: { storage: '1Gi' } } },
            });
          }
          if (c.bindsClaims) {
            await eventually(async () => {
              const pvc = await admin.get<PersistentVolumeClaim>(Resources.persistentVolumeClaims, 'claim', ns);
              expect(pvc.status?.phase, manager.logTail(10)).to.equal('Bound');
            }, 60_000);
          }
          // Each loop reconciled under this identity (metrics); the log is checked for refusals below.
          // The per-node writer's one reconcile lasts its lifetime: its written pool is the evidence.
          const perNode = args.some((a) => a.startsWith('--capacity-node-name='));
          const text = await eventually(async () => {
            // As shipped (--metrics-secure): HTTPS, the scraper's token reviewed by the API server as this
            // ServiceAccount (its system:auth-delegator binding).
            const scrape = await httpGet(`https://127.0.0.1:${metricsPort}/metrics`, { token: scraperToken });
            expect(scrape.status, scrape.body).to.equal(200);
            const body = scrape.body;
            if (perNode) expect(body).to.match(/^topovol_capacity_status_writes_total\{[^}]*operation="publish"[^}]*result="success"[^}]*\} [1-9]/m);
            else for (const n of enabled) expect(body, n).to.match(new RegExp(`^controller_runtime_reconcile_total\\{[^}]*controller="${n}"[^}]*\\} [1-9]`, 'm'));
            return body;
            // Per node, a failed first publish is tried again a poll interval later (60 s by default).
          }, perNode ? 100_000 : 30_000);
          // The generated reference lists every family a running manager exports (lazy ones included).
          const reference = readFileSync(path.join(root, 'docs', 'reference', 'metrics.md'), 'utf8');
          for (const [, family] of text.matchAll(/^# TYPE (\S+) /gm)) {
            if (/^(process|nodejs)_/.test(family!)) continue;
            expect(reference, `docs/reference/metrics.md lists ${family!}`).to.contain(`| \`${family!}\` |`);
          }
          expect(manager.running, manager.logTail(20)).to.equal(true);
        } finally {
          await manager.stop();
          await driver?.stop();
          await admin.delete(Resources.persistentVolumes, `${ns}-pv`).catch(() => undefined);
        }
        const log = readFileSync(manager.logFile, 'utf8');
        expect(log, 'the manager logged a Forbidden').to.not.match(/forbidden|\b403\b/i);
        if (!args.includes('--leader-elect=false')) expect(log).to.contain('became leader');
      });
    }
  });
});

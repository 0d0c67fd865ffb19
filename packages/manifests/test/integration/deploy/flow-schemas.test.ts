import { pathToFileURL } from 'node:url';
import path from 'node:path';
import { expect } from 'chai';
import { load } from 'js-yaml';
import type { ControllerDescriptor } from '@topovol/shared';
import { FLOW_SCHEMA_NAME, INSTALL_NAMESPACE, LEADER_ELECTION_FLOW_SCHEMA_NAME, managerServiceAccounts, serviceAccountUser } from '../../../src/index.js';
import { controlPlaneBinaries, eventually, httpRequest, repoRoot, SERVICE_ACCOUNT_GROUPS, sharedControlPlane } from '@topovol/testing';
import type { ControlPlane } from '@topovol/testing';
import { kubectl } from './kubectl.js';

interface Named {
  metadata: { uid: string };
  status?: { conditions?: { type: string; status: string }[] };
}

/** What API Priority and Fairness made of a request: the UIDs it names in its response headers. */
interface Classification {
  flowSchema: string;
  priorityLevel: string;
}

/** A request to classify, made with the ServiceAccount's own token; writes are dry runs. */
interface Probe {
  what: string;
  /** Which FlowSchema should take it: the Lease one or the one for everything else. */
  lease: boolean;
  method: string;
  path: (sa: string) => string;
  body?: (sa: string) => unknown;
  /** What RBAC must allow before it is sent (a refusal would fail the RBAC coverage check). */
  access?: (sa: string) => Record<string, string>;
}

const TENANT_SA = 'tenant-app';
const NS = INSTALL_NAMESPACE;

/** A Lease each ServiceAccount may read and update: its own, or for the all-in-one one, a loop's. */
const leaseOf = (sa: string): string => (sa === 'topovol-controller-manager' ? 'topovol-pv-binder' : sa);
const leases = `/apis/coordination.k8s.io/v1/namespaces/${NS}/leases`;
const leaseAccess = (verb: string, name = ''): Record<string, string> => ({ group: 'coordination.k8s.io', resource: 'leases', namespace: NS, verb, name });

const PROBES: readonly Probe[] = [
  { what: 'its Lease: get', lease: true, method: 'GET', path: (sa) => `${leases}/${leaseOf(sa)}`, access: (sa) => leaseAccess('get', leaseOf(sa)) },
  {
    what: 'a Lease: create (dry run)',
    lease: true,
    method: 'POST',
    path: () => `${leases}?dryRun=All`,
    body: (sa) => ({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: `${sa}-probe` } }),
    access: () => leaseAccess('create'),
  },
  {
    what: 'its Lease: update (dry run)',
    lease: true,
    method: 'PUT',
    path: (sa) => `${leases}/${leaseOf(sa)}?dryRun=All`,
    body: (sa) => ({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: leaseOf(sa) } }),
    access: (sa) => leaseAccess('update', leaseOf(sa)),
  },
  {
    what: 'an Event in the install namespace: create (dry run; namespaced)',
    lease: false,
    method: 'POST',
    path: () => `/api/v1/namespaces/${NS}/events?dryRun=All`,
    body: (sa) => ({
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name: `${sa}.probe`, namespace: NS },
      involvedObject: { apiVersion: 'v1', kind: 'ServiceAccount', namespace: NS, name: sa },
      reason: 'Probe',
      message: 'API Priority and Fairness probe',
      type: 'Normal',
      source: { component: 'flow-schemas-test' },
      firstTimestamp: new Date().toISOString(),
      lastTimestamp: new Date().toISOString(),
      count: 1,
    }),
    access: () => ({ group: '', resource: 'events', namespace: NS, verb: 'create' }),
  },
  // Every authenticated user may (system:basic-user).
  {
    what: 'a SelfSubjectReview (cluster-scoped)',
    lease: false,
    method: 'POST',
    path: () => '/apis/authentication.k8s.io/v1/selfsubjectreviews',
    body: () => ({ apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' }),
  },
  // Every authenticated user may (system:public-info-viewer).
  { what: 'GET /version (no resource)', lease: false, method: 'GET', path: () => '/version' },
];

// config/flowcontrol applied to the real kube-apiserver: the manager's ServiceAccounts, signed in
// with their own tokens as in their pods, are classified by the API server at
// kube-controller-manager's priority levels (workload-high; their Lease requests at
// leader-election), and nothing else in the namespace is.
describe('config/flowcontrol against the real kube-apiserver (API Priority and Fairness)', function () {
  this.timeout(300_000);
  let cp: ControlPlane;
  let kubectlBin: string;
  let accounts: string[];
  const root = repoRoot();
  const run = async (...args: string[]): Promise<string> => {
    const res = await kubectl(kubectlBin, cp, args, root);
    if (res.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${res.stderr}`);
    return res.stdout;
  };
  const uidOf = async (kind: string, name: string): Promise<string> => (JSON.parse(await run('get', kind, name, '-o', 'json')) as Named).metadata.uid;
  const tokens = new Map<string, string>();

  async function classify(sa: string, probe: Probe): Promise<Classification> {
    const token = tokens.get(sa) ?? (await cp.serviceAccountToken(NS, sa));
    tokens.set(sa, token);
    const res = await httpRequest(probe.method, `${cp.url}${probe.path(sa)}`, { token, body: probe.body?.(sa) });
    // 404: a Lease not there (yet); the request was classified and authorized all the same.
    expect(res.status, `${sa} ${probe.what}: ${res.body}`).to.be.oneOf([200, 201, 404]);
    return { flowSchema: String(res.headers['x-kubernetes-pf-flowschema-uid']), priorityLevel: String(res.headers['x-kubernetes-pf-prioritylevel-uid']) };
  }

  /** Waits until RBAC lets `sa` send every probe (asked as the admin, so nothing refused is logged as the ServiceAccount). */
  async function rbacReady(sa: string): Promise<void> {
    for (const probe of PROBES) {
      if (!probe.access) continue;
      const attrs = probe.access(sa);
      await eventually(async () => {
        const review = await cp.adminClient().request<{ status?: { allowed?: boolean } }>('POST', '/apis/authorization.k8s.io/v1/subjectaccessreviews', {
          body: { apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview', spec: { user: serviceAccountUser(sa), groups: [...SERVICE_ACCOUNT_GROUPS], resourceAttributes: attrs } },
        });
        expect(review.status?.allowed, `${sa}: ${probe.what}`).to.equal(true);
      }, 60_000, 250);
    }
  }

  async function removeFlowSchemas(): Promise<void> {
    await run('delete', 'flowschema', FLOW_SCHEMA_NAME, LEADER_ELECTION_FLOW_SCHEMA_NAME, '--ignore-not-found');
  }

  before(async function () {
    cp = await sharedControlPlane();
    kubectlBin = (await controlPlaneBinaries(['kubectl'])).kubectl;
    const { descriptors } = (await import(pathToFileURL(path.join(root, 'bin', 'descriptors.js')).href)) as { descriptors: ControllerDescriptor[] };
    accounts = managerServiceAccounts(descriptors);
    expect(accounts).to.include.members(['topovol-pv-binder', 'topovol-controller-manager']);
    await run('apply', '--server-side', '-f', 'config/manager/namespace.yaml');
    await run('apply', '--server-side', '-k', 'config/rbac');
    await run('apply', '--server-side', '-k', 'config/rbac/all-in-one');
    await run('delete', 'serviceaccount', TENANT_SA, '-n', INSTALL_NAMESPACE, '--ignore-not-found');
    await run('create', 'serviceaccount', TENANT_SA, '-n', INSTALL_NAMESPACE);
    for (const sa of accounts) await rbacReady(sa);
    await removeFlowSchemas();
  });

  after(async function () {
    await removeFlowSchemas();
    await run('delete', 'serviceaccount', TENANT_SA, '-n', INSTALL_NAMESPACE, '--ignore-not-found');
  });

  it('every config/default variant installs both FlowSchemas', async function () {
    for (const overlay of ['config/default', 'config/default/all-in-one', 'config/default/without-pv-binder']) {
      const names = (await run('kustomize', overlay))
        .split('\n---\n')
        .map((doc) => load(doc) as { kind?: string; metadata?: { name: string } })
        .filter((o) => o?.kind === 'FlowSchema')
        .map((o) => o.metadata!.name);
      expect(names.sort(), overlay).to.deep.equal([FLOW_SCHEMA_NAME, LEADER_ELECTION_FLOW_SCHEMA_NAME].sort());
    }
  });

  it("control: without them every request of the manager's ServiceAccounts is the service-accounts FlowSchema's (workload-low), as any tenant's", async function () {
    const expected = { flowSchema: await uidOf('flowschema', 'service-accounts'), priorityLevel: await uidOf('prioritylevelconfiguration', 'workload-low') };
    // The deletes before may still be on their way into the API server's classifier.
    await eventually(async () => expect(await classify(accounts[0]!, PROBES[0]!)).to.deep.equal(expected), 60_000, 250);
    for (const sa of accounts) for (const probe of PROBES) expect(await classify(sa, probe), `${sa}: ${probe.what}`).to.deep.equal(expected);
  });

  it('with them: Lease get, create and update at leader-election, every other request (namespaced, cluster-scoped, no resource) at workload-high, for every ServiceAccount of the install; a tenant in the namespace keeps workload-low', async function () {
    await run('apply', '--server-side', '-k', 'config/flowcontrol');
    for (const name of [FLOW_SCHEMA_NAME, LEADER_ELECTION_FLOW_SCHEMA_NAME]) {
      // Dangling=False: the priority level it names exists (the API server's suggested ones).
      await eventually(async () => {
        const fs = JSON.parse(await run('get', 'flowschema', name, '-o', 'json')) as Named;
        expect(fs.status?.conditions?.find((c) => c.type === 'Dangling')?.status, name).to.equal('False');
      }, 60_000, 250);
    }
    const leaderElection = { flowSchema: await uidOf('flowschema', LEADER_ELECTION_FLOW_SCHEMA_NAME), priorityLevel: await uidOf('prioritylevelconfiguration', 'leader-election') };
    const workloadHigh = { flowSchema: await uidOf('flowschema', FLOW_SCHEMA_NAME), priorityLevel: await uidOf('prioritylevelconfiguration', 'workload-high') };
    const workloadLow = { flowSchema: await uidOf('flowschema', 'service-accounts'), priorityLevel: await uidOf('prioritylevelconfiguration', 'workload-low') };

    await eventually(async () => expect(await classify(accounts[0]!, PROBES[0]!)).to.deep.equal(leaderElection), 60_000, 250);
    for (const sa of accounts) {
      for (const probe of PROBES) expect(await classify(sa, probe), `${sa}: ${probe.what}`).to.deep.equal(probe.lease ? leaderElection : workloadHigh);
    }
    for (const probe of PROBES.filter((p) => !p.access)) expect(await classify(TENANT_SA, probe), `another ServiceAccount in the namespace: ${probe.what}`).to.deep.equal(workloadLow);
  });
});

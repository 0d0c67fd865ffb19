import { pathToFileURL } from 'node:url';
import path from 'node:path';
import { expect } from 'chai';
import { load } from 'js-yaml';
import type { ControllerDescriptor } from '@topovol/shared';
import { FLOW_SCHEMA_NAME, INSTALL_NAMESPACE, LEADER_ELECTION_FLOW_SCHEMA_NAME, managerServiceAccounts } from '../../../src/index.js';
import { controlPlaneBinaries, eventually, httpGet, repoRoot, sharedControlPlane } from '@topovol/testing';
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

const TENANT_SA = 'tenant-app';

// config/flowcontrol applied to the real kube-apiserver: the manager's ServiceAccounts, signed in
// with their own tokens as in their pods, are classified by the API server at
// kube-controller-manager's priority levels (workload-high; Lease renewals at leader-election),
// and nothing else in the namespace is.
describe('config/flowcontrol against the real kube-apiserver (API Priority and Fairness)', function () {
  this.timeout(300_000);
  let cp: ControlPlane;
  let kubectlBin: string;
  let descriptors: ControllerDescriptor[];
  const root = repoRoot();
  const run = async (...args: string[]): Promise<string> => {
    const res = await kubectl(kubectlBin, cp, args, root);
    if (res.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${res.stderr}`);
    return res.stdout;
  };
  const uidOf = async (kind: string, name: string): Promise<string> => (JSON.parse(await run('get', kind, name, '-o', 'json')) as Named).metadata.uid;
  const tokens = new Map<string, string>();

  async function classify(sa: string, urlPath: string): Promise<Classification> {
    const token = tokens.get(sa) ?? (await cp.serviceAccountToken(INSTALL_NAMESPACE, sa));
    tokens.set(sa, token);
    const res = await httpGet(`${cp.url}${urlPath}`, { token });
    // A refusal here would also fail the RBAC coverage check: ask only what each identity may.
    expect(res.status, `${sa} GET ${urlPath}: ${res.body}`).to.be.oneOf([200, 404]);
    return { flowSchema: String(res.headers['x-kubernetes-pf-flowschema-uid']), priorityLevel: String(res.headers['x-kubernetes-pf-prioritylevel-uid']) };
  }

  /** A Lease each ServiceAccount may read: its own, or for the all-in-one one, a loop's. */
  const leaseOf = (sa: string): string => (sa.startsWith('topovol-controller-manager') ? 'topovol-pv-binder' : sa);
  const leasePath = (sa: string): string => `/apis/coordination.k8s.io/v1/namespaces/${INSTALL_NAMESPACE}/leases/${leaseOf(sa)}`;

  async function removeFlowSchemas(): Promise<void> {
    await run('delete', 'flowschema', FLOW_SCHEMA_NAME, LEADER_ELECTION_FLOW_SCHEMA_NAME, '--ignore-not-found');
  }

  before(async function () {
    cp = await sharedControlPlane();
    kubectlBin = (await controlPlaneBinaries(['kubectl'])).kubectl;
    ({ descriptors } = (await import(pathToFileURL(path.join(root, 'bin', 'descriptors.js')).href)) as { descriptors: ControllerDescriptor[] });
    await run('apply', '--server-side', '-f', 'config/manager/namespace.yaml');
    await run('apply', '--server-side', '-k', 'config/rbac');
    await run('apply', '--server-side', '-k', 'config/rbac/all-in-one');
    await run('delete', 'serviceaccount', TENANT_SA, '-n', INSTALL_NAMESPACE, '--ignore-not-found');
    await run('create', 'serviceaccount', TENANT_SA, '-n', INSTALL_NAMESPACE);
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

  it("control: without them the manager's requests are the service-accounts FlowSchema's (workload-low), as any tenant's", async function () {
    const expected = { flowSchema: await uidOf('flowschema', 'service-accounts'), priorityLevel: await uidOf('prioritylevelconfiguration', 'workload-low') };
    // The deletes before may still be on their way into the API server's classifier.
    await eventually(async () => expect(await classify('topovol-pv-binder', leasePath('topovol-pv-binder'))).to.deep.equal(expected), 60_000, 250);
    expect(await classify('topovol-pv-binder', '/version')).to.deep.equal(expected);
  });

  it('with them: Lease reads at leader-election, every other request at workload-high, for every ServiceAccount of the install; a tenant in the namespace keeps workload-low', async function () {
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

    const accounts = managerServiceAccounts(descriptors);
    expect(accounts).to.include.members(['topovol-pv-binder', 'topovol-controller-manager']);
    await eventually(async () => expect(await classify(accounts[0]!, leasePath(accounts[0]!))).to.deep.equal(leaderElection), 60_000, 250);
    for (const sa of accounts) {
      expect(await classify(sa, leasePath(sa)), `${sa}: its Lease`).to.deep.equal(leaderElection);
      expect(await classify(sa, '/version'), `${sa}: GET /version`).to.deep.equal(workloadHigh);
    }
    expect(await classify(TENANT_SA, '/version'), 'another ServiceAccount in the namespace').to.deep.equal(workloadLow);
  });
});

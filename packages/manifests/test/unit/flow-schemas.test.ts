import { expect } from 'chai';
import { loadAll } from 'js-yaml';
import { MANAGER_FLAGS } from '@topovol/shared';
import {
  FLOW_SCHEMA_MATCHING_PRECEDENCE,
  FLOW_SCHEMA_NAME,
  INSTALL_NAMESPACE,
  LEADER_ELECTION_FLOW_SCHEMA_NAME,
  LEADER_ELECTION_MATCHING_PRECEDENCE,
  renderHelmChart,
  renderInstallFiles,
} from '../../src/index.js';
import { fakeLoops } from './fake-descriptors.js';

interface Doc {
  kind: string;
  metadata: { name: string; namespace?: string };
  rules?: { apiGroups: string[]; resources: string[]; verbs: string[] }[];
  spec?: {
    matchingPrecedence: number;
    priorityLevelConfiguration: { name: string };
    distinguisherMethod: { type: string };
    rules: { subjects: { kind: string; serviceAccount: { name: string; namespace: string } }[]; resourceRules: { resources: string[]; namespaces: string[]; verbs: string[] }[] }[];
  };
}

// The API server's suggested FlowSchemas a ServiceAccount outside kube-system matches otherwise
// (staging/src/k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap/default.go).
const SERVICE_ACCOUNTS_PRECEDENCE = 9000;

describe('manifests: API Priority and Fairness (config/flowcontrol)', function () {
  const descriptors = fakeLoops();
  const files = renderInstallFiles({ descriptors, managerFlags: MANAGER_FLAGS, metrics: [], capacityController: 'capacity' });
  const docs = Object.entries(files)
    .filter(([p]) => p.endsWith('.yaml'))
    .flatMap(([, text]) => loadAll(text) as Doc[])
    .filter((d) => d?.kind);
  const schemas = (loadAll(files['config/flowcontrol/flow-schemas.yaml']!) as Doc[]).filter((d) => d?.kind === 'FlowSchema');
  const byName = (name: string): Doc => {
    const s = schemas.find((d) => d.metadata.name === name);
    if (!s) throw new Error(`no FlowSchema ${name}`);
    return s;
  };

  it('names, as subjects of both FlowSchemas, exactly the ServiceAccounts the rendered install creates', function () {
    const accounts = docs.filter((d) => d.kind === 'ServiceAccount').map((d) => `${d.metadata.namespace}/${d.metadata.name}`);
    expect(accounts).to.have.length.at.least(descriptors.length + 1);
    expect(schemas.map((s) => s.metadata.name).sort()).to.deep.equal([FLOW_SCHEMA_NAME, LEADER_ELECTION_FLOW_SCHEMA_NAME].sort());
    for (const s of schemas) {
      const subjects = s.spec!.rules.flatMap((r) => r.subjects);
      expect(subjects.map((x) => x.kind), s.metadata.name).to.satisfy((kinds: string[]) => kinds.every((k) => k === 'ServiceAccount'));
      const names = subjects.map((x) => `${x.serviceAccount.namespace}/${x.serviceAccount.name}`).sort();
      expect(names, s.metadata.name).to.deep.equal([...new Set(accounts)].sort());
    }
  });

  it("kube-controller-manager's priority levels, matched before service-accounts, Lease renewals before everything else", function () {
    const le = byName(LEADER_ELECTION_FLOW_SCHEMA_NAME).spec!;
    const all = byName(FLOW_SCHEMA_NAME).spec!;
    expect(le.priorityLevelConfiguration.name).to.equal('leader-election');
    expect(all.priorityLevelConfiguration.name).to.equal('workload-high');
    expect(le.matchingPrecedence).to.equal(LEADER_ELECTION_MATCHING_PRECEDENCE);
    expect(all.matchingPrecedence).to.equal(FLOW_SCHEMA_MATCHING_PRECEDENCE);
    // Lower matches first; the API server refuses 1 (exempt's) and above 10000.
    expect(le.matchingPrecedence).to.be.above(1).and.below(all.matchingPrecedence);
    expect(all.matchingPrecedence).to.be.below(SERVICE_ACCOUNTS_PRECEDENCE);
    // One flow per ServiceAccount: a loop (or a stolen token) cannot spread over the level's queues.
    for (const s of schemas) expect(s.spec!.distinguisherMethod.type, s.metadata.name).to.equal('ByUser');
  });

  it('the Lease rule takes the verbs the manager may use on its Leases, in the install namespace only', function () {
    const granted = new Set(
      docs
        .filter((d) => d.kind === 'Role')
        .flatMap((d) => d.rules ?? [])
        .filter((r) => r.apiGroups.includes('coordination.k8s.io') && r.resources.includes('leases'))
        .flatMap((r) => r.verbs),
    );
    const [rule] = byName(LEADER_ELECTION_FLOW_SCHEMA_NAME).spec!.rules[0]!.resourceRules;
    expect(rule!.resources).to.deep.equal(['leases']);
    expect(rule!.namespaces).to.deep.equal([INSTALL_NAMESPACE]);
    expect([...rule!.verbs].sort()).to.deep.equal([...granted].sort());
    // leader-elector.ts reads (get), creates and replaces (update) its Lease; nothing else.
    expect([...rule!.verbs].sort()).to.deep.equal(['create', 'get', 'update']);
  });

  it('the chart renders them unless flowSchemas.create is false, in the release namespace', function () {
    const chart = renderHelmChart({
      descriptors,
      capacityController: 'capacity',
      appVersion: '0.0.0',
      configFiles: {
        'config/crd/kustomization.yaml': 'resources: []\n',
        'config/admission/kustomization.yaml': 'resources: []\n',
        'config/prometheus/kustomization.yaml': 'resources: []\n',
      },
    });
    const template = chart['charts/topovol/templates/flowcontrol/flow-schemas.yaml'];
    expect(template).to.be.a('string');
    // Values of an older release (helm upgrade --reuse-values) have no flowSchemas key: still rendered.
    expect(template).to.contain('{{- if ne false (.Values.flowSchemas | default dict).create }}');
    expect(template).to.contain('namespace: {{ .Values.namespace.name | quote }}');
    expect(template).to.not.contain(INSTALL_NAMESPACE);
    expect(chart['charts/topovol/values.yaml']).to.match(/^flowSchemas:\n {2}create: true$/m);
  });
});

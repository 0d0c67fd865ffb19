import { expect } from 'chai';
import { load, loadAll } from 'js-yaml';
import path from 'node:path';
import { GENERATED_HEADER, renderInstallFiles } from '../../src/index.js';
import { MANAGER_FLAGS } from '@topovol/shared';
import { fakeLoops } from './fake-descriptors.js';

describe('manifests: the generated file set', function () {
  const descriptors = fakeLoops();
  const files = renderInstallFiles({ descriptors, managerFlags: MANAGER_FLAGS, metrics: [], capacityController: 'capacity' });

  it('marks every YAML file as generated and parses', function () {
    for (const [p, text] of Object.entries(files).filter(([p]) => p.endsWith('.yaml'))) {
      expect(text.startsWith(`# ${GENERATED_HEADER}`), p).to.equal(true);
      expect(() => loadAll(text), p).to.not.throw();
    }
  });

  it('every Deployment has a PodDisruptionBudget next to it: one of its pods evicted at a time, matching exactly its pods', function () {
    type Doc = { kind: string; metadata: { name: string; namespace: string }; spec: { selector: { matchLabels: Record<string, string> }; maxUnavailable?: number; unhealthyPodEvictionPolicy?: string; template?: { metadata: { labels: Record<string, string> } } } };
    let deployments = 0;
    for (const [p, text] of Object.entries(files).filter(([p]) => p.endsWith('.yaml'))) {
      const docs = loadAll(text) as Doc[];
      for (const d of docs.filter((x) => x?.kind === 'Deployment')) {
        deployments++;
        const pdb = docs.find((x) => x.kind === 'PodDisruptionBudget' && x.metadata.name === d.metadata.name);
        expect(pdb, `${p}: ${d.metadata.name}`).to.not.equal(undefined);
        expect(pdb!.metadata.namespace).to.equal(d.metadata.namespace);
        expect(pdb!.spec.maxUnavailable).to.equal(1);
        // Unready replicas (a loop waiting for its driver) must never block a drain.
        expect(pdb!.spec.unhealthyPodEvictionPolicy).to.equal('AlwaysAllow');
        expect(pdb!.spec.selector).to.deep.equal(d.spec.selector);
        for (const [k, v] of Object.entries(pdb!.spec.selector.matchLabels)) expect(d.spec.template!.metadata.labels[k], k).to.equal(v);
      }
    }
    expect(deployments).to.be.at.least(3);
  });

  it('every kustomization resource is a generated file or a directory with a kustomization', function () {
    const handWritten = new Set(['config/crd', 'config/admission']);
    for (const [p, text] of Object.entries(files).filter(([p]) => p.endsWith('kustomization.yaml'))) {
      const { resources } = load(text) as { resources: string[] };
      for (const r of resources) {
        const target = path.posix.normalize(path.posix.join(path.posix.dirname(p), r));
        const ok = target in files || `${target}/kustomization.yaml` in files || handWritten.has(target);
        expect(ok, `${p} → ${r}`).to.equal(true);
      }
    }
  });

  it('a Deployment per loop except the one next to a CSI driver, which gets sidecar and per-node examples', function () {
    // Loops '*' starts are in config/manager itself; opt-in ones in a directory an overlay adds.
    expect(load(files['config/manager/kustomization.yaml']!)).to.deep.include({ resources: ['namespace.yaml', 'pv-binder.yaml'] });
    expect(files['config/manager/rollback/deployment.yaml']).to.contain('--controllers=rollback');
    expect(load(files['config/manager/rollback/kustomization.yaml']!)).to.deep.include({ resources: ['deployment.yaml'] });
    expect(files['config/manager/capacity-sidecar/deployment.yaml']).to.contain('kind: Deployment');
    expect(files['config/manager/capacity-per-node/daemonset.yaml']).to.contain('kind: DaemonSet');
    // The all-in-one runs every loop that needs no driver, opt-in ones by name.
    expect(files['config/manager/all-in-one/deployment.yaml']).to.contain('--controllers=*,rollback');
  });

  it('a ServiceAccount file per loop and one ClusterRole per loop', function () {
    for (const d of descriptors) expect(files[`config/rbac/${d.name}.yaml`], d.name).to.contain(`name: topovol-${d.name}\n`);
    const roles = loadAll(files['config/rbac/roles/cluster-roles.yaml']!) as { kind: string; metadata: { name: string } }[];
    expect(roles.map((r) => `${r.kind}/${r.metadata.name}`)).to.deep.equal(descriptors.map((d) => `ClusterRole/topovol-${d.name}`));
  });

  it('rejects an unknown capacity controller name', function () {
    expect(() => renderInstallFiles({ descriptors, managerFlags: MANAGER_FLAGS, metrics: [], capacityController: 'nope' })).to.throw(/nope/);
  });
});

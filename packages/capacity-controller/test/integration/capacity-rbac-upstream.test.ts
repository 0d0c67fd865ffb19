import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { mergeRules } from '@topovol/manifests';
import type { PolicyRule } from '@topovol/shared';
import { csiBinaries, loadManifests } from '@topovol/testing';
import { capacityDescriptor } from '../../src/capacity-descriptor.js';

type Grant = string;

/** "verb group/resource" for every verb, group and resource of the rules. */
function grants(rules: readonly PolicyRule[]): Set<Grant> {
  const out = new Set<Grant>();
  for (const r of rules) for (const g of r.apiGroups) for (const res of r.resources) for (const v of r.verbs) out.add(`${v} ${g}/${res}`);
  return out;
}
const resourceOf = (g: Grant): string => g.slice(g.indexOf(' ') + 1);

/**
 * What the capacity loop may do cluster-wide on a resource external-provisioner grants only in its
 * own namespace, and why. Anything else there must be in the loop's namespaced rules.
 */
const CLUSTER_WIDE_WHERE_UPSTREAM_IS_NAMESPACED: Record<Grant, string> = {
  'list storage.k8s.io/csistoragecapacities': "other publishers' objects of the same driver, in any namespace, are reported (docs/capacity.md)",
  'watch storage.k8s.io/csistoragecapacities': 'the same, kept current by an informer',
};

/** Namespaced grants beyond external-provisioner's, and why. */
const NAMESPACED_BEYOND_UPSTREAM: Record<Grant, string> = {
  'get apps/deployments': 'it reads the owner it names at the last level, where upstream takes the reference unread (docs/divergences.md, --capacity-ownerref-level)',
  'get apps/statefulsets': 'the same',
  'get apps/daemonsets': 'the same',
};

// external-provisioner's deploy/kubernetes/rbac.yaml (the version the interop tests run) grants its
// CSIStorageCapacity writes and the reads of its pod and owners in a Role of its namespace; the
// capacity loop must be no wider (docs/install.md, "RBAC").
describe("capacity RBAC against external-provisioner's deploy/kubernetes/rbac.yaml", function () {
  this.timeout(10 * 60_000);

  it('grants cluster-wide nothing upstream grants only in its namespace, but list and watch of CSIStorageCapacity; its namespaced rules go beyond upstream only by the owner kinds it reads', async function () {
    const file = (await csiBinaries(['csi-provisioner-rbac.yaml']))['csi-provisioner-rbac.yaml'];
    const docs = loadManifests(readFileSync(file, 'utf8'));
    const upstreamRole = docs.find((d) => d.kind === 'Role') as { rules: PolicyRule[] } | undefined;
    expect(upstreamRole, `a Role in ${file}`).to.not.equal(undefined);
    // Leases are leader election, namespaced on both sides; the rest is capacity's.
    const theirsNamespaced = new Set([...grants(upstreamRole!.rules)].filter((g) => !g.endsWith('/leases')));
    expect([...theirsNamespaced].some((g) => g.startsWith('create storage.k8s.io/csistoragecapacities')), 'upstream Role read').to.equal(true);
    const namespacedResources = new Set([...theirsNamespaced].map(resourceOf));

    const oursCluster = grants(mergeRules(capacityDescriptor.rbac ?? [], 'capacity'));
    const oursNamespaced = grants(mergeRules(capacityDescriptor.namespacedRbac ?? [], 'capacity'));
    const wider = [...oursCluster].filter((g) => namespacedResources.has(resourceOf(g))).sort();
    expect(wider).to.deep.equal(Object.keys(CLUSTER_WIDE_WHERE_UPSTREAM_IS_NAMESPACED).sort());
    const beyond = [...oursNamespaced].filter((g) => !theirsNamespaced.has(g)).sort();
    expect(beyond).to.deep.equal(Object.keys(NAMESPACED_BEYOND_UPSTREAM).sort());
  });
});

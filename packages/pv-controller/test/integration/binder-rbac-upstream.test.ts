import { expect } from 'chai';
import type { KubeObject, PolicyRule } from '@topovol/shared';
import { sharedControlPlane } from '@topovol/testing';
import { pvBinderDescriptor } from '../../src/pv-binder-descriptor.js';

/** kube-controller-manager's binder's role, as kube-apiserver bootstraps it (plugin/pkg/auth/authorizer/rbac/bootstrappolicy/controller_policy.go). */
const UPSTREAM_ROLE = 'system:controller:persistent-volume-binder';

/**
 * What pv-binder may do that kube-controller-manager's binder may not, and why (docs/install.md,
 * "pv-binder against kube-controller-manager's binder"). Anything else it asks for must be in
 * upstream's role: a new grant beyond it has to be argued here first.
 */
const BEYOND_UPSTREAM: Record<string, string> = {
  'patch /persistentvolumeclaims': 'claims are written by merge patch (the cache holds a projection), where upstream PUTs whole claims',
  'patch /persistentvolumeclaims/status': 'a claim status other than the one right after a bind is a merge patch of what changed',
  'get /nodes': 'a selected node is removed only once a live read confirms the node gone or outside allowedTopologies',
  'list /events': "the external provisioner's Events are an informer's (listed, then watched); upstream only watches Events to record its own",
};

type Grant = string;

/** "verb group/resource", with " named a,b" when the rule is limited to those objects. */
function grants(rules: readonly PolicyRule[]): Set<Grant> {
  const out = new Set<Grant>();
  for (const r of rules) {
    const names = r.resourceNames?.length ? ` named ${[...r.resourceNames].sort().join(',')}` : '';
    for (const g of r.apiGroups ?? ['']) for (const res of r.resources ?? []) for (const v of r.verbs ?? []) out.add(`${v} ${g}/${res}${names}`);
  }
  return out;
}

/** Whether upstream grants it: the same grant, or the same without a limit to named objects. */
const covered = (theirs: Set<Grant>, g: Grant): boolean => theirs.has(g) || theirs.has(g.replace(/ named .*$/, ''));

describe("pv-binder's ClusterRole against kube-controller-manager's binder role (real API server)", function () {
  it("grants nothing kube-controller-manager's binder role does not, but the four listed with reasons", async function () {
    const admin = (await sharedControlPlane()).adminClient();
    const upstream = JSON.parse(await admin.requestText('GET', `/apis/rbac.authorization.k8s.io/v1/clusterroles/${UPSTREAM_ROLE}`)) as KubeObject & { rules: PolicyRule[] };
    const theirs = grants(upstream.rules);
    expect(theirs.size, `${UPSTREAM_ROLE} read`).to.be.greaterThan(10);
    const ours = grants(pvBinderDescriptor.rbac ?? []);
    const beyond = [...ours].filter((g) => !covered(theirs, g)).sort();
    expect(beyond).to.deep.equal(Object.keys(BEYOND_UPSTREAM).sort());
    // And each listed grant is still one pv-binder has (the list cannot go stale).
    for (const g of Object.keys(BEYOND_UPSTREAM)) expect(ours.has(g), g).to.equal(true);
  });
});

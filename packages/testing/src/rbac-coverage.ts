import { readFileSync } from 'node:fs';
import type { PolicyRule } from '@topovol/shared';
import { atomLabel, ruleAtoms } from '@topovol/manifests';
import type { RuleAtom } from '@topovol/manifests';
import type { AuthorizationRecord } from './audit-log.js';
import { loadManifests } from './load-manifests.js';

/** A ClusterRole or Role as generated into config/rbac. */
export interface GeneratedRole {
  /** "ClusterRole/name" or "Role/namespace/name", as authorizationRecords cites roles. */
  id: string;
  rules: PolicyRule[];
}

/**
 * The ClusterRoles and Roles in the given manifest files that the managers hold. A role of
 * non-resource rules (topovol-metrics-reader, `get` on /metrics) is a scraper's, bound to no
 * manager identity: it is left out (metrics-auth.test.ts and install.test.ts show it used).
 */
export function generatedRoles(files: readonly string[]): GeneratedRole[] {
  const out: GeneratedRole[] = [];
  for (const file of files) {
    for (const doc of loadManifests(readFileSync(file, 'utf8'))) {
      const rules = (doc as { rules?: PolicyRule[] }).rules ?? [];
      if (rules.some((r) => !Array.isArray(r.apiGroups))) continue;
      if (doc.kind === 'ClusterRole') out.push({ id: `ClusterRole/${doc.metadata?.name ?? ''}`, rules });
      else if (doc.kind === 'Role') out.push({ id: `Role/${doc.metadata?.namespace ?? ''}/${doc.metadata?.name ?? ''}`, rules });
    }
  }
  return out;
}

/**
 * Grants only an admission plugin asks about, by role: OwnerReferencesPermissionEnforcement checks
 * them with the authorizer itself, and kube-apiserver's audit log records no request for them when
 * they allow, so no suite can show them used. Each is still proved needed: without it the plugin
 * refuses the loop's write, which the necessity tests read (ownerReferenceRefusals); rollback-rbac's
 * generic ephemeral volume scenario and capacity-rbac's scenario (the CSIDriver owner added later).
 */
export const ADMISSION_ONLY: Readonly<Record<string, readonly string[]>> = {
  'ClusterRole/topovol-rollback': ['update pods/finalizers', 'update apps/statefulsets/finalizers'],
  'ClusterRole/topovol-capacity': ['delete topovol.io/csidrivercapacities', 'delete topovol.io/csidrivercapacityshards'],
};

function grants(atom: RuleAtom, r: AuthorizationRecord): boolean {
  return atom.group === r.group && atom.resource === r.resource && atom.verb === r.verb && (!atom.resourceNames || (r.name !== undefined && atom.resourceNames.includes(r.name)));
}

export interface RbacCoverage {
  /** Role atoms no allowed request was granted by: nothing the tests ran needed them. */
  unused: { role: string; atom: RuleAtom; label: string }[];
  /** Requests of the watched users that RBAC refused. */
  forbidden: AuthorizationRecord[];
}

/**
 * Which generated permissions the recorded requests used. An atom counts as used when RBAC allowed
 * a matching request and cited that atom's role; RBAC cites the first binding that allows, so an
 * atom another role always grants first (a redundant rule) shows up as unused.
 */
export function rbacCoverage(roles: readonly GeneratedRole[], records: readonly AuthorizationRecord[], users: ReadonlySet<string>, admissionOnly: Readonly<Record<string, readonly string[]>> = ADMISSION_ONLY): RbacCoverage {
  const relevant = records.filter((r) => users.has(r.user));
  const unused: RbacCoverage['unused'] = [];
  for (const role of roles) {
    const used = relevant.filter((r) => r.allowed && r.role === role.id);
    const exempt = admissionOnly[role.id] ?? [];
    for (const atom of ruleAtoms(role.rules)) if (!exempt.includes(atomLabel(atom)) && !used.some((r) => grants(atom, r))) unused.push({ role: role.id, atom, label: atomLabel(atom) });
  }
  return { unused, forbidden: relevant.filter((r) => !r.allowed) };
}

/**
 * Whether mocha was asked to run only some tests (`--grep`, `--fgrep`, their short forms): then
 * rules nothing asked for prove nothing, while a refused request still does.
 */
export function isPartialRun(argv: readonly string[]): boolean {
  return argv.some((a) => /^(--grep|--fgrep|-g|-f)(=.*)?$/.test(a));
}

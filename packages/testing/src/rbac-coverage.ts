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

/** The ClusterRoles and Roles in the given manifest files. */
export function generatedRoles(files: readonly string[]): GeneratedRole[] {
  const out: GeneratedRole[] = [];
  for (const file of files) {
    for (const doc of loadManifests(readFileSync(file, 'utf8'))) {
      const rules = (doc as { rules?: PolicyRule[] }).rules ?? [];
      if (doc.kind === 'ClusterRole') out.push({ id: `ClusterRole/${doc.metadata?.name ?? ''}`, rules });
      else if (doc.kind === 'Role') out.push({ id: `Role/${doc.metadata?.namespace ?? ''}/${doc.metadata?.name ?? ''}`, rules });
    }
  }
  return out;
}

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
export function rbacCoverage(roles: readonly GeneratedRole[], records: readonly AuthorizationRecord[], users: ReadonlySet<string>): RbacCoverage {
  const relevant = records.filter((r) => users.has(r.user));
  const unused: RbacCoverage['unused'] = [];
  for (const role of roles) {
    const used = relevant.filter((r) => r.allowed && r.role === role.id);
    for (const atom of ruleAtoms(role.rules)) if (!used.some((r) => grants(atom, r))) unused.push({ role: role.id, atom, label: atomLabel(atom) });
  }
  return { unused, forbidden: relevant.filter((r) => !r.allowed) };
}

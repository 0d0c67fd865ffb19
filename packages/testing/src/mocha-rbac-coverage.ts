// Loaded with mocha's --require by the full integration run (TOPOVOL_RBAC_COVERAGE=1, set by the
// test:integration script): after every suite ran its loop as its own ServiceAccount, the audit log
// must show each rule of the generated config/rbac used by some request, and no request of those
// ServiceAccounts refused. Partial runs (one file) skip it; a run narrowed by --grep (e.g.
// `hack/skew.sh --grep install`) checks only that nothing was refused.
import path from 'node:path';
import { INSTALL_NAMESPACE } from '@topovol/manifests';
import { serviceAccountUser } from '@topovol/manifests';
import { yamlFiles } from './apply-manifests.js';
import { accessRecords, readAuditLog } from './audit-log.js';
import { generatedRoles, isPartialRun, rbacCoverage } from './rbac-coverage.js';
import { repoRoot } from './repo-root.js';
import { sharedControlPlane } from './shared-control-plane.js';

export const mochaHooks = {
  async afterAll(this: Mocha.Context): Promise<void> {
    if (process.env.TOPOVOL_RBAC_COVERAGE !== '1') return;
    this.timeout(60_000);
    const files = yamlFiles(path.join(repoRoot(), 'config', 'rbac'));
    const roles = generatedRoles(files);
    const accounts = [...roles.map((r) => r.id.split('/').at(-1)!.replace(/-leader-election$/, ''))];
    const users = new Set(accounts.filter((a) => a.startsWith('topovol-')).map((a) => serviceAccountUser(a, INSTALL_NAMESPACE)));
    const cp = await sharedControlPlane();
    const { unused, forbidden } = rbacCoverage(roles, accessRecords(readAuditLog(cp.auditLogPath)), users);
    const problems = [
      ...(isPartialRun(process.argv) ? [] : unused).map((u) => `${u.role}: "${u.label}" was never used by the suites (drop it, or test what needs it)`),
      ...forbidden.map((f) => `${f.user} was refused ${f.verb} ${f.group ? `${f.group}/` : ''}${f.resource}${f.name ? ` ${f.name}` : ''}`),
    ];
    if (problems.length) throw new Error(`generated RBAC coverage (audit log ${cp.auditLogPath}):\n  ${problems.join('\n  ')}`);
  },
};

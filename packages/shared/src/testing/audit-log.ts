import { readFileSync } from 'node:fs';

/** The fields of a kube-apiserver audit event (audit.k8s.io/v1, level Metadata) the tests read. */
export interface AuditEvent {
  auditID: string;
  stage: string;
  verb: string;
  requestURI: string;
  user: { username: string };
  impersonatedUser?: { username: string };
  objectRef?: { apiGroup?: string; resource?: string; subresource?: string; namespace?: string; name?: string };
  responseStatus?: { code?: number };
  annotations?: Record<string, string>;
}

/** One authorized or refused request, reduced to what RBAC decided on. */
export interface AuthorizationRecord {
  user: string;
  group: string;
  /** resource or resource/subresource, as in RBAC rules. */
  resource: string;
  verb: string;
  namespace?: string;
  name?: string;
  allowed: boolean;
  /** The role RBAC cited ("ClusterRole/x" or "Role/ns/x"), when allowed by RBAC. */
  role?: string;
}

const DECISION = 'authorization.k8s.io/decision';
const REASON = 'authorization.k8s.io/reason';

/** The audit log's events, one JSON object per line; a partly written last line is ignored. */
export function readAuditLog(file: string): AuditEvent[] {
  const out: AuditEvent[] = [];
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (!line.trim()) continue;
    try {
      out.push(JSON.parse(line) as AuditEvent);
    } catch {
      // the server was writing it
    }
  }
  return out;
}

/**
 * The RBAC decision of each resource request, once per request (an audit ID appears at several
 * stages). Reasons read "RBAC: allowed by ClusterRoleBinding "b" of ClusterRole "r" to ..." or
 * "... by RoleBinding "b/ns" of Role "r" to ...".
 */
export function authorizationRecords(events: readonly AuditEvent[]): AuthorizationRecord[] {
  const seen = new Set<string>();
  const out: AuthorizationRecord[] = [];
  for (const e of events) {
    const decision = e.annotations?.[DECISION];
    const ref = e.objectRef;
    const resource = ref?.resource;
    if (!ref || !resource || !decision || seen.has(e.auditID)) continue;
    seen.add(e.auditID);
    const reason = e.annotations?.[REASON] ?? '';
    const cited = /Binding "([^"]+)" of (ClusterRole|Role) "([^"]+)"/.exec(reason);
    let role: string | undefined;
    if (cited) {
      const ns = cited[2] === 'Role' ? cited[1]!.split('/')[1] : undefined;
      role = cited[2] === 'Role' ? `Role/${ns ?? ''}/${cited[3]!}` : `ClusterRole/${cited[3]!}`;
    }
    out.push({
      user: e.impersonatedUser?.username ?? e.user.username,
      group: ref.apiGroup ?? '',
      resource: ref.subresource ? `${resource}/${ref.subresource}` : resource,
      verb: e.verb,
      namespace: ref.namespace,
      name: ref.name,
      allowed: decision === 'allow',
      role,
    });
  }
  return out;
}

import { closeSync, existsSync, openSync, readFileSync, readSync, statSync } from 'node:fs';

/** The fields of a kube-apiserver audit event (audit.k8s.io/v1, level Metadata) the tests read. */
export interface AuditEvent {
  auditID: string;
  stage: string;
  verb: string;
  requestURI: string;
  user: { username: string };
  impersonatedUser?: { username: string };
  objectRef?: { apiGroup?: string; resource?: string; subresource?: string; namespace?: string; name?: string };
  responseStatus?: { code?: number; message?: string };
  annotations?: Record<string, string>;
  /** When kube-apiserver received the request (RFC 3339, microseconds). */
  requestReceivedTimestamp?: string;
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

/**
 * What OwnerReferencesPermissionEnforcement answers (plugin/pkg/admission/gc/gc_admission.go): a
 * write that changes an object's ownerReferences from a writer who may not delete the object, and
 * one whose owner reference sets blockOwnerDeletion from a writer who may not update the owner's
 * finalizers. The checks are the plugin's own, so RBAC's audit annotations do not record them.
 */
const OWNER_REF_NEEDS_DELETE = "cannot set an ownerRef on a resource you can't delete";
const OWNER_REF_NEEDS_FINALIZERS = "cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't set finalizers on";

/** The resource of a record for the blockOwnerDeletion refusal: the owner's finalizers, whose kind the audit event (level Metadata) does not carry. */
export const ANY_OWNER_FINALIZERS = '*/finalizers';

const DECISION = 'authorization.k8s.io/decision';
const REASON = 'authorization.k8s.io/reason';

/** The audit log's events, one JSON object per line; a partly written last line is ignored. */
export function readAuditLog(file: string): AuditEvent[] {
  return parseLines(readFileSync(file, 'utf8').split('\n'));
}

function parseLines(lines: readonly string[]): AuditEvent[] {
  const out: AuditEvent[] = [];
  for (const line of lines) {
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
 * The events appended to the audit log since the tail was opened. Polling code uses this, not
 * readAuditLog: by the end of the test command the log holds tens of megabytes, and parsing all of it
 * every few hundred milliseconds starves the loops running in the same process.
 */
export class AuditLogTail {
  private offset: number;
  private partial = '';
  private readonly seen: AuditEvent[] = [];

  constructor(private readonly file: string) {
    this.offset = existsSync(file) ? statSync(file).size : 0;
  }

  /** Every complete line written since the tail opened; a line still being written waits for the next call. */
  events(): readonly AuditEvent[] {
    if (!existsSync(this.file)) return this.seen;
    const size = statSync(this.file).size;
    if (size <= this.offset) return this.seen;
    const buf = Buffer.alloc(size - this.offset);
    const fd = openSync(this.file, 'r');
    try {
      readSync(fd, buf, 0, buf.length, this.offset);
    } finally {
      closeSync(fd);
    }
    this.offset = size;
    const lines = (this.partial + buf.toString('utf8')).split('\n');
    this.partial = lines.pop() ?? '';
    this.seen.push(...parseLines(lines));
    return this.seen;
  }
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

/**
 * Writes refused by OwnerReferencesPermissionEnforcement, as the refusals they stand for: `delete`
 * on the object written, or `update` on any owner's finalizers (ANY_OWNER_FINALIZERS, group empty).
 */
export function ownerReferenceRefusals(events: readonly AuditEvent[]): AuthorizationRecord[] {
  const out: AuthorizationRecord[] = [];
  for (const e of events) {
    const message = e.responseStatus?.message ?? '';
    if (e.stage !== 'ResponseComplete' || e.responseStatus?.code !== 403 || !e.objectRef?.resource) continue;
    const user = e.impersonatedUser?.username ?? e.user.username;
    const { namespace, name } = e.objectRef;
    if (message.includes(OWNER_REF_NEEDS_DELETE)) {
      const resource = e.objectRef.subresource ? `${e.objectRef.resource}/${e.objectRef.subresource}` : e.objectRef.resource;
      out.push({ user, group: e.objectRef.apiGroup ?? '', resource, verb: 'delete', namespace, name, allowed: false });
    } else if (message.includes(OWNER_REF_NEEDS_FINALIZERS)) {
      out.push({ user, group: '', resource: ANY_OWNER_FINALIZERS, verb: 'update', namespace, name, allowed: false });
    }
  }
  return out;
}

/**
 * A create, update or patch sent as a server-side dry run (`?dryRun=All`): admitted or refused, it
 * wrote nothing. Not a delete's: its dry run is in the DeleteOptions body, which the URI does not show.
 */
export function isDryRun(e: AuditEvent): boolean {
  return /[?&]dryRun=/.test(e.requestURI);
}

/** Every authorization decision the audit log shows: RBAC's, and OwnerReferencesPermissionEnforcement's refusals. */
export function accessRecords(events: readonly AuditEvent[]): AuthorizationRecord[] {
  return [...authorizationRecords(events), ...ownerReferenceRefusals(events)];
}

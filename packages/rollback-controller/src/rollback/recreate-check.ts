import { classifyError, isRefusal, quantityBytes, Resources } from '@topovol/shared';
import type { KubeClient, PersistentVolumeClaim } from '@topovol/shared';
import { claimFromTemplate, claimTemplate } from './claim-template.js';

/** kube-apiserver cuts a generateName prefix to this many characters (`names.SimpleNameGenerator`). */
const GENERATE_NAME_PREFIX_MAX = 58;

/** What the API server answers a claim's copy, sent as a dry run. */
export interface RecreateCheck {
  /** Why it would refuse the copy, or undefined when it would take it. */
  refused?: string;
  /**
   * The finalizers admission gives the copy (the dry run's answer: kubernetes.io/pvc-protection, a
   * driver's mutating webhook's own): a re-created claim gets them back. Empty when refused.
   */
  finalizers: readonly string[];
}

/**
 * A claim is deleted only if it can be created again: its copy, as the rollback would create it,
 * is sent as a dry run, under a generated name (the claim itself still holds its own), so that
 * admission answers it as it would the re-create. OwnerReferencesPermissionEnforcement (on in
 * OpenShift) refuses an owner reference with blockOwnerDeletion from who may not update the owner's
 * finalizers (plugin/pkg/admission/gc/gc_admission.go): an operator's claim (controller-runtime's
 * SetControllerReference sets it) deleted by a rollback would stay deleted. A policy or webhook
 * refusing such claims would too.
 */
export async function recreateCheck(client: KubeClient, claim: PersistentVolumeClaim): Promise<RecreateCheck> {
  const name = claim.metadata?.name ?? '';
  const copy = claimFromTemplate(claimTemplate(claim), claim.metadata?.namespace ?? '', name);
  const { name: _name, ...metadata } = copy.metadata ?? {};
  const generateName = `${name}-`.slice(0, GENERATE_NAME_PREFIX_MAX);
  try {
    const admitted = await client.create<PersistentVolumeClaim>(Resources.persistentVolumeClaims, { ...copy, metadata: { ...metadata, generateName } }, { dryRun: true });
    return { finalizers: admitted.metadata?.finalizers ?? [] };
  } catch (err) {
    if (!isRefusal(err)) throw err;
    const { message } = classifyError(err);
    // A webhook whose configuration does not say it has no side effects on dry runs (sideEffects
    // Unknown or Some, possible in one stored before admissionregistration/v1) makes kube-apiserver
    // refuse every dry run it matches: the copy cannot be checked, which is not its refusal.
    if (/does not support dry run/.test(message)) return { refused: `its re-create cannot be checked before the delete (${message}); the webhook's configuration needs sideEffects None or NoneOnDryRun`, finalizers: [] };
    // Taken once the claim is gone; what admission would add is not in a refusal.
    if (quotaFreedByDelete(message)) return { finalizers: [] };
    return { refused: message, finalizers: [] };
  }
}

/**
 * A ResourceQuota refusal the claim's own delete would cure: the claim still there is in the
 * quota's usage, and its copy asks for as much, so the re-create fits once it is gone as long as
 * the usage is within the limits now. A quota already over its limit (lowered below what is in
 * use) would refuse the re-create too. kube-apiserver's message (`exceeded quota: <name>,
 * requested: <r>=<q>,..., used: ..., limited: ...`, plugin/pkg/admission/resourcequota); anything
 * unreadable counts as a refusal.
 */
export function quotaFreedByDelete(message: string): boolean {
  const m = /exceeded quota: [^,]*, requested: (.*), used: (.*), limited: (.*)$/.exec(message);
  if (!m) return false;
  const figures = (list: string): Map<string, bigint | undefined> => new Map(list.split(',').map((kv) => [kv.slice(0, kv.indexOf('=')), quantityBytes(kv.slice(kv.indexOf('=') + 1))]));
  const used = figures(m[2]!);
  const limited = figures(m[3]!);
  if (used.size === 0) return false;
  for (const [resource, u] of used) {
    const limit = limited.get(resource);
    if (u === undefined || limit === undefined || u > limit) return false;
  }
  return true;
}

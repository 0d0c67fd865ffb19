import { errorMessage, isForbidden } from '@topovol/shared';

/** RBAC's refusal: `User "..." cannot <verb> resource "..."`. */
const RBAC_DENIAL = / cannot \S+ resource /;
/**
 * OwnerReferencesPermissionEnforcement's (plugin/pkg/admission/gc/gc_admission.go; on in OpenShift):
 * an object with an owner may be written only by who may delete it, which a role granting `create`
 * but not `delete` does not give. Cured by the same binding as RBAC's.
 */
const OWNER_REFERENCE_DENIAL = /cannot set an ownerRef on a resource you can't delete|cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't set finalizers on/;

/**
 * An authorization denial (RBAC's, or the ownerReference admission check's), not another 403: an
 * exceeded quota or a webhook's denial is not cured by a RoleBinding, so its report gives the
 * server's message without that advice (object-actuator.ts).
 */
export function isAuthorizationDenial(err: unknown): boolean {
  if (!isForbidden(err)) return false;
  const message = errorMessage(err);
  return RBAC_DENIAL.test(message) || OWNER_REFERENCE_DENIAL.test(message);
}

/**
 * CSIStorageCapacity writes the API server denied, by target (an item, or an obsolete object to
 * delete), until the target's write goes through or a pass over it needs none any more: then the
 * objects it stood for are current again, and a denial that no write meets any more must not keep
 * the loop not Ready. An episode starts with the first denial while none is recorded.
 */
export class WriteRefusals {
  private readonly byTarget = new Map<string, string>();

  /** Records a denial; true when it starts an episode. */
  refused(target: string, message: string): boolean {
    const first = this.byTarget.size === 0;
    this.byTarget.set(target, message);
    return first;
  }

  /** Settles every target the predicate names; true when that ended the episode. */
  settledWhere(done: (target: string) => boolean): boolean {
    if (this.byTarget.size === 0) return false;
    for (const t of [...this.byTarget.keys()]) if (done(t)) this.byTarget.delete(t);
    return this.byTarget.size === 0;
  }

  /** One denial's message while any is recorded. */
  get message(): string | undefined {
    return this.byTarget.values().next().value;
  }
}

import { errorMessage, Resources } from '@topovol/shared';
import type { KubeClient, KubeObject } from '@topovol/shared';
import { eventually } from './eventually.js';

export interface DenyingPolicy {
  /** The requests the policy sees: core/v1 unless `apiGroups` says otherwise. */
  rule: { apiGroups?: string[]; operations: string[]; resources: string[] };
  /** A request this CEL expression is false for is denied with `message`. */
  validation: { expression: string; message: string };
  /** The binding's matchResources (a namespaceSelector, ...); every object when not given. */
  matchResources?: object;
  /** The policy's own objectSelector, if any. */
  objectSelector?: object;
}

/**
 * A ValidatingAdmissionPolicy, bound with Deny, that plays a cluster's policy or webhook refusing a
 * loop's writes (kube-apiserver answers 403 or 422 with `message`). Returns what lifts it. It takes
 * effect within a second or so: callers probe with a request of their own before relying on it.
 */
export async function denyingPolicy(client: KubeClient, name: string, p: DenyingPolicy): Promise<() => Promise<void>> {
  await client.create<KubeObject>(Resources.validatingAdmissionPolicies, {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicy',
    metadata: { name },
    spec: {
      failurePolicy: 'Fail',
      matchConstraints: { resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], ...p.rule, ...(p.rule.apiGroups ? { apiVersions: ['*'] } : {}) }], ...(p.objectSelector ? { objectSelector: p.objectSelector } : {}) },
      validations: [p.validation],
    },
  } as KubeObject);
  const lift = async (): Promise<void> => {
    await client.delete(Resources.validatingAdmissionPolicyBindings, name).catch(() => undefined);
    await client.delete(Resources.validatingAdmissionPolicies, name).catch(() => undefined);
  };
  try {
    await client.create<KubeObject>(Resources.validatingAdmissionPolicyBindings, {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicyBinding',
      metadata: { name },
      spec: { policyName: name, validationActions: ['Deny'], ...(p.matchResources ? { matchResources: p.matchResources } : {}) },
    } as KubeObject);
  } catch (err) {
    await lift();
    throw err;
  }
  return lift;
}

/**
 * Waits until `probe` (a request the policy should refuse, best a dry run) is refused with the
 * policy's `message`. Any other error (a timeout, a 429, a connection cut) says nothing about the
 * policy: counted as a refusal, the test would go on before the policy is in force, and the code
 * under test would be let through where the test expects it refused.
 */
export async function untilRefused(probe: () => Promise<unknown>, message: string, what = 'the policy refuses the probe'): Promise<void> {
  await eventually(async () => {
    const answer = await probe().then(
      () => 'accepted',
      (err: unknown) => errorMessage(err),
    );
    if (!answer.includes(message)) throw new Error(`${what}: not yet (the probe was answered: ${answer})`);
  });
}

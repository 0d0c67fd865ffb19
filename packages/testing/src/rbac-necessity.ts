import { randomBytes } from 'node:crypto';
import assert from 'node:assert/strict';
import type { KubeClient } from '@topovol/shared';
import { Resources } from '@topovol/shared';
import type { ControllerDescriptor, PolicyRule } from '@topovol/shared';
import { serviceAccountUser } from '@topovol/manifests';
import { atomLabel, mergeRules, ruleAtoms, rulesWithout } from '@topovol/manifests';
import type { RuleAtom } from '@topovol/manifests';
import { accessRecords, ANY_OWNER_FINALIZERS, AuditLogTail } from './audit-log.js';
import type { AuthorizationRecord } from './audit-log.js';
import { controllerClient, installGeneratedRbac, throwawayIdentity } from './controller-identity.js';
import { sharedControlPlane } from './shared-control-plane.js';

/** A loop started for one necessity check; `reached` settles when the scenario's end state holds. */
export interface ScenarioRun {
  reached: Promise<void>;
  stop(): Promise<void>;
  /**
   * When each of the scenario's steps finished (Date.now(), pushed as they do; optional). With it,
   * a run without a rule is judged by the step it stalls at: it must stay there for 1.5 times as
   * long as the control run took over that step, instead of 1.5 times the whole control run.
   */
  steps?: readonly number[];
}


/**
 * Starts the loop as `client` and drives a scenario that needs every rule of the loop's
 * ClusterRole; `admin` creates the inputs and reads the end state. Names must be unique per call.
 */
export type NecessityScenario = (client: KubeClient, admin: KubeClient) => Promise<ScenarioRun>;

export interface NecessityResult {
  atom: RuleAtom;
  label: string;
  /** The scenario's end state was reached without the atom: the rule is not needed by it. */
  reached: boolean;
  /** Requests RBAC refused for want of exactly this atom. */
  refused: AuthorizationRecord[];
  /** Why the scenario stopped short, when it threw (for the failure message). */
  stoppedBy?: string;
}

function matches(atom: RuleAtom, r: AuthorizationRecord): boolean {
  // An admission refusal that names no owner kind (ownerReferenceRefusals) stands for any owner's
  // finalizers: a run lacks exactly one rule, so it can only be the finalizers rule it lacks.
  if (r.resource === ANY_OWNER_FINALIZERS) return atom.verb === 'update' && atom.resource.endsWith('/finalizers');
  return atom.group === r.group && atom.resource === r.resource && atom.verb === r.verb;
}

/**
 * A ServiceAccount in the install namespace (so the audit log records it) bound to a ClusterRole
 * with exactly `rules`; resolves once RBAC's cache has the binding, so no refusal comes from a
 * binding not yet seen.
 */
async function identityWith(admin: KubeClient, rules: PolicyRule[], probe: RuleAtom): Promise<{ name: string; client: KubeClient; cleanup: () => Promise<void> }> {
  const role = `topovol-rbac-check-${randomBytes(3).toString('hex')}`;
  await admin.create(Resources.clusterRoles, { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: role }, rules } as never);
  const id = await throwawayIdentity('topovol-rbac-check', [role], { group: probe.group, resource: probe.resource, verb: probe.verb, name: probe.resourceNames?.[0] });
  const cleanup = async (): Promise<void> => {
    await id.cleanup();
    await admin.delete(Resources.clusterRoles, role).catch(() => undefined);
  };
  return { name: id.serviceAccount, client: id.client, cleanup };
}

/**
 * Least privilege, proven ("removing any one rule makes some test fail with Forbidden"): runs the
 * scenario as an identity holding the loop's rules minus `atom`. The rule is needed when the
 * scenario's end state is not reached and the audit log shows requests refused for want of exactly
 * that atom. Waiting stops `settleMs` after the first refusal, but not before `minWaitMs` (the
 * describe passes 1.5 times the control run's duration, so a scenario that does not need the atom
 * has the time it takes to finish), or at `timeoutMs`. Given `controlSteps` (when each step of the
 * control run finished, in ms from its setup done, the last entry its end state) and a scenario
 * that records its steps, the run must instead have stayed at one step for `stallAllowance` of it:
 * 1.5 times what the control took over that step. Most rules stop a loop right at its start (a list
 * or watch it may not make), and wait seconds, not the whole scenario.
 */
export async function checkRuleNeeded(rules: readonly PolicyRule[], atom: RuleAtom, scenario: NecessityScenario, opts: { settleMs?: number; minWaitMs?: number; timeoutMs?: number; controlSteps?: readonly number[] } = {}): Promise<NecessityResult> {
  const settleMs = opts.settleMs ?? 3_000;
  const minWaitMs = opts.minWaitMs ?? 0;
  const controlSteps = opts.controlSteps ?? [];
  const timeoutMs = opts.timeoutMs ?? 30_000;
  const cp = await sharedControlPlane();
  const admin = cp.adminClient();
  await installGeneratedRbac(); // the install namespace, where the throwaway ServiceAccounts live
  const reduced = rulesWithout(rules, atom);
  const probe = ruleAtoms(reduced)[0];
  if (!probe) throw new Error(`the rules grant only ${atomLabel(atom)}: nothing to check it against`);
  const id = await identityWith(admin, reduced, probe);
  const user = serviceAccountUser(id.name);
  // Only what this run appends: the whole log is large by the end of the test command.
  const tail = new AuditLogTail(cp.auditLogPath);
  const refusals = (): AuthorizationRecord[] => {
    return accessRecords(tail.events()).filter((r) => r.user === user && !r.allowed && matches(atom, r));
  };
  let reached = false;
  let stoppedBy: string | undefined;
  let run: ScenarioRun | undefined;
  try {
    try {
      run = await scenario(id.client, admin);
    } catch {
      // The loop could not even start (e.g. a setup read refused): not reached.
      return { atom, label: atomLabel(atom), reached: false, refused: refusals() };
    }
    const done = run.reached.then(
      () => (reached = true),
      (err: unknown) => {
        stoppedBy = err instanceof Error ? err.message : String(err);
      },
    );
    const started = Date.now();
    const deadline = started + timeoutMs;
    let firstRefusal: number | undefined;
    const steps = controlSteps.length > 0 ? run.steps : undefined;
    while (!reached && Date.now() < deadline) {
      const now = Date.now();
      if (firstRefusal === undefined && refusals().length > 0) firstRefusal = now;
      const stalled = steps ? now - Math.max(started, steps.at(-1) ?? started) > stallAllowance(controlSteps, steps.length, settleMs) : now - started > minWaitMs;
      if (firstRefusal !== undefined && now - firstRefusal > settleMs && stalled) break;
      await Promise.race([done, new Promise((r) => setTimeout(r, 200))]);
    }
  } finally {
    await run?.stop();
    await id.cleanup();
  }
  return { atom, label: atomLabel(atom), reached, refused: refusals(), stoppedBy };
}

/**
 * How long a run may stay after its `step`-th step before it counts as stalled: 1.5 times what the
 * control run took from that step to the next (or to its end state), and never less than the
 * refusals' settle time. Past the control's steps (a scenario that counted more this time), the
 * control's whole duration.
 */
export function stallAllowance(control: readonly number[], step: number, floorMs = 3_000): number {
  const from = step === 0 ? 0 : control[step - 1];
  const to = control[step];
  if (from === undefined || to === undefined) return Math.max(floorMs, 1.5 * (control.at(-1) ?? 0));
  return Math.max(floorMs, 1.5 * (to - from));
}

/**
 * Mocha suite for one loop (least privilege, proven): a control run of the scenario as the loop's own
 * ServiceAccount, then one test per atom of its generated ClusterRoles (its rules and its namespaced
 * rules), each failing unless the scenario fails with Forbidden without that atom.
 */
export interface RuleNecessityOptions {
  /** Peers the scenarios need (e.g. kube-controller-manager's binder), started once. */
  before?: (this: void) => Promise<void>;
  after?: (this: void) => Promise<void>;
  /** Scenarios for atoms the main one cannot need (e.g. another owner kind); each gets a control run too. */
  variants?: { name: string; scenario: NecessityScenario; covers: (this: void, atom: RuleAtom) => boolean }[];
  /** The control's identity; defaults to the loop's ServiceAccount with the generated RBAC. */
  controlClient?: (this: void) => Promise<KubeClient>;
}

export function describeRuleNecessity(d: ControllerDescriptor, scenario: NecessityScenario, hooks: RuleNecessityOptions = {}): void {
  describe(`${d.name} RBAC: every generated rule is needed`, function () {
    this.timeout(120_000);
    if (hooks.before) before(() => hooks.before?.());
    if (hooks.after) after(() => hooks.after?.());

    // How long each scenario takes with every rule: an atom's run waits at least 1.5 times that
    // (or, for a scenario that counts its steps, 1.5 times the step it stalls at).
    const controlMs = new Map<NecessityScenario, number>();
    const controlSteps = new Map<NecessityScenario, readonly number[]>();
    const scenarios = [{ name: 'the scenario', scenario }, ...(hooks.variants ?? []).map((v) => ({ name: `the ${v.name} scenario`, scenario: v.scenario }))];
    for (const c of scenarios) {
      it(`control: ${c.name} reaches its end state as the loop's ServiceAccount`, async function () {
        const admin = (await sharedControlPlane()).adminClient();
        const started = Date.now();
        const run = await c.scenario(await (hooks.controlClient?.() ?? controllerClient(d.name)), admin);
        // Step times count from the scenario's setup done, as an atom's run does (checkRuleNeeded).
        const running = Date.now();
        try {
          await Promise.race([run.reached, new Promise((_, reject) => setTimeout(() => reject(new Error(`${c.name} did not finish in 60 s`)), 60_000))]);
          controlMs.set(c.scenario, Date.now() - started);
          if (run.steps) controlSteps.set(c.scenario, [...run.steps.map((t) => t - running), Date.now() - running]);
        } finally {
          await run.stop();
        }
      });
    }

    // Namespaced rules too: here every rule is bound cluster-wide (whether a rule is needed, not
    // where, is the question; install.test.ts holds where, with access reviews).
    const rules = [...(d.rbac ?? []), ...(d.namespacedRbac ?? [])];
    for (const atom of ruleAtoms(mergeRules(rules, d.name))) {
      it(`without "${atomLabel(atom)}" the scenario fails with Forbidden`, async function () {
        const chosen = hooks.variants?.find((v) => v.covers(atom))?.scenario ?? scenario;
        // On a loaded machine the scenario is slower: its deadline scales with the control run's.
        const control = controlMs.get(chosen) ?? 0;
        const result = await checkRuleNeeded(rules, atom, chosen, { minWaitMs: 1.5 * control, timeoutMs: Math.max(30_000, 4 * control), controlSteps: controlSteps.get(chosen) });
        assert.ok(result.refused.length > 0, `no request was refused for want of "${result.label}"${result.stoppedBy ? ` (the scenario stopped: ${result.stoppedBy})` : ''}`);
        assert.equal(result.reached, false, `the scenario still reached its end state without "${result.label}"`);
      });
    }
  });
}

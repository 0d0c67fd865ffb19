import { expect } from 'chai';
import type { ScenarioContext } from './diff-scenario.js';
import { SCENARIO_NAMESPACE } from './diff-state.js';
import type { ClaimState, ScenarioState, VolumeState } from './diff-state.js';

/**
 * One binding scenario, run on both sides. Its name says what it checks and is how
 * docs/divergences.md refers to it.
 */
export interface Scenario {
  name: string;
  /** 2: runs while a default StorageClass exists (one per side, made for that phase); 1 (default): while none does. */
  phase?: 1 | 2;
  /** The steps, with ctx.settle() between those whose order matters. */
  run(ctx: ScenarioContext): Promise<void>;
  /**
   * Event reasons left out of the comparison because whether they are emitted at all depends on
   * timing between components, on either side (say why at the scenario).
   */
  ignoreEvents?: string[];
  /**
   * Paths of the state (as stateDiff prints them, e.g. `volumes.legacy.object.spec.nodeAffinity`)
   * one side writes by design and that are not the scenario's point: say why at the scenario.
   */
  notCompared?: string[];
  /** What both sides must end in (beyond being equal): the scenario's point, so that equal and wrong cannot pass. */
  expect?(s: ScenarioState): void;
  /**
   * A deliberate difference, listed in docs/divergences.md: the end state of each side. Without
   * `upstreamMayAgree` the two must differ (else the documentation is stale).
   */
  divergence?: { upstream(s: ScenarioState): void; topovol(s: ScenarioState): void; upstreamMayAgree?: boolean };
}

/** Asserts the listed fields of a claim's end state. */
export function claimIs(s: ScenarioState, name: string, want: Partial<ClaimState>): void {
  const got = s.claims[name];
  expect(got, `claim ${name}`).to.not.equal(undefined);
  for (const [k, v] of Object.entries(want)) expect(got![k as keyof ClaimState], `claim ${name}: ${k}`).to.deep.equal(v);
}

/** Asserts the listed fields of a volume's end state; `null` asserts it is gone. */
export function volumeIs(s: ScenarioState, name: string, want: Partial<VolumeState> | null): void {
  const got = s.volumes[name];
  if (want === null) {
    expect(got, `volume ${name} should be gone`).to.equal(undefined);
    return;
  }
  expect(got, `volume ${name}`).to.not.equal(undefined);
  for (const [k, v] of Object.entries(want)) expect(got![k as keyof VolumeState], `volume ${name}: ${k}`).to.deep.equal(v);
}

export const BIND_COMPLETED = 'pv.kubernetes.io/bind-completed';
export const BOUND_BY_CONTROLLER = 'pv.kubernetes.io/bound-by-controller';
export const PROVISIONED_BY = 'pv.kubernetes.io/provisioned-by';
export const SELECTED_NODE = 'volume.kubernetes.io/selected-node';
export const STORAGE_PROVISIONER = 'volume.kubernetes.io/storage-provisioner';
export const BETA_STORAGE_PROVISIONER = 'volume.beta.kubernetes.io/storage-provisioner';

/** A claimRef to a claim of the scenario: with the uid of the claim now under that name, another uid, or none. */
export function boundRef(claim: string, uid: 'current claim' | 'another claim' | 'none' = 'current claim'): VolumeState['claimRef'] {
  return { namespace: SCENARIO_NAMESPACE, name: claim, uid };
}

/** The state without the Event reasons a scenario does not compare. */
export function withoutEvents(st: ScenarioState, reasons: string[] | undefined): ScenarioState {
  if (!reasons?.length) return st;
  const drop = <T extends { events: string[]; eventMessages: string[] }>(o: T): T => ({
    ...o,
    events: o.events.filter((r) => !reasons.includes(r)),
    eventMessages: o.eventMessages.filter((m) => !reasons.includes(m.slice(0, m.indexOf(' ')))),
  });
  return {
    claims: Object.fromEntries(Object.entries(st.claims).map(([k, v]) => [k, drop(v)])),
    volumes: Object.fromEntries(Object.entries(st.volumes).map(([k, v]) => [k, drop(v)])),
    pods: st.pods,
  };
}

import { expect } from 'chai';
import type { PersistentVolumeClaim } from '@topovol/shared';
import { decideIntent, TERMINATING_RECHECK_MS } from '../../src/rollback/intent/decide-intent.js';
import type { ClaimState, ProvisioningRollback } from '../../src/rollback/intent/provisioning-rollback.js';

const rb = (states: Record<string, ClaimState>): ProvisioningRollback => ({
  metadata: { name: 'w-1' },
  spec: {
    pod: { namespace: 'ns', name: 'p', uid: 'uid-p' },
    workload: { kind: 'Pod', name: 'p', uid: 'uid-p' },
    node: 'a',
    reason: 'x',
    attempt: 1,
    claims: ['c1', 'c2'].map((name) => ({ name, uid: `old-${name}`, resourceVersion: '1', volume: `v-${name}`, template: { metadata: {}, spec: {} } })),
  },
  status: { claims: Object.entries(states).map(([name, state]) => ({ name, state })) },
});
const live = (uids: Record<string, string>) => (_ns: string, name: string): PersistentVolumeClaim | undefined => (uids[name] ? { metadata: { name, uid: uids[name] } } : undefined);
const summary = (steps: ReturnType<typeof decideIntent>): string[] => steps.map((s) => (s.kind === 'finish' ? `finish ${s.phase}` : `${s.kind} ${s.claim.name}`));

// A recorded rollback advanced from its record: each claim deleted once, re-created once.
describe('decideIntent', function () {
  const cases: { name: string; r: ProvisioningRollback; live: Record<string, string>; want: string[] }[] = [
    { name: 'just recorded: mark each claim Deleting, then delete it', r: rb({}), live: { c1: 'old-c1', c2: 'old-c2' }, want: ['markDeleting c1', 'deleteClaim c1', 'markDeleting c2', 'deleteClaim c2'] },
    { name: 'crashed after marking Deleting: delete (the actuator sees whether it went)', r: rb({ c1: 'Deleting' }), live: { c1: 'old-c1', c2: 'old-c2' }, want: ['deleteClaim c1', 'markDeleting c2', 'deleteClaim c2'] },
    { name: 'deleted and gone: re-create', r: rb({ c1: 'Deleted', c2: 'Deleted' }), live: {}, want: ['createClaim c1', 'createClaim c2'] },
    { name: 'deleted but still terminating: wait', r: rb({ c1: 'Deleted', c2: 'Recreated' }), live: { c1: 'old-c1', c2: 'new' }, want: ['waitTerminating c1'] },
    { name: 'crashed after re-creating: record it, never create twice', r: rb({ c1: 'Deleted', c2: 'Recreated' }), live: { c1: 'new-c1', c2: 'new' }, want: ['noteRecreated c1'] },
    { name: 'one claim kept (the pod got scheduled): the others not yet deleted are kept too', r: rb({ c1: 'Kept' }), live: { c1: 'old-c1', c2: 'old-c2' }, want: ['keep c2'] },
    { name: 'all re-created: Completed', r: rb({ c1: 'Recreated', c2: 'Recreated' }), live: {}, want: ['finish Completed'] },
    { name: 'one re-created, one kept: Completed', r: rb({ c1: 'Recreated', c2: 'Kept' }), live: {}, want: ['finish Completed'] },
    { name: 'all kept: Aborted', r: rb({ c1: 'Kept', c2: 'Kept' }), live: {}, want: ['finish Aborted'] },
    { name: 'deleted, then its namespace went (Abandoned): Aborted, nothing re-created', r: rb({ c1: 'Abandoned', c2: 'Abandoned' }), live: {}, want: ['finish Aborted'] },
  ];
  for (const c of cases) it(c.name, () => expect(summary(decideIntent(c.r, live(c.live)))).to.deep.equal(c.want));

  it('a record finished with abandoned claims says which, and why', function () {
    const [finish] = decideIntent(rb({ c1: 'Abandoned', c2: 'Kept' }), live({}));
    expect(finish).to.deep.equal({ kind: 'finish', phase: 'Aborted', message: `claim(s) c1 not re-created: namespace ${rb({}).spec.pod.namespace} was deleted` });
  });

  // A multi-claim rollback whose later claim was kept (a restart between two claims' deletes that
  // could not vouch for the next volume) used to end Completed with "the pod can be scheduled on
  // another node": the kept volume may still hold the pod to the node's topology.
  it('a record that re-created some claims and kept others says so, as a partial completion', function () {
    const [finish] = decideIntent(rb({ c1: 'Recreated', c2: 'Kept' }), live({}));
    expect(finish).to.deep.equal({ kind: 'finish', phase: 'Completed', partial: true, message: "claim(s) c1 re-created; claim(s) c2 kept (their states say why): their volumes may still hold the pod to node a's topology" });
    const [all] = decideIntent(rb({ c1: 'Recreated', c2: 'Recreated' }), live({}));
    expect(all, 'all re-created: no message of its own').to.deep.equal({ kind: 'finish', phase: 'Completed' });
    const three = { ...rb({}), spec: { ...rb({}).spec, claims: ['c1', 'c2', 'c3'].map((name) => ({ name, uid: `old-${name}`, resourceVersion: '1', volume: `v-${name}`, template: { metadata: {}, spec: {} } })) }, status: { claims: [{ name: 'c1', state: 'Recreated' as const }, { name: 'c2', state: 'Kept' as const }, { name: 'c3', state: 'Abandoned' as const }] } };
    const [gone] = decideIntent(three, live({}));
    expect(gone, 'its namespace went: no pod left to hold, not partial').to.deep.equal({ kind: 'finish', phase: 'Completed', message: 'claim(s) c3 not re-created: namespace ns was deleted' });
    const [none] = decideIntent(rb({ c1: 'Kept', c2: 'Kept' }), live({}));
    expect(none, 'none re-created: Aborted, not partial').to.deep.equal({ kind: 'finish', phase: 'Aborted' });
  });

  it('says how soon to look again at a claim still terminating (the requeue is the decision\'s)', function () {
    const [step] = decideIntent(rb({ c1: 'Deleted', c2: 'Recreated' }), live({ c1: 'old-c1', c2: 'new' }));
    expect(step).to.deep.include({ kind: 'waitTerminating', ms: TERMINATING_RECHECK_MS });
  });
});

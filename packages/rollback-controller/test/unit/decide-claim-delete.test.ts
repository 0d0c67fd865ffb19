import { expect } from 'chai';
import fc from 'fast-check';
import type { PersistentVolumeClaim, Pod } from '@topovol/shared';
import { claimTemplate } from '../../src/rollback/claim-template.js';
import { afterCreateRefused, decideClaimDelete, NOMINATED_RECHECK_MS, NOMINATED_WAIT_MS } from '../../src/rollback/intent/decide-claim-delete.js';
import type { DeleteFacts } from '../../src/rollback/intent/decide-claim-delete.js';
import { TERMINATING_RECHECK_MAX_MS, TERMINATING_RECHECK_MS } from '../../src/rollback/intent/decide-intent.js';
import type { ProvisioningRollback, RollbackClaim } from '../../src/rollback/intent/provisioning-rollback.js';

// A rollback's claim delete, decided on what the server says right before it.
const decided: PersistentVolumeClaim = { metadata: { name: 'c1', namespace: 'ns', uid: 'old-c1', resourceVersion: '7', labels: { app: 'db' } }, spec: { volumeName: 'v1', storageClassName: 'fast' } };
const c: RollbackClaim = { name: 'c1', uid: 'old-c1', resourceVersion: '7', volume: 'v1', template: claimTemplate(decided) };
/** When the record r was created. */
const RECORDED_AT = Date.parse('2026-11-22T11:59:00Z');
const r: ProvisioningRollback = { metadata: { name: 'w-1', creationTimestamp: '2026-11-22T11:59:00Z' }, spec: { pod: { namespace: 'ns', name: 'p', uid: 'uid-p' }, workload: { kind: 'Pod', name: 'p', uid: 'uid-p' }, node: 'a', reason: 'x', attempt: 1, claims: [c] } };
/** When claimAt's `deleting` claims were deleted. */
const DELETED_AT = Date.parse('2026-11-22T12:00:00Z');
const claimAt = (rv: string, change: { uid?: string; volumeName?: string; labels?: Record<string, string>; annotations?: Record<string, string>; deleting?: boolean; finalizers?: string[] } = {}): PersistentVolumeClaim => ({
  metadata: { ...decided.metadata, uid: change.uid ?? 'old-c1', resourceVersion: rv, labels: change.labels ?? decided.metadata?.labels, annotations: change.annotations, deletionTimestamp: change.deleting ? '2026-11-22T12:00:00Z' : undefined, finalizers: change.finalizers },
  spec: { ...decided.spec, volumeName: change.volumeName ?? 'v1' },
});
const podP = (nodeName?: string, uid = 'uid-p', nominatedNodeName?: string): Pod => ({ metadata: { name: 'p', namespace: 'ns', uid }, spec: { nodeName, containers: [] }, status: nominatedNodeName ? { nominatedNodeName } : {} });
const facts = (f: Partial<DeleteFacts>): DeleteFacts => ({ claim: claimAt('7'), pod: podP(), volumeUse: undefined, claimUsers: [podP()], admittedFinalizers: [], now: RECORDED_AT + 1_000, ...f });
/** Another pod referencing c1, scheduled (or not) since the decision. */
const podQ = (nodeName?: string): Pod => ({ metadata: { name: 'q', namespace: 'ns', uid: 'uid-q' }, spec: { nodeName, containers: [], volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'c1' } }] } });
const WAITS = (node: string): string => `the scheduler has nominated node ${node} for pod p (it is binding the pod there, or preempting for it): the delete waits up to ${NOMINATED_WAIT_MS / 1000} s from the rollback's start for the nomination to clear`;
const summary = (f: DeleteFacts): string => {
  const d = decideClaimDelete(r, c, f);
  return d.kind === 'delete' ? `delete rv ${d.resourceVersion}` : d.kind === 'keep' ? `keep: ${d.why}` : d.kind === 'wait' ? `wait ${d.ms} ms: ${d.why}` : d.kind;
};

describe('decideClaimDelete', function () {
  const cases: { name: string; f: Partial<DeleteFacts>; want: string }[] = [
    { name: 'as decided, pod unscheduled, volume unused: delete at the version checked', f: {}, want: 'delete rv 7' },
    { name: 'gone: deleted before a crash, or by someone else (re-created from the template)', f: { claim: undefined }, want: 'alreadyDeleted' },
    { name: 'another claim of that name: the one decided on is gone', f: { claim: claimAt('9', { uid: 'other' }) }, want: 'alreadyDeleted' },
    { name: 'being deleted', f: { claim: claimAt('9', { deleting: true }) }, want: 'alreadyDeleted' },
    { name: 'a newer version that changes nothing re-created: delete at the newer version', f: { claim: claimAt('9', { annotations: { 'volume.kubernetes.io/selected-node': 'a' } }) }, want: 'delete rv 9' },
    { name: 'a newer version bound elsewhere: kept', f: { claim: claimAt('9', { volumeName: 'v2' }) }, want: 'keep: claim c1 changed since the rollback was decided (now bound to v2)' },
    { name: 'a newer version with other labels: kept', f: { claim: claimAt('9', { labels: { app: 'web' } }) }, want: 'keep: claim c1 changed since the rollback was decided (its labels, annotations, owners or spec)' },
    { name: 'a newer version with only the protection finalizer added: delete at the newer version', f: { claim: claimAt('9', { finalizers: ['kubernetes.io/pvc-protection'] }) }, want: 'delete rv 9' },
    { name: "a newer version with someone else's finalizer added (a backup operator): kept", f: { claim: claimAt('9', { finalizers: ['kubernetes.io/pvc-protection', 'backup.example.com/hold'] }) }, want: 'keep: claim c1 carries finalizer(s) backup.example.com/hold, which a re-created claim would not have' },
    { name: "a newer version with a finalizer admission gives every copy too (a driver's webhook): delete at the newer version", f: { claim: claimAt('9', { finalizers: ['kubernetes.io/pvc-protection', 'topolvm.io/pvc'] }), admittedFinalizers: ['kubernetes.io/pvc-protection', 'topolvm.io/pvc'] }, want: 'delete rv 9' },
    { name: 'the pod is gone: kept', f: { pod: undefined }, want: 'keep: pod p is gone' },
    { name: 'a pod of that name with another uid: kept', f: { pod: podP(undefined, 'other') }, want: 'keep: pod p is gone' },
    { name: 'the pod was scheduled: kept', f: { pod: podP('b') }, want: 'keep: pod p was scheduled to node b' },
    { name: 'the volume may hold data: kept', f: { volumeUse: 'its mark is used' }, want: 'keep: volume v1 may hold data: its mark is used' },
    { name: 'another pod uses the claim, scheduled since the decision: kept', f: { claimUsers: [podP(), podQ('a')] }, want: 'keep: claim c1 is also used by pod q' },
    { name: 'another pod uses the claim, not scheduled: kept all the same', f: { claimUsers: [podQ()] }, want: 'keep: claim c1 is also used by pod q' },
    { name: 'no pod in the list (the recorded one is checked by its own read): delete', f: { claimUsers: [] }, want: 'delete rv 7' },
    // kube-scheduler nominates the node it binds the pod to before PreBind (KEP-5278): the cache
    // that decided may not have shown it yet, and the pod is about to be bound there.
    { name: 'the pod nominated to a node since: wait, and look again soon', f: { pod: podP(undefined, 'uid-p', 'a') }, want: `wait ${NOMINATED_RECHECK_MS} ms: ${WAITS('a')}` },
    { name: 'nominated, near the end of the wait: look again at its end', f: { pod: podP(undefined, 'uid-p', 'a'), now: RECORDED_AT + NOMINATED_WAIT_MS - 500 }, want: `wait 500 ms: ${WAITS('a')}` },
    // A provisioner failing without giving the claim back holds the binding cycle for the bind
    // timeout; a preemption's nomination may outlive its node: keeping would spend an attempt.
    { name: 'nominated for longer than the wait since the record: deleted as without a nomination', f: { pod: podP(undefined, 'uid-p', 'b'), now: RECORDED_AT + NOMINATED_WAIT_MS }, want: 'delete rv 7' },
    { name: 'nominated, and the volume may hold data: kept (no wait)', f: { pod: podP(undefined, 'uid-p', 'a'), volumeUse: 'its mark is used' }, want: 'keep: volume v1 may hold data: its mark is used' },
    { name: 'nominated and bound since: kept, as scheduled', f: { pod: podP('a', 'uid-p', 'a') }, want: 'keep: pod p was scheduled to node a' },
  ];
  for (const x of cases) it(x.name, () => expect(summary(facts(x.f))).to.equal(x.want));

  it('never plans a delete of a volume that may hold data, of a scheduled or other pod (nor of a nominated one within the wait), of a claim another pod uses, of a claim that changed what it re-creates, or of one someone else holds', function () {
    let deletes = 0;
    fc.assert(
      fc.property(
        fc.record({
          claim: fc.option(fc.record({ rv: fc.constantFrom('7', '9'), uid: fc.constantFrom('old-c1', 'other'), volumeName: fc.constantFrom('v1', 'v2'), labels: fc.constantFrom('db', 'web'), deleting: fc.boolean(), finalizers: fc.constantFrom<string[]>([], [], ['kubernetes.io/pvc-protection'], ['kubernetes.io/pvc-protection', 'driver.example.com/pvc'], ['backup.example.com/hold']) }), { nil: undefined }),
          // What admission gives a copy: the driver's finalizer, or only the protection one.
          admitted: fc.constantFrom<string[]>(['kubernetes.io/pvc-protection'], ['kubernetes.io/pvc-protection', 'driver.example.com/pvc']),
          // Half of the pods unscheduled and half of the volumes unused (freq 2: nil one time in two),
          // so that about one case in twenty plans a delete and the bound below always holds.
          pod: fc.option(fc.record({ nodeName: fc.option(fc.constantFrom('a', 'b'), { nil: undefined, freq: 2 }), uid: fc.constantFrom('uid-p', 'other'), nominated: fc.option(fc.constantFrom('a', 'b'), { nil: undefined, freq: 3 }) }), { nil: undefined }),
          elapsed: fc.constantFrom(0, 1_000, NOMINATED_WAIT_MS - 1, NOMINATED_WAIT_MS, 3_600_000),
          volumeUse: fc.option(fc.constantFrom('it is gone', 'its mark is used', 'attached to node a'), { nil: undefined, freq: 2 }),
          // Pods the server lists for the claim besides the recorded one: none in about half of the cases.
          others: fc.constantFrom<(string | undefined)[]>([], [], [], [undefined], ['a'], ['b']),
        }),
        (g) => {
          const f: DeleteFacts = {
            // The same resourceVersion is the same object: only a newer one can differ from the decided.
            claim: g.claim && (g.claim.rv === '7' ? claimAt('7') : claimAt(g.claim.rv, { uid: g.claim.uid, volumeName: g.claim.volumeName, labels: { app: g.claim.labels }, deleting: g.claim.deleting, finalizers: g.claim.finalizers })),
            pod: g.pod && podP(g.pod.nodeName, g.pod.uid, g.pod.nominated),
            volumeUse: g.volumeUse,
            claimUsers: [podP(), ...g.others.map((n) => podQ(n))],
            admittedFinalizers: g.admitted,
            now: RECORDED_AT + g.elapsed,
          };
          const d = decideClaimDelete(r, c, f);
          // A wait is only for a nominated pod, within the bound, and short.
          if (d.kind === 'wait') expect([!!f.pod?.status?.nominatedNodeName, g.elapsed < NOMINATED_WAIT_MS, d.ms > 0 && d.ms <= NOMINATED_RECHECK_MS]).to.deep.equal([true, true, true]);
          if (d.kind !== 'delete') return;
          // A nominated pod's claim is deleted only once the wait is over.
          if (f.pod?.status?.nominatedNodeName) expect(g.elapsed).to.be.at.least(NOMINATED_WAIT_MS);
          deletes++;
          expect(f.volumeUse, 'volume may hold data').to.equal(undefined);
          expect(f.claimUsers.map((p) => p.metadata?.uid), 'pods using the claim').to.deep.equal(['uid-p']);
          expect([f.pod?.metadata?.uid, f.pod?.spec?.nodeName]).to.deep.equal(['uid-p', undefined]);
          expect([f.claim?.metadata?.uid, f.claim?.spec?.volumeName, f.claim?.metadata?.labels, f.claim?.metadata?.deletionTimestamp]).to.deep.equal(['old-c1', 'v1', { app: 'db' }, undefined]);
          const held = (f.claim?.metadata?.finalizers ?? []).filter((x) => x !== 'kubernetes.io/pvc-protection' && !g.admitted.includes(x));
          expect(held, "someone else's finalizers").to.deep.equal([]);
          // The delete is conditional on the claim exactly as checked.
          expect([d.uid, d.resourceVersion]).to.deep.equal(['old-c1', f.claim?.metadata?.resourceVersion]);
        },
      ),
      { numRuns: 2000, seed: 20261125 },
    );
    expect(deletes, 'deletes planned').to.be.above(10);
  });
});

describe('afterCreateRefused', function () {
  const cases: { name: string; live: PersistentVolumeClaim | undefined; at?: number; want: ReturnType<typeof afterCreateRefused> }[] = [
    { name: 'ours, created before a crash: recorded as re-created', live: claimAt('12', { uid: 'new-c1' }), want: { kind: 'noteRecreated', uid: 'new-c1' } },
    { name: 'the old claim, terminating since just now: look again in a second', live: claimAt('9', { deleting: true }), at: DELETED_AT + 200, want: { kind: 'waitTerminating', ms: TERMINATING_RECHECK_MS } },
    // Someone else's finalizer may hold it for days: each look is a server read.
    { name: 'the old claim, terminating for 10 s: look again after as long', live: claimAt('9', { deleting: true }), at: DELETED_AT + 10_000, want: { kind: 'waitTerminating', ms: 10_000 } },
    { name: 'the old claim, terminating for a day: look again after at most 30 s', live: claimAt('9', { deleting: true }), at: DELETED_AT + 86_400_000, want: { kind: 'waitTerminating', ms: TERMINATING_RECHECK_MAX_MS } },
    { name: "its deletion stamped ahead of this clock (another API server's): look again in a second", live: claimAt('9', { deleting: true }), at: DELETED_AT - 60_000, want: { kind: 'waitTerminating', ms: TERMINATING_RECHECK_MS } },
    { name: 'gone again since the refused create: look again later', live: undefined, want: { kind: 'waitTerminating', ms: TERMINATING_RECHECK_MS } },
  ];
  for (const x of cases) it(x.name, () => expect(afterCreateRefused(c, x.live, x.at ?? DELETED_AT)).to.deep.equal(x.want));
});

import { expect } from 'chai';
import { isConflict, KubeApiError, logger, metricsRegistry, Resources } from '@topovol/shared';
import type { PersistentVolumeClaim } from '@topovol/shared';
import type { RollbackDecision } from '../../src/rollback/decide-rollback.js';
import { ProvisioningRollbacks } from '../../src/rollback/intent/provisioning-rollback.js';
import type { ProvisioningRollback } from '../../src/rollback/intent/provisioning-rollback.js';
import { Reasons } from '../../src/rollback/marks.js';
import { RollbackActuator } from '../../src/rollback/rollback-actuator.js';
import { FakeEvents, FakeWrites } from '@topovol/testing';
import { decidedClaim, rollbackDecision as rollback, rollbackRecord as record, thePod } from './rollback-record-fixture.js';

// The rollback actuator over an in-memory store that enforces preconditions like the API server:
// what is stored after each write, and that no stale view (a claim written or re-created since the
// decision, an old copy of the record) deletes or overwrites anything. The real server:
// test/integration/rollback-safety.test.ts.
/** topovol_rollback_rollbacks_total for one result. */
async function rollbackCount(result: string): Promise<number> {
  const m = metricsRegistry.getSingleMetric('topovol_rollback_rollbacks_total');
  return ((m ? (await m.get()).values : []) as { labels: Record<string, unknown>; value: number }[]).filter((v) => v.labels.result === result).reduce((a, v) => a + v.value, 0);
}

describe('rollback actuator over an in-memory API server', function () {
  let store: FakeWrites;
  let events: FakeEvents;
  const actuator = (dryRun = false): RollbackActuator => new RollbackActuator({ client: store, events, log: logger(), dryRun });
  const storedClaim = (): PersistentVolumeClaim | undefined => store.stored(Resources.persistentVolumeClaims, 'c', 'ns');
  const storedRecord = (): ProvisioningRollback | undefined => store.stored(ProvisioningRollbacks, record().metadata!.name!);
  const reasons = (): string[] => events.recorded.map((e) => `${e.kind}/${e.name} ${e.type} ${e.reason}`);

  beforeEach(function () {
    store = new FakeWrites();
    events = new FakeEvents();
  });

  describe('decide', function () {
    const cases: { name: string; decision: () => RollbackDecision; dryRun?: boolean; recorded: boolean; events: string[] }[] = [
      { name: 'none: nothing', decision: () => ({ kind: 'none' }), recorded: false, events: [] },
      { name: 'wait: nothing', decision: () => ({ kind: 'wait', ms: 1000, why: 'still provisioning' }), recorded: false, events: [] },
      { name: 'refuse: a Warning on the pod, nothing written', decision: () => ({ kind: 'refuse', why: 'used' }), recorded: false, events: [`Pod/p Warning ${Reasons.RollbackRefused}`] },
      { name: 'limit: a Warning on the pod, nothing written', decision: () => ({ kind: 'limit', why: 'too many' }), recorded: false, events: [`Pod/p Warning ${Reasons.RollbackLimit}`] },
      { name: 'rollback: the record is written, nothing deleted yet, no Event until it is announced', decision: rollback, recorded: true, events: [] },
      { name: 'rollback in dry-run: nothing written', decision: rollback, dryRun: true, recorded: false, events: [] },
    ];
    for (const c of cases) {
      it(c.name, async function () {
        const seededClaim = store.seed(Resources.persistentVolumeClaims, decidedClaim());
        await actuator(c.dryRun).decide({ ...thePod, kind: 'Pod' }, c.decision());
        expect(storedClaim()).to.deep.equal(seededClaim);
        expect(reasons()).to.deep.equal(c.events);
        const r = storedRecord();
        if (!c.recorded) return expect(r).to.equal(undefined);
        expect(r?.spec.claims).to.have.length(1);
        expect(r?.spec.claims[0]).to.include({ name: 'c', uid: 'uid-c', resourceVersion: '5', volume: 'v' });
        expect(r?.spec.claims[0]?.template).to.deep.equal({ metadata: { labels: { app: 'db' } }, spec: { storageClassName: 'late', resources: { requests: { storage: '1Gi' } } } });
      });
    }

    // Nothing is recorded under --dry-run, so every look decides the same again; the node's own
    // state is dated now at each look.
    it('rollback in dry-run: reported once per pod and reasons, though the evidence is dated anew at each look', async function () {
      const a = actuator(true);
      const first = rollback();
      expect(a.reportedDryRun(thePod, first)).to.equal(false);
      await a.decide(thePod, first);
      const later = { ...first, evidenceTime: first.evidenceTime + 15_000 };
      expect(a.reportedDryRun(thePod, later), 'the same reasons, dated later').to.equal(true);
      expect(a.reportedDryRun(thePod, { ...first, why: 'another reason' })).to.equal(false);
    });

    it('a rollback already recorded (a crash after the create, another leader) is left as it is', async function () {
      const first = store.seed(ProvisioningRollbacks, record());
      await actuator().decide(thePod, rollback());
      expect(storedRecord()).to.deep.equal(first);
    });
  });

  describe('deleteClaim: only the claim as decided on (uid + resourceVersion preconditions)', function () {
    const cases: { name: string; onServer?: (c: PersistentVolumeClaim) => PersistentVolumeClaim; outcome: 'deleted' | 'Conflict' | 'gone' }[] = [
      { name: 'unchanged since the decision: deleted', onServer: (c) => c, outcome: 'deleted' },
      { name: 'written since (another resourceVersion): the Conflict is thrown, and the claim survives', onServer: (c) => ({ ...c, metadata: { ...c.metadata, resourceVersion: '6' } }), outcome: 'Conflict' },
      { name: 're-created under the same name (another uid): the Conflict is thrown, and the new claim survives', onServer: (c) => ({ ...c, metadata: { ...c.metadata, uid: 'uid-new', resourceVersion: '5' } }), outcome: 'Conflict' },
      { name: 'gone already: gone', outcome: 'gone' },
    ];
    for (const c of cases) {
      it(c.name, async function () {
        const r = store.seed(ProvisioningRollbacks, record());
        if (c.onServer) store.seed(Resources.persistentVolumeClaims, c.onServer(decidedClaim()));
        const before = store.snapshot();
        const outcome = await actuator()
          .deleteClaim(r, r.spec.claims[0]!, r.spec.claims[0]!.resourceVersion)
          .catch((err: unknown) => (isConflict(err) ? 'Conflict' : err));
        expect(outcome).to.equal(c.outcome);
        if (c.outcome === 'deleted') expect(storedClaim()).to.equal(undefined);
        else expect(store.snapshot()).to.deep.equal(before);
      });
    }
  });

  describe("a 404 that names no claim (a proxy's \"404 page not found\") is no proof the claim is gone", function () {
    const bare = (): Promise<never> => Promise.reject(KubeApiError.fromResponse(404, '404 page not found'));
    for (const write of ['deleteClaim', 'fenceClaim'] as const) {
      it(`${write}: thrown (retried), never "gone": the claim is not recorded Deleted, nor left unfenced`, async function () {
        const r = store.seed(ProvisioningRollbacks, record());
        store.seed(Resources.persistentVolumeClaims, decidedClaim());
        const misrouted = Object.assign(Object.create(store) as FakeWrites, { delete: bare, patch: bare });
        const a = new RollbackActuator({ client: misrouted, events, log: logger(), dryRun: false });
        const before = store.snapshot();
        const outcome = await a[write](r, r.spec.claims[0]!, r.spec.claims[0]!.resourceVersion).then(
          (o) => o,
          (e: unknown) => (e instanceof KubeApiError ? `thrown ${e.code}` : e),
        );
        expect(outcome).to.equal('thrown 404');
        // End state: the record and the claim as they were (no Deleted step, no re-create).
        expect(store.snapshot()).to.deep.equal(before);
        expect(storedClaim()?.metadata?.uid).to.equal('uid-c');
      });
    }
  });

  describe('createClaim', function () {
    /** The actuator over the store, whose creates all fail with `err`. */
    const creatingWith = (err: Error): RollbackActuator =>
      new RollbackActuator({ client: Object.assign(Object.create(store) as FakeWrites, { create: () => Promise.reject(err) }), events, log: logger(), dryRun: false });
    it("re-creates the claim from the record's template, and says so on it", async function () {
      const r = store.seed(ProvisioningRollbacks, record());
      const created = await actuator().createClaim(r, r.spec.claims[0]!);
      const c = storedClaim();
      expect(created).to.deep.equal({ uid: c?.metadata?.uid });
      expect(c?.metadata?.uid).to.not.equal('uid-c');
      expect(c?.metadata?.labels).to.deep.equal({ app: 'db' });
      expect(c?.spec).to.deep.equal({ storageClassName: 'late', resources: { requests: { storage: '1Gi' } } });
      expect(reasons()).to.deep.equal([`PersistentVolumeClaim/c Normal ${Reasons.ClaimRecreated}`]);
    });

    it('a claim of that name exists: exists, the claim is left as it is, no Event', async function () {
      const r = store.seed(ProvisioningRollbacks, record());
      const existing = store.seed(Resources.persistentVolumeClaims, { ...decidedClaim(), metadata: { ...decidedClaim().metadata, uid: 'uid-someone' } });
      expect(await actuator().createClaim(r, r.spec.claims[0]!)).to.equal('exists');
      expect(storedClaim()).to.deep.equal(existing);
      expect(events.recorded).to.deep.equal([]);
    });

    // As kube-apiserver answers a create in a namespace being deleted (NamespaceLifecycle) or gone.
    const refusals: [string, KubeApiError][] = [
      ['being deleted (403, cause NamespaceTerminating)', new KubeApiError(403, { reason: 'Forbidden', message: 'persistentvolumeclaims "c" is forbidden: unable to create new content in namespace ns because it is being terminated', details: { name: 'c', kind: 'persistentvolumeclaims', causes: [{ reason: 'NamespaceTerminating', message: 'namespace ns is being terminated', field: 'metadata.namespace' }] } })],
      ['gone (404 for the namespace)', new KubeApiError(404, { reason: 'NotFound', message: 'namespaces "ns" not found', details: { name: 'ns', kind: 'namespaces' } })],
    ];
    for (const [why, err] of refusals) {
      it(`its namespace ${why}: namespaceGone, nothing written (a later namespace of that name is someone else's)`, async function () {
        const r = store.seed(ProvisioningRollbacks, record());
        const a = creatingWith(err);
        expect(await a.createClaim(r, r.spec.claims[0]!)).to.equal('namespaceGone');
        expect(storedClaim()).to.equal(undefined);
      });
    }

    it('another refusal (a webhook, a quota): refused, a Warning on the pod with the reason, counted as an error', async function () {
      const r = store.seed(ProvisioningRollbacks, record());
      const a = creatingWith(new KubeApiError(403, { reason: 'Forbidden', message: 'exceeded quota: claims' }));
      const errors = await rollbackCount('error');
      expect(await a.createClaim(r, r.spec.claims[0]!)).to.equal('refused');
      expect(await rollbackCount('error')).to.equal(errors + 1);
      expect(events.recorded.map((e) => `${e.kind}/${e.name} ${e.type} ${e.reason}: ${e.message}`)).to.include(`Pod/p Warning ${Reasons.ClaimRecreateFailed}: provisioning rollback ${r.metadata?.name} could not create claim c again; retrying: exceeded quota: claims`);
      expect(storedClaim()).to.equal(undefined);
    });

    it('no answer (a server error, a reset) is thrown: retried with backoff, the outcome unknown', async function () {
      const r = store.seed(ProvisioningRollbacks, record());
      const lost = new KubeApiError(503, { reason: 'ServiceUnavailable', message: 'etcd away' });
      const a = creatingWith(lost);
      const thrown = await a.createClaim(r, r.spec.claims[0]!).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(thrown).to.equal(lost);
    });
  });

  describe("the record's status, written with its resourceVersion", function () {
    const cases: { name: string; write: (a: RollbackActuator, r: ProvisioningRollback) => Promise<unknown>; then: (r: ProvisioningRollback) => void; events: string[] }[] = [
      {
        name: 'announce: the Events on the pod, claim and volume, then the Started condition',
        write: (a, r) => a.announce(r),
        then: (r) => expect(r.status?.conditions?.map((c) => `${c.type}=${c.status}`)).to.deep.equal(['Started=True']),
        events: [`Pod/p Normal ${Reasons.RollbackStarted}`, `PersistentVolumeClaim/c Normal ${Reasons.RollbackStarted}`, `PersistentVolume/v Normal ${Reasons.RollbackStarted}`],
      },
      {
        name: "setClaim: the claim's state, and the phase that follows from it",
        write: (a, r) => a.setClaim(r, 'c', 'Deleted'),
        then: (r) => expect(r.status).to.deep.equal({ phase: 'Recreating', claims: [{ name: 'c', state: 'Deleted' }] }),
        events: [],
      },
      {
        name: 'finish Completed: phase, completion time, the Complete condition and an Event',
        write: (a, r) => a.finish(r, 'Completed'),
        then: (r) => {
          expect(r.status?.phase).to.equal('Completed');
          expect(r.status?.completionTime).to.be.a('string');
          expect(r.status?.conditions?.map((c) => `${c.type}=${c.reason}`)).to.deep.equal(['Complete=Completed']);
        },
        events: [`Pod/p Normal ${Reasons.RollbackCompleted}`],
      },
      {
        name: 'finish Completed in part (claims kept after others were re-created): the Completed Event is a Warning with the message',
        write: (a, r) => a.finish(r, 'Completed', 'claim(s) c re-created; claim(s) d kept', true),
        then: (r) => expect([r.status?.phase, r.status?.message]).to.deep.equal(['Completed', 'claim(s) c re-created; claim(s) d kept']),
        events: [`Pod/p Warning ${Reasons.RollbackCompleted}`],
      },
      {
        name: 'finish Aborted: phase and condition, no Completed Event',
        write: (a, r) => a.finish(r, 'Aborted'),
        then: (r) => expect(r.status?.phase).to.equal('Aborted'),
        events: [],
      },
    ];
    for (const c of cases) {
      it(c.name, async function () {
        const r = store.seed(ProvisioningRollbacks, record());
        await c.write(actuator(), r);
        c.then(storedRecord()!);
        expect(storedRecord()?.spec).to.deep.equal(r.spec);
        expect(reasons()).to.deep.equal(c.events);
      });

      it(`a stale copy of the record writes nothing (409 Conflict): ${c.name.split(':')[0]}`, async function () {
        const stale = store.seed(ProvisioningRollbacks, record());
        await store.patch(ProvisioningRollbacks, stale.metadata!.name!, undefined, 'merge', { metadata: { labels: { other: 'leader' } } });
        const before = store.snapshot();
        const err = await c.write(actuator(), stale).then(() => undefined, (e: unknown) => e);
        expect(isConflict(err), `expected a Conflict, got ${String(err)}`).to.equal(true);
        expect(store.snapshot()).to.deep.equal(before);
      });
    }
  });

  it('announce writes the Started condition only once its Events were written: a process killed before leaves them to its successor', async function () {
    const r = store.seed(ProvisioningRollbacks, record());
    let written!: () => void;
    events.pending = new Promise<void>((resolve) => (written = resolve));
    const announced = actuator().announce(r);
    await new Promise((resolve) => setImmediate(resolve));
    expect(reasons(), 'the Events are handed to the recorder').to.have.length(3);
    expect(storedRecord()?.status, 'nothing says they were sent while they are not').to.equal(undefined);
    written();
    await announced;
    expect(storedRecord()?.status?.conditions?.map((c) => `${c.type}=${c.status}`)).to.deep.equal(['Started=True']);
  });

  it('reportRaced and reportAborted: Events only', function () {
    const r = store.seed(ProvisioningRollbacks, record());
    const before = store.snapshot();
    const a = actuator();
    a.reportRaced({ ...thePod, kind: 'Pod', spec: { ...thePod.spec!, nodeName: 'b' } }, r.spec.claims[0]!);
    a.reportAborted(r, r.spec.claims[0]!, 'the pod was scheduled');
    // A refusal (a policy, a webhook, a narrowed role) is the operator's to look at: a Warning.
    a.reportAborted(r, r.spec.claims[0]!, "the API server refused the claim's delete: denied", true);
    expect(store.snapshot()).to.deep.equal(before);
    expect(reasons()).to.deep.equal([`Pod/p Warning ${Reasons.RollbackRaced}`, `Pod/p Normal ${Reasons.RollbackAborted}`, `Pod/p Warning ${Reasons.RollbackAborted}`]);
  });
});

import { expect } from 'chai';
import fc from 'fast-check';
import { isConflict, KubeApiError, logger, Resources } from '@topovol/shared';
import type { KubeObject, PersistentVolumeClaim, Pod, ResourceType } from '@topovol/shared';
import { FakeEvents, FakeWrites } from '@topovol/testing';
import { advanceRollback, RECREATE_RETRY_MS } from '../../src/rollback/advance-rollback.js';
import { decideIntent } from '../../src/rollback/intent/decide-intent.js';
import { ProvisioningRollbacks } from '../../src/rollback/intent/provisioning-rollback.js';
import type { ProvisioningRollback } from '../../src/rollback/intent/provisioning-rollback.js';
import { DeletedClaimWatch } from '../../src/rollback/deleted-claim-watch.js';
import { RollbackActuator } from '../../src/rollback/rollback-actuator.js';
import { newRollback } from '../../src/rollback/intent/new-rollback.js';
import { decidedClaim, rollbackDecision, rollbackRecord, thePod } from './rollback-record-fixture.js';
import { NOW } from './rollback-world-fixture.js';

// A rollback advanced look by look, as the loop does, over an in-memory store that enforces
// preconditions like the API server, with writes landing between the last re-read and the claim's
// delete: the window kube-controller-manager's status write after a bind falls into (it writes the
// claim's spec, then its status). The real server: test/integration/rollback-safety.test.ts.
/**
 * What lands in the window, each with a write of the claim (so the delete's precondition fails):
 * a status write alone (a binder's Bound); a label the re-created claim would carry; the pod
 * scheduled; the volume seen used; another pod using the claim. Or the claim deleted by someone
 * else (an earlier delete of ours landing late): the delete finds it gone. Or the pod scheduled as
 * the loop's own pod watch delivers it, with no write of the claim (`watched`).
 */
type Gap = 'status' | 'label' | 'scheduled' | 'used' | 'otherPod' | 'gone' | 'watched';

/** The recorded pod as the server has it: scheduled once the gap says so. */
const recordedPod = (w: { scheduled: boolean }): Pod => ({ ...thePod, spec: { ...thePod.spec!, nodeName: w.scheduled ? 'a' : undefined } });

/** A second pod referencing the claim. */
const podQ: Pod = { metadata: { name: 'q', namespace: 'ns', uid: 'uid-q' }, spec: { nodeName: 'a', containers: [], volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'c' } }] } };

interface World {
  store: FakeWrites;
  scheduled: boolean;
  used: boolean;
  otherPod: boolean;
  /** A delete by someone else, not recorded as the rollback's. */
  externalDelete?: () => Promise<void>;
  /** What held when the rollback deleted the claim, if it did. */
  deletedWhen?: { scheduled: boolean; used: boolean; otherPod: boolean; labels: Record<string, string> | undefined };
}

async function land(w: World, gap: Gap, n: number): Promise<void> {
  const cur = w.store.stored<PersistentVolumeClaim>(Resources.persistentVolumeClaims, 'c', 'ns')!;
  if (gap === 'gone') return w.externalDelete!();
  if (gap === 'label') {
    await w.store.patch(Resources.persistentVolumeClaims, 'c', 'ns', 'merge', { metadata: { labels: { touched: String(n) } } });
    return;
  }
  if (gap === 'scheduled') w.scheduled = true;
  if (gap === 'used') w.used = true;
  if (gap === 'otherPod') w.otherPod = true;
  await w.store.replaceStatus(Resources.persistentVolumeClaims, { ...cur, status: { phase: 'Bound', conditions: [{ type: 'Written', status: String(n) }] } });
}

/**
 * Looks at the record `looks` times (or until it finishes), as the loop's queue does: a look that
 * fails with Conflict is retried (with backoff there). `gaps[i]` lands before the i-th delete.
 */
async function advanceLooks(gaps: Gap[], looks = 10, refuseDelete?: () => Error): Promise<{ w: World; record: ProvisioningRollback; conflicts: number }> {
  const w: World = { store: new FakeWrites(), scheduled: false, used: false, otherPod: false };
  w.store.seed(Resources.persistentVolumeClaims, decidedClaim());
  const name = w.store.seed(ProvisioningRollbacks, rollbackRecord()).metadata!.name!;
  // The delete as the API server does it, noting what held at that moment.
  const del = w.store.delete.bind(w.store);
  w.externalDelete = () => del(Resources.persistentVolumeClaims, 'c', 'ns');
  w.store.delete = async (...args: Parameters<FakeWrites['delete']>) => {
    if (refuseDelete && args[0] === Resources.persistentVolumeClaims) throw refuseDelete();
    const labels = w.store.stored<PersistentVolumeClaim>(Resources.persistentVolumeClaims, 'c', 'ns')?.metadata?.labels;
    await del(...args);
    if (args[0] === Resources.persistentVolumeClaims) w.deletedWhen = { scheduled: w.scheduled, used: w.used, otherPod: w.otherPod, labels };
  };
  let attempt = 0;
  const deps = {
    actuator: new RollbackActuator({ client: w.store, events: new FakeEvents(), log: logger(), dryRun: false }),
    reads: {
      claim: (ns: string, n: string) => Promise.resolve(w.store.stored<PersistentVolumeClaim>(Resources.persistentVolumeClaims, n, ns)),
      volumeUse: () => Promise.resolve(w.used ? 'its mark is used' : undefined),
      namespace: () => Promise.resolve({ uid: 'ns-uid', created: 0 }),
      livePod: () => Promise.resolve(recordedPod(w)),
      pods: () => Promise.resolve(w.otherPod ? [recordedPod(w), podQ] : [recordedPod(w)]),
      volume: () => Promise.resolve(undefined),
      attached: () => Promise.resolve(undefined),
      undeliveredPodUse: () => Promise.resolve(undefined),
      recreateCheck: () => Promise.resolve({ finalizers: [] }),
    },
    claimWatch: new DeletedClaimWatch(),
    beforeClaimDelete: async () => {
      const gap = gaps[attempt];
      if (gap === 'watched') {
        w.scheduled = true;
        deps.claimWatch.note(recordedPod(w));
      } else if (gap) await land(w, gap, attempt);
      attempt++;
    },
  };
  let conflicts = 0;
  for (let look = 0; look < looks; look++) {
    const r = w.store.stored<ProvisioningRollback>(ProvisioningRollbacks, name)!;
    if (r.status?.phase === 'Completed' || r.status?.phase === 'Aborted') break;
    try {
      await advanceRollback(deps, r, decideIntent(r, (ns, n) => w.store.stored(Resources.persistentVolumeClaims, n, ns)));
    } catch (err) {
      if (!isConflict(err)) throw err;
      conflicts++;
    }
  }
  return { w, record: w.store.stored<ProvisioningRollback>(ProvisioningRollbacks, name)!, conflicts };
}

describe('advancing a rollback when the claim is written between the last re-read and its delete', function () {
  const cases: { name: string; gaps: Gap[]; phase: string; message?: RegExp }[] = [
    { name: 'nothing in between: deleted and re-created', gaps: [], phase: 'Completed' },
    { name: "a binder's status write: the Conflict is thrown, the next look decides afresh, deletes and re-creates", gaps: ['status'], phase: 'Completed' },
    { name: 'two status writes: two more looks, then deleted and re-created', gaps: ['status', 'status'], phase: 'Completed' },
    { name: 'a label the re-created claim would carry: kept, the rollback aborted', gaps: ['label'], phase: 'Aborted', message: /changed since the rollback was decided \(its labels/ },
    { name: 'the pod scheduled (with a claim write): kept on the next look', gaps: ['scheduled'], phase: 'Aborted', message: /was scheduled to node a/ },
    { name: 'the volume seen used (with a claim write): kept on the next look', gaps: ['used'], phase: 'Aborted', message: /may hold data/ },
    { name: 'another pod using the claim (with a claim write): kept on the next look', gaps: ['otherPod'], phase: 'Aborted', message: /also used by pod q/ },
    { name: 'deleted by someone else (an earlier delete of ours landing late): recorded Deleted and re-created, not lost', gaps: ['gone'], phase: 'Completed' },
    { name: "the pod scheduled as the loop's own watch delivers it, the claim not written: kept, the delete never sent", gaps: ['watched'], phase: 'Aborted', message: /was scheduled to node a while claim c was being deleted/ },
    { name: 'a status write, then gone: re-created on the second look', gaps: ['status', 'gone'], phase: 'Completed' },
    { name: 'a status write, then a label: kept on the second look', gaps: ['status', 'label'], phase: 'Aborted', message: /its labels/ },
    { name: 'written before every delete: nothing deleted, the claim stays Deleting, every look ends in Conflict', gaps: Array<Gap>(10).fill('status'), phase: 'Deleting' },
  ];
  for (const c of cases) {
    it(c.name, async function () {
      const { w, record, conflicts } = await advanceLooks(c.gaps);
      expect(record.status?.phase).to.equal(c.phase);
      const after = w.store.stored<PersistentVolumeClaim>(Resources.persistentVolumeClaims, 'c', 'ns');
      // Each write in the gap fails that look's delete, and only that; a claim gone is no conflict.
      expect(conflicts).to.equal(c.gaps.filter((g) => g !== 'gone' && g !== 'watched').length);
      if (c.phase === 'Completed') {
        expect(after?.metadata?.uid).to.not.equal('uid-c');
        expect(after?.metadata?.labels).to.deep.equal({ app: 'db' });
        return;
      }
      expect(after?.metadata?.uid, 'the claim decided on is still there').to.equal('uid-c');
      expect(after?.metadata?.deletionTimestamp).to.equal(undefined);
      if (c.phase === 'Deleting') return expect(record.status?.claims?.[0]).to.include({ name: 'c', state: 'Deleting' });
      expect(record.status?.claims?.[0]).to.include({ name: 'c', state: 'Kept' });
      expect(record.status?.claims?.[0]?.message).to.match(c.message!);
    });
  }

  it("a delete the API server refuses (a policy guarding claims, the role narrowed): nothing was deleted and it would be refused again: the claim kept, fenced, the rollback aborted with the server's reason", async function () {
    const refused = (): Error => KubeApiError.fromResponse(403, JSON.stringify({ kind: 'Status', status: 'Failure', code: 403, reason: 'Forbidden', message: 'persistentvolumeclaims "c" is forbidden: ValidatingAdmissionPolicy \'guard\' denied request: claims stay' }));
    const { w, record } = await advanceLooks([], 10, refused);
    expect(record.status?.phase).to.equal('Aborted');
    expect(record.status?.claims?.[0]).to.include({ name: 'c', state: 'Kept' });
    expect(record.status?.claims?.[0]?.message).to.match(/the API server refused the claim's delete: .*claims stay/);
    const after = w.store.stored<PersistentVolumeClaim>(Resources.persistentVolumeClaims, 'c', 'ns');
    expect(after?.metadata?.uid).to.equal('uid-c');
    expect(after?.metadata?.annotations?.['rollback.topovol.io/kept-by'], 'fenced').to.be.a('string');
  });

  it('a delete that gets no answer is not taken for a refusal: thrown for a retry, the claim still Deleting', async function () {
    const lost = (): Error => KubeApiError.fromResponse(503, JSON.stringify({ kind: 'Status', status: 'Failure', code: 503, reason: 'ServiceUnavailable', message: 'etcd away' }));
    const err = await advanceLooks([], 1, lost).then(() => undefined, (e: unknown) => e);
    expect(err).to.be.instanceOf(KubeApiError);
  });

  it('property: the claim is deleted only while the pod is unscheduled and its only user, the volume unused and the claim as decided; it completes once nothing lands, or once it is gone', async function () {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.constantFrom<Gap>('status', 'label', 'scheduled', 'used', 'otherPod', 'gone'), { maxLength: 6 }), async (gaps) => {
        const { w, record } = await advanceLooks(gaps, 8);
        if (w.deletedWhen) expect(w.deletedWhen).to.deep.equal({ scheduled: false, used: false, otherPod: false, labels: { app: 'db' } });
        // Only the gaps up to the first delete that does not fail land: after a claim gone, there is no delete left.
        const first = gaps.findIndex((g) => g !== 'status');
        const upTo = first === -1 ? gaps : gaps.slice(0, first + 1);
        const completes = upTo.every((g) => g === 'status' || g === 'gone');
        // Each status write costs one look; the ones after it re-create the claim and finish.
        if (completes && upTo.length <= 5) expect(record.status?.phase).to.equal('Completed');
        if (!completes) expect(record.status?.phase).to.not.equal('Completed');
        // A claim deleted is re-created: never lost, whoever deleted it.
        if (record.status?.phase === 'Completed') expect(w.store.stored<PersistentVolumeClaim>(Resources.persistentVolumeClaims, 'c', 'ns')?.metadata?.uid).to.not.equal('uid-c');
      }),
      { numRuns: 80 },
    );
  });
});

describe('advancing a rollback after a delete whose outcome it did not see', function () {
  /** The store with claim c and the record; the record's claim already Deleting when `deleting`. */
  type Namespace = { uid: string; created: number } | undefined;
  /** `namespaceUID`: the record's (none: a record written before the field). */
  /** `forgedFence`: the claim carried the rollback's name in the fence's annotation before the rollback was decided (anyone who may edit the claim can compute it). */
  const world = (namespaceUID?: string, forgedFence = false): { store: FakeWrites; events: FakeEvents; name: string; pod: { scheduled: boolean }; namespace: Namespace } => {
    const store = new FakeWrites();
    const forged = (c: PersistentVolumeClaim): PersistentVolumeClaim => ({ ...c, metadata: { ...c.metadata, annotations: { ...c.metadata?.annotations, 'rollback.topovol.io/kept-by': rollbackRecord().metadata!.name! } } });
    store.seed(Resources.persistentVolumeClaims, forgedFence ? forged(decidedClaim()) : decidedClaim());
    const record = forgedFence ? newRollback(thePod, rollbackDecision().pinned.map((p) => ({ ...p, claim: forged(p.claim) })), 'node a rejects the pod', 1, NOW) : rollbackRecord();
    const spec = namespaceUID ? { ...record.spec, pod: { ...record.spec.pod, namespaceUID } } : record.spec;
    const name = store.seed(ProvisioningRollbacks, { ...record, spec, metadata: { ...record.metadata, creationTimestamp: '2026-11-29T09:00:00Z' } }).metadata?.name ?? '';
    return { store, events: new FakeEvents(), name, pod: { scheduled: false }, namespace: { uid: 'ns-uid', created: 0 } };
  };
  const deps = (w: ReturnType<typeof world>): Parameters<typeof advanceRollback>[0] => ({
    actuator: new RollbackActuator({ client: w.store, events: w.events, log: logger(), dryRun: false }),
    reads: {
      claim: (ns: string, n: string) => Promise.resolve(w.store.stored<PersistentVolumeClaim>(Resources.persistentVolumeClaims, n, ns)),
      volumeUse: () => Promise.resolve(undefined),
      pods: () => Promise.resolve([recordedPod(w.pod)]),
      namespace: () => Promise.resolve(w.namespace),
      livePod(_ns: string, name: string, uid: string) {
    // The server's pod of that name and uid: one of the pods listed.
    return this.pods(_ns).then((ps: Pod[]) => ps.find((p) => p.metadata?.name === name && p.metadata?.uid === uid));
  },
      volume: () => Promise.resolve(undefined),
      attached: () => Promise.resolve(undefined),
      undeliveredPodUse: () => Promise.resolve(undefined),
      recreateCheck: () => Promise.resolve({ finalizers: [] }),
    },
    claimWatch: new DeletedClaimWatch(),
  });
  const look = async (w: ReturnType<typeof world>): Promise<ProvisioningRollback> => {
    const r = w.store.stored<ProvisioningRollback>(ProvisioningRollbacks, w.name)!;
    await advanceRollback(deps(w), r, decideIntent(r, (ns, n) => w.store.stored(Resources.persistentVolumeClaims, n, ns))).catch(() => undefined);
    return w.store.stored<ProvisioningRollback>(ProvisioningRollbacks, w.name)!;
  };

  for (const forgedFence of [false, true]) {
  it(`a delete that timed out here but reaches the server after the claim was recorded Kept fails its precondition: the claim stays${forgedFence ? ' (the claim carried the rollback\'s name in the fence annotation already: a patch that changes nothing keeps the resourceVersion)' : ''}`, async function () {
    const w = world(undefined, forgedFence);
    expect(w.name).to.equal(rollbackRecord().metadata?.name);
    // The first delete is sent, and the answer never comes (a timeout, a reset): it is still on its way.
    const del = w.store.delete.bind(w.store);
    let late: (() => Promise<void>) | undefined;
    w.store.delete = (...args: Parameters<FakeWrites['delete']>) => {
      if (args[0] === Resources.persistentVolumeClaims && !late) {
        late = () => del(...args);
        return Promise.reject(Object.assign(new Error('DELETE persistentvolumeclaims/c: timed out'), { code: 'ETIMEDOUT' }));
      }
      return del(...args);
    };
    expect((await look(w)).status?.claims?.[0]).to.include({ state: 'Deleting' });
    // Meanwhile the scheduler places the pod (no write of the claim): the next look keeps the claim.
    w.pod.scheduled = true;
    const kept = await look(w);
    expect(kept.status?.claims?.[0]).to.include({ state: 'Kept' });
    expect((await look(w)).status?.phase).to.equal('Aborted');
    // Now the old delete arrives.
    const landed = await late!().then(
      () => 'deleted',
      (err: unknown) => (isConflict(err) ? 'conflict' : String(err)),
    );
    expect(landed).to.equal('conflict');
    const c = w.store.stored<PersistentVolumeClaim>(Resources.persistentVolumeClaims, 'c', 'ns');
    expect(c?.metadata?.uid).to.equal('uid-c');
    expect(c?.metadata?.annotations?.['rollback.topovol.io/kept-by']).to.match(new RegExp(`^${w.name}/[0-9a-f]{8}$`));
  });
  }

  it('a claim found Terminating while the record says Deleting (the process died after the delete): the pod scheduled meanwhile is told, and not again while the claim terminates', async function () {
    const w = world();
    const r0 = w.store.stored<ProvisioningRollback>(ProvisioningRollbacks, w.name)!;
    // The first look marks it Deleting and dies after the delete; the pvc-protection finalizer keeps the claim, Terminating.
    const actuator = new RollbackActuator({ client: w.store, events: w.events, log: logger(), dryRun: false });
    await actuator.announce(r0);
    await actuator.setClaim(w.store.stored<ProvisioningRollback>(ProvisioningRollbacks, w.name)!, 'c', 'Deleting');
    const cur = w.store.stored<PersistentVolumeClaim>(Resources.persistentVolumeClaims, 'c', 'ns')!;
    await w.store.replace(Resources.persistentVolumeClaims, { ...cur, metadata: { ...cur.metadata, deletionTimestamp: '2026-11-27T10:00:00Z', finalizers: ['kubernetes.io/pvc-protection'] } });
    w.pod.scheduled = true;
    const after = await look(w);
    expect(after.status?.claims?.[0]).to.include({ state: 'Deleted' });
    expect(w.events.recorded.filter((e) => e.reason === 'ProvisioningRollbackRaced')).to.have.length(1);
    await look(w);
    expect(w.events.recorded.filter((e) => e.reason === 'ProvisioningRollbackRaced'), 'not again while it waits').to.have.length(1);
  });

  const reasons = (w: ReturnType<typeof world>, reason: string): [string | undefined, string | undefined][] => w.events.recorded.filter((e) => e.reason === reason).map((e) => [e.kind, e.name]);
  const untilDone = async (w: ReturnType<typeof world>): Promise<ProvisioningRollback> => {
    let r = await look(w);
    for (let i = 0; i < 8 && r.status?.phase !== 'Completed' && r.status?.phase !== 'Aborted'; i++) r = await look(w);
    return r;
  };

  it('a re-create whose answer was lost (the claim made, a reset in reply): the next look finds it, records it Recreated, and the claim is told it was found', async function () {
    const w = world();
    const create = w.store.create.bind(w.store);
    let lost = false;
    w.store.create = async <T extends KubeObject>(r: ResourceType, obj: T): Promise<T> => {
      const made = await create(r, obj);
      if (r !== Resources.persistentVolumeClaims || lost) return made;
      lost = true;
      throw Object.assign(new Error('POST persistentvolumeclaims: socket hang up'), { code: 'ECONNRESET' });
    };
    const done = await untilDone(w);
    const c = w.store.stored<PersistentVolumeClaim>(Resources.persistentVolumeClaims, 'c', 'ns');
    expect(done.status?.phase).to.equal('Completed');
    expect(done.status?.claims?.[0]).to.include({ state: 'Recreated', uid: c?.metadata?.uid });
    expect(reasons(w, 'ClaimAdopted')).to.deep.equal([['PersistentVolumeClaim', 'c']]);
    expect(reasons(w, 'ClaimRecreated'), 'its create never answered').to.deep.equal([]);
  });

  it('a re-create the API server refuses: looked at again after RECREATE_RETRY_MS (its own wait, not the queue\'s doubling backoff), the claim still Deleted in the record', async function () {
    const w = world();
    expect((await look(w)).status?.claims?.[0]).to.include({ state: 'Deleted' });
    w.store.create = () => Promise.reject(new KubeApiError(403, { reason: 'Forbidden', message: 'admission webhook "w" denied the request' }));
    const r = w.store.stored<ProvisioningRollback>(ProvisioningRollbacks, w.name)!;
    expect(await advanceRollback(deps(w), r, decideIntent(r, (ns, n) => w.store.stored(Resources.persistentVolumeClaims, n, ns)))).to.equal(RECREATE_RETRY_MS);
    expect(w.store.stored<ProvisioningRollback>(ProvisioningRollbacks, w.name)!.status?.claims?.[0]).to.include({ state: 'Deleted' });
  });

  it('a new leader whose claim cache lags (a claim of the name with another uid, deleted since) while the server has none: the claim is created, not taken as found', async function () {
    const w = world();
    // The first leader's look deletes c; it dies before the next look would re-create it.
    expect((await look(w)).status?.claims?.[0]).to.include({ state: 'Deleted' });
    expect(w.store.stored(Resources.persistentVolumeClaims, 'c', 'ns'), 'gone on the server').to.equal(undefined);
    // The next leader's cache still has an older claim c (an earlier rollback's, say).
    const older = { ...decidedClaim(), metadata: { ...decidedClaim().metadata, uid: 'uid-older' } };
    const r = w.store.stored<ProvisioningRollback>(ProvisioningRollbacks, w.name)!;
    await advanceRollback(deps(w), r, decideIntent(r, () => older));
    const c = w.store.stored<PersistentVolumeClaim>(Resources.persistentVolumeClaims, 'c', 'ns');
    expect(c, 'the claim exists again').to.not.equal(undefined);
    expect(w.store.stored<ProvisioningRollback>(ProvisioningRollbacks, w.name)!.status?.claims?.[0]).to.include({ state: 'Recreated', uid: c?.metadata?.uid });
    expect(reasons(w, 'ClaimAdopted')).to.deep.equal([]);
    expect(reasons(w, 'ClaimRecreated')).to.deep.equal([['PersistentVolumeClaim', 'c']]);
  });

  it('a look at a stale copy of the record (still Deleted; on the server Recreated, and that claim deleted by its owner since): Conflict, nothing created', async function () {
    const w = world();
    expect((await look(w)).status?.claims?.[0]).to.include({ state: 'Deleted' });
    const stale = w.store.stored<ProvisioningRollback>(ProvisioningRollbacks, w.name)!;
    const recreated = await look(w);
    expect(recreated.status?.claims?.[0]).to.include({ state: 'Recreated' });
    await w.store.delete(Resources.persistentVolumeClaims, 'c', 'ns');
    const err = await advanceRollback(deps(w), stale, decideIntent(stale, () => undefined)).then(() => undefined, (e: unknown) => e);
    expect(isConflict(err), String(err)).to.equal(true);
    expect(w.store.stored(Resources.persistentVolumeClaims, 'c', 'ns'), 'the claim its owner deleted stays deleted').to.equal(undefined);
  });

  // A re-create refused and retried (a webhook, the manager down) may find the namespace deleted and
  // another made under its name meanwhile. The record has the namespace's uid; a record written
  // before that field is judged by creation times.
  const MADE = "namespace ns was deleted and made again since the rollback began: the claim was the deleted namespace's";
  const LATER = Date.parse('2030-01-01T00:00:00Z');
  const EARLIER = Date.parse('2020-01-01T00:00:00Z');
  for (const [what, recorded, namespace, why] of [
    ['gone', 'ns-uid', undefined, 'namespace ns is gone'],
    ['made again (another uid), whatever the clocks say', 'ns-uid', { uid: 'ns-uid-2', created: EARLIER }, `${MADE} (uid ns-uid then, ns-uid-2 now)`],
    ['gone (a record without the uid)', undefined, undefined, 'namespace ns is gone'],
    ['made again since the rollback began (a record without the uid: by the clocks)', undefined, { uid: 'ns-uid-2', created: LATER }, MADE],
  ] as const) {
    it(`the claim's namespace ${what} when it is to be re-created: Abandoned, nothing created`, async function () {
      const w = world(recorded);
      expect((await look(w)).status?.claims?.[0]).to.include({ state: 'Deleted' });
      w.namespace = namespace;
      const r = w.store.stored<ProvisioningRollback>(ProvisioningRollbacks, w.name)!;
      expect(Date.parse(r.metadata?.creationTimestamp ?? ''), 'the record has its creation time').to.be.below(LATER);
      const done = await untilDone(w);
      expect(w.store.stored(Resources.persistentVolumeClaims, 'c', 'ns'), 'no claim created').to.equal(undefined);
      expect(done.status?.claims?.[0]).to.include({ state: 'Abandoned', message: why });
      expect(done.status?.phase).to.equal('Aborted');
    });
  }

  it('the namespace the record names by uid, its clock far ahead of the record\'s: the claim is re-created there', async function () {
    const w = world('ns-uid');
    expect((await look(w)).status?.claims?.[0]).to.include({ state: 'Deleted' });
    w.namespace = { uid: 'ns-uid', created: LATER };
    const done = await untilDone(w);
    expect(done.status?.phase).to.equal('Completed');
    expect(w.store.stored(Resources.persistentVolumeClaims, 'c', 'ns'), 'the claim is back').to.not.equal(undefined);
  });

  it('a claim of the name found in a namespace made again since the rollback began is the new tenant\'s: not adopted, the claim Abandoned', async function () {
    const w = world('ns-uid');
    expect((await look(w)).status?.claims?.[0]).to.include({ state: 'Deleted' });
    w.namespace = { uid: 'ns-uid-2', created: EARLIER };
    const theirs = w.store.seed(Resources.persistentVolumeClaims, { ...decidedClaim(), metadata: { ...decidedClaim().metadata, uid: 'uid-theirs' } });
    const done = await untilDone(w);
    expect(done.status?.claims?.[0]).to.include({ state: 'Abandoned' });
    expect(done.status?.claims?.[0]?.uid, 'their claim is not recorded as ours').to.not.equal(theirs.metadata?.uid);
    expect(reasons(w, 'ClaimAdopted')).to.deep.equal([]);
    expect(w.store.stored<PersistentVolumeClaim>(Resources.persistentVolumeClaims, 'c', 'ns')?.metadata?.uid).to.equal(theirs.metadata?.uid);
  });

  it('a claim the loop re-created itself is not said to be found', async function () {
    const w = world();
    expect((await untilDone(w)).status?.phase).to.equal('Completed');
    expect(reasons(w, 'ClaimRecreated')).to.deep.equal([['PersistentVolumeClaim', 'c']]);
    expect(reasons(w, 'ClaimAdopted')).to.deep.equal([]);
  });
});

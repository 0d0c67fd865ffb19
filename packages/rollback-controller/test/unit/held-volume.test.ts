import { expect } from 'chai';
import fc from 'fast-check';
import { isConflict, KubeApiError, logger, metricsRegistry, Resources } from '@topovol/shared';
import type { KubeObject, PersistentVolume, PersistentVolumeClaim, Pod, ResourceType } from '@topovol/shared';
import { FakeEvents, FakeWrites } from '@topovol/testing';
import { advanceRollback } from '../../src/rollback/advance-rollback.js';
import type { AdvanceDeps } from '../../src/rollback/advance-rollback.js';
import { DeletedClaimWatch } from '../../src/rollback/deleted-claim-watch.js';
import { decideHold, decideSettle } from '../../src/rollback/intent/held-volume.js';
import { decideIntent } from '../../src/rollback/intent/decide-intent.js';
import { ProvisioningRollbacks } from '../../src/rollback/intent/provisioning-rollback.js';
import type { ProvisioningRollback } from '../../src/rollback/intent/provisioning-rollback.js';
import { RollbackActuator } from '../../src/rollback/rollback-actuator.js';
import { decidedClaim, decidedVolume, rollbackRecord, thePod } from './rollback-record-fixture.js';

const HELD = 'rollback.topovol.io/reclaim-policy-held';
const RETAINED = 'rollback.topovol.io/retained-because';
const c = rollbackRecord().spec.claims[0]!;
const volume = (policy: string | undefined, annotations: Record<string, string> = {}, claimUid = 'uid-c', usage: string | null = 'unused'): PersistentVolume => {
  const v = decidedVolume();
  const labels = { ...v.metadata?.labels };
  if (usage === null) delete labels['rollback.topovol.io/usage'];
  else labels['rollback.topovol.io/usage'] = usage;
  return { ...v, metadata: { ...v.metadata, labels, resourceVersion: '7', annotations: { ...v.metadata?.annotations, ...annotations } }, spec: { ...v.spec, persistentVolumeReclaimPolicy: policy, claimRef: { ...v.spec?.claimRef, uid: claimUid } } };
};
const scheduled = (p: Pod, node = 'a'): Pod => ({ ...p, spec: { ...p.spec!, nodeName: node } });

describe('held volumes: the reclaim policy across a rolled-back claim\'s delete (decideHold, decideSettle)', function () {
  const holds: [string, PersistentVolume | undefined, string][] = [
    ['Delete, not held → held, conditional on the volume read', volume('Delete'), 'hold'],
    ['held already (a look before a crash or a Conflict): Retain → nothing', volume('Retain', { [HELD]: 'Delete' }), 'none'],
    ['a held mark, but Delete again (set back by hand) → held again', volume('Delete', { [HELD]: 'Delete' }), 'hold'],
    ['Retain → nothing (the volume stays anyway)', volume('Retain'), 'none'],
    ['Recycle → nothing', volume('Recycle'), 'none'],
    ['no policy read → nothing', volume(undefined), 'none'],
    ['gone → nothing', undefined, 'none'],
    ['marked used since the check (this read is the later one) → used: the claim is kept', volume('Delete', {}, 'uid-c', 'used'), 'used'],
    ['its usage mark gone since the check → used', volume('Retain', {}, 'uid-c', null), 'used'],
  ];
  for (const [name, v, kind] of holds) it(name, function () {
    const plan = decideHold(v);
    expect(plan.kind).to.equal(kind);
    if (plan.kind === 'hold') expect(plan.resourceVersion).to.equal('7');
  });

  const settles: [string, PersistentVolume | undefined, string | undefined, string, RegExp?][] = [
    ['held, no doubt → Delete given back', volume('Retain', { [HELD]: 'Delete' }), undefined, 'restore'],
    ['held, a doubt → left Retain with it', volume('Retain', { [HELD]: 'Delete' }), 'pod p was scheduled to node a', 'retain', /scheduled to node a/],
    ['held, bound to another claim since → left Retain, whatever the doubt', volume('Retain', { [HELD]: 'Delete' }, 'uid-other'), undefined, 'retain', /bound to claim ns\/c \(uid uid-other\)/],
    ['held, its policy changed by someone since → theirs stands, only the mark goes', volume('Delete', { [HELD]: 'Delete' }), 'a doubt', 'unmark'],
    ['not held → nothing', volume('Retain'), undefined, 'none'],
    ['not held, Delete → nothing (never ours to give)', volume('Delete'), 'a doubt', 'none'],
    ['gone → nothing', undefined, undefined, 'none'],
  ];
  for (const [name, v, doubt, kind, why] of settles) it(name, function () {
    const plan = decideSettle(v, c, doubt);
    expect(plan.kind).to.equal(kind);
    if (plan.kind !== 'none') expect(plan.resourceVersion).to.equal('7');
    if (plan.kind === 'retain') expect(plan.why).to.match(why!);
  });
});

describe('DeletedClaimWatch: what the pod watch showed of a claim from before its last check until it is gone', function () {
  it('armed and no pod of the claim scheduled → no doubt; an unscheduled one, or another claim\'s scheduled pod, changes nothing', function () {
    const w = new DeletedClaimWatch();
    w.begin('ns', 'c', 'uid-c');
    w.note(thePod);
    w.note(scheduled({ ...thePod, metadata: { ...thePod.metadata, namespace: 'other' } }));
    w.arm('ns', 'c', 'uid-c');
    expect(w.doubt('ns', 'c', 'uid-c')).to.equal(undefined);
  });
  it('a pod of the claim scheduled, noted before or after the arm → the doubt names it, and stays', function () {
    for (const before of [true, false]) {
      const w = new DeletedClaimWatch();
      w.begin('ns', 'c', 'uid-c');
      if (before) w.note(scheduled(thePod));
      w.arm('ns', 'c', 'uid-c');
      if (!before) w.note(scheduled(thePod));
      w.note(thePod);
      expect(w.doubt('ns', 'c', 'uid-c')).to.match(/pod ns\/p using claim c was scheduled to node a while claim c was being deleted/);
    }
  });
  it('never begun (a delete sent before a restart) → a doubt; begun but not armed (deleted before this process watched) → a doubt', function () {
    const w = new DeletedClaimWatch();
    expect(w.doubt('ns', 'c', 'uid-c')).to.match(/did not watch the pods of claim c since its delete/);
    w.begin('ns', 'c', 'uid-c');
    expect(w.doubt('ns', 'c', 'uid-c')).to.match(/deleted before this process watched its pods/);
  });
  it('a relist taints every entry; begun again with the same uid keeps what was seen; another uid starts afresh', function () {
    const w = new DeletedClaimWatch();
    w.begin('ns', 'c', 'uid-c');
    w.arm('ns', 'c', 'uid-c');
    w.relisted();
    w.begin('ns', 'c', 'uid-c');
    expect(w.doubt('ns', 'c', 'uid-c')).to.match(/relisted/);
    w.begin('ns', 'c', 'uid-c2');
    expect(w.doubt('ns', 'c', 'uid-c')).to.match(/did not watch/);
    w.arm('ns', 'c', 'uid-c2');
    expect(w.doubt('ns', 'c', 'uid-c2')).to.equal(undefined);
  });
  it('end forgets only the uid it names', function () {
    const w = new DeletedClaimWatch();
    w.begin('ns', 'c', 'uid-c');
    w.end('ns', 'c', 'uid-other');
    expect(w.size).to.equal(1);
    w.end('ns', 'c', 'uid-c');
    expect(w.size).to.equal(0);
  });
});

/**
 * What can happen to the claim's pods while the rollback deletes it, each a reason the volume may
 * hold data afterwards: the scheduler binds the pod between the last check and the delete (the
 * rollback's own read after the delete sees it); the pod watch delivers it scheduled after the delete;
 * the pod watch is relisted; the process restarts between the delete and the settle; the pod events
 * the watch has not delivered yet show it scheduled; the server has a VolumeAttachment of the volume
 * that the loop's watch has not delivered.
 */
type Happening = 'raced' | 'watched' | 'relisted' | 'restarted' | 'undelivered' | 'attached';

interface Run {
  store: FakeWrites;
  events: FakeEvents;
  /** The volume's policy when the claim's delete reached the store. */
  policyAtDelete?: string;
  record: ProvisioningRollback;
}

/** A rollback of claim c (volume v, `policy`) advanced look by look, with `happenings` on the way. */
/**
 * Volume writes the API server refuses (a policy guarding volumes): the hold (Delete to Retain), the
 * Delete given back, or every write after the hold.
 */
type VolumeRefusal = 'hold' | 'restore' | 'afterHold';

const refusedByPolicy = (): Error => KubeApiError.fromResponse(403, JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', code: 403, reason: 'Forbidden', message: 'persistentvolumes "v" is forbidden: ValidatingAdmissionPolicy \'guard\' denied request: volumes stay as they are' }));

/** topovol_rollback_volumes_retained_total now. */
async function retainedCount(): Promise<number> {
  const m = (await metricsRegistry.getSingleMetric('topovol_rollback_volumes_retained_total')?.get()) as { values: { value: number }[] } | undefined;
  return m?.values[0]?.value ?? 0;
}

async function roll(policy: 'Delete' | 'Retain', happenings: Happening[], opts: { conflictOnce?: boolean; keepAfterConflict?: boolean; refuse?: VolumeRefusal; refusedCreates?: number; markedUsedAfterCheck?: boolean; nominatedAtLastLook?: boolean } = {}): Promise<Run> {
  const store = new FakeWrites();
  const events = new FakeEvents();
  store.seed(Resources.persistentVolumeClaims, decidedClaim());
  store.seed(Resources.persistentVolumes, { ...decidedVolume(), spec: { ...decidedVolume().spec, persistentVolumeReclaimPolicy: policy } });
  // Recorded just now: a nominated pod's wait counts from the record's creation.
  const name = store.seed(ProvisioningRollbacks, { ...rollbackRecord(), metadata: { ...rollbackRecord().metadata, creationTimestamp: new Date().toISOString() } }).metadata.name!;
  let podScheduled = false;
  let nominatedOnce = opts.nominatedAtLastLook === true;
  const run: Run = { store, events, record: rollbackRecord() };
  let watch = new DeletedClaimWatch();
  const del = store.delete.bind(store);
  const patch = store.patch.bind(store);
  store.patch = <T extends KubeObject>(...args: Parameters<FakeWrites['patch']>): Promise<T> => {
    const to = (args[4] as PersistentVolume).spec?.persistentVolumeReclaimPolicy;
    const held = store.stored<PersistentVolume>(Resources.persistentVolumes, 'v')?.metadata?.annotations?.[HELD] !== undefined;
    const refused = opts.refuse === 'hold' ? to === 'Retain' : opts.refuse === 'restore' ? to === 'Delete' : opts.refuse === 'afterHold' && held;
    if (args[0] === Resources.persistentVolumes && refused) return Promise.reject(refusedByPolicy());
    return patch<T>(...args);
  };
  const create = store.create.bind(store);
  let refusedCreates = opts.refusedCreates ?? 0;
  store.create = <T extends KubeObject>(r: ResourceType, obj: T): Promise<T> => {
    if (r === Resources.persistentVolumeClaims && refusedCreates-- > 0) return Promise.reject(KubeApiError.fromResponse(403, JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', code: 403, reason: 'Forbidden', message: 'exceeded quota' })));
    return create<T>(r, obj);
  };
  let conflicts = 0;
  store.delete = async (...args: Parameters<FakeWrites['delete']>) => {
    if (args[0] === Resources.persistentVolumeClaims && opts.conflictOnce && conflicts++ === 0) {
      if (opts.keepAfterConflict) podScheduled = true;
      throw KubeApiError.fromResponse(409, JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', code: 409, reason: 'Conflict', message: 'the object has been modified' }));
    }
    run.policyAtDelete = store.stored<PersistentVolume>(Resources.persistentVolumes, 'v')?.spec?.persistentVolumeReclaimPolicy;
    await del(...args);
    if (happenings.includes('watched')) watch.note(scheduled(thePod));
    if (happenings.includes('relisted')) watch.relisted();
    if (happenings.includes('restarted')) watch = new DeletedClaimWatch();
  };
  const deps = (): AdvanceDeps => ({
    actuator: new RollbackActuator({ client: store, events, log: logger(), dryRun: false }),
    claimWatch: watch,
    reads: {
      claim: (ns, n) => Promise.resolve(store.stored<PersistentVolumeClaim>(Resources.persistentVolumeClaims, n, ns)),
      pods: () => Promise.resolve([podScheduled ? scheduled(thePod) : thePod]),
      volumeUse: async () => {
        const mark = store.stored<PersistentVolume>(Resources.persistentVolumes, 'v')?.metadata?.labels?.['rollback.topovol.io/usage'];
        const use = podScheduled ? 'a pod was scheduled' : mark !== 'unused' ? `its mark is ${mark ?? 'missing'}` : undefined;
        // The volume marked used right after this check answered (its read reached the server first).
        if (opts.markedUsedAfterCheck) await patch(Resources.persistentVolumes, 'v', undefined, 'merge', { metadata: { labels: { 'rollback.topovol.io/usage': 'used' } } });
        return use;
      },
      volume: (n) => Promise.resolve(store.stored<PersistentVolume>(Resources.persistentVolumes, n)),
      undeliveredPodUse: () => Promise.resolve(happenings.includes('undelivered') ? 'pod ns/p using claim c was scheduled to node a (seen in the pod events since the loop\'s watch)' : undefined),
      attached: () => Promise.resolve(happenings.includes('attached') ? 'VolumeAttachment csi-0123 exists for it (listed from the server)' : undefined),
      recreateCheck: () => Promise.resolve({ finalizers: [] }),
      namespace: () => Promise.resolve({ uid: 'ns-uid', created: 0 }),
      livePod(_ns: string, name: string, uid: string) {
        // kube-scheduler begins a binding cycle for the pod (its nomination) after the first checks, once.
        if (nominatedOnce) {
          nominatedOnce = false;
          return Promise.resolve({ ...thePod, status: { ...thePod.status, nominatedNodeName: 'a' } });
        }
    // The server's pod of that name and uid: one of the pods listed.
    return this.pods(_ns).then((ps: Pod[]) => ps.find((p) => p.metadata?.name === name && p.metadata?.uid === uid));
  },
    },
    beforeClaimDelete: () => {
      // The scheduler binds the pod in the one window no precondition closes.
      if (happenings.includes('raced')) podScheduled = true;
      return Promise.resolve();
    },
  });
  for (let look = 0; look < 10; look++) {
    const r = store.stored<ProvisioningRollback>(ProvisioningRollbacks, name)!;
    run.record = r;
    if (r.status?.phase === 'Completed' || r.status?.phase === 'Aborted') break;
    await advanceRollback(deps(), r, decideIntent(r, (ns, n) => store.stored(Resources.persistentVolumeClaims, n, ns))).catch((err: unknown) => {
      if (!isConflict(err)) throw err;
    });
  }
  return run;
}

const volumeOf = (run: Run): PersistentVolume => run.store.stored<PersistentVolume>(Resources.persistentVolumes, 'v')!;

describe('advancing a rollback: the volume is Retain while its claim goes, and gets Delete back only when no pod can have used it', function () {
  it('nothing happens: Retain when the delete lands, Delete given back before the claim is re-created, the hold\'s mark gone', async function () {
    const run = await roll('Delete', []);
    expect(run.record.status?.phase).to.equal('Completed');
    expect(run.policyAtDelete).to.equal('Retain');
    const v = volumeOf(run);
    expect(v.spec?.persistentVolumeReclaimPolicy).to.equal('Delete');
    expect(v.metadata?.annotations?.[HELD]).to.equal(undefined);
    expect(v.metadata?.annotations?.[RETAINED]).to.equal(undefined);
    expect(run.events.recorded.filter((e) => e.reason === 'ProvisioningRollbackVolumeRetained')).to.deep.equal([]);
  });

  it('the pod nominated between the hold and the delete: the delete waits a look, the volume stays held meanwhile, then Delete comes back once the claim is gone', async function () {
    const run = await roll('Delete', [], { nominatedAtLastLook: true });
    expect(run.record.status?.phase).to.equal('Completed');
    expect(run.policyAtDelete).to.equal('Retain');
    const v = volumeOf(run);
    expect([v.spec?.persistentVolumeReclaimPolicy, v.metadata?.annotations?.[HELD], v.metadata?.annotations?.[RETAINED]]).to.deep.equal(['Delete', undefined, undefined]);
    expect(run.store.stored<PersistentVolumeClaim>(Resources.persistentVolumeClaims, 'c', 'ns')?.metadata?.uid).to.not.equal('uid-c');
  });

  const doubts: [Happening, RegExp][] = [
    ['raced', /scheduled to node a while claim c was being deleted/],
    ['watched', /scheduled to node a while claim c was being deleted/],
    ['relisted', /relisted/],
    ['restarted', /did not watch the pods of claim c since its delete/],
    ['undelivered', /seen in the pod events since the loop's watch/],
    ['attached', /VolumeAttachment csi-0123 exists for it \(listed from the server\)/],
  ];
  for (const [happening, why] of doubts) it(`${happening}: left Retain, with why, a Warning on the volume; the claim is re-created all the same`, async function () {
    const run = await roll('Delete', [happening]);
    expect(run.record.status?.phase).to.equal('Completed');
    const v = volumeOf(run);
    expect(v.spec?.persistentVolumeReclaimPolicy).to.equal('Retain');
    expect(v.metadata?.annotations?.[HELD]).to.equal(undefined);
    expect(v.metadata?.annotations?.[RETAINED]).to.match(why);
    const warned = run.events.recorded.filter((e) => e.reason === 'ProvisioningRollbackVolumeRetained');
    expect(warned.map((e) => [e.kind, e.name, e.type])).to.deep.equal([['PersistentVolume', 'v', 'Warning']]);
    expect(run.store.stored<PersistentVolumeClaim>(Resources.persistentVolumeClaims, 'c', 'ns')?.metadata?.uid).to.not.equal('uid-c');
  });

  for (const policy of ['Delete', 'Retain'] as const) it(`marked used between the check and the hold's read (${policy}): the claim kept, never deleted, the volume's policy untouched`, async function () {
    const run = await roll(policy, [], { markedUsedAfterCheck: true });
    expect(run.record.status?.phase).to.equal('Aborted');
    expect(run.policyAtDelete, 'never deleted').to.equal(undefined);
    expect(run.record.status?.claims?.[0]).to.include({ name: 'c', state: 'Kept' });
    expect(run.record.status?.claims?.[0]?.message).to.match(/volume v may hold data: its mark is now used/);
    expect(run.store.stored<PersistentVolumeClaim>(Resources.persistentVolumeClaims, 'c', 'ns')?.metadata?.uid).to.equal('uid-c');
    expect(volumeOf(run).spec?.persistentVolumeReclaimPolicy).to.equal(policy);
    expect(volumeOf(run).metadata?.annotations?.[HELD]).to.equal(undefined);
  });

  it('a volume that was Retain already is never written', async function () {
    const run = await roll('Retain', ['raced']);
    const v = volumeOf(run);
    expect(v.spec?.persistentVolumeReclaimPolicy).to.equal('Retain');
    expect(v.metadata?.annotations?.[HELD]).to.equal(undefined);
    expect(v.metadata?.annotations?.[RETAINED]).to.equal(undefined);
  });

  it('held, then the delete refused (Conflict) and the claim kept on the next look: Delete given back, the claim untouched', async function () {
    const run = await roll('Delete', [], { conflictOnce: true, keepAfterConflict: true });
    expect(run.record.status?.phase).to.equal('Aborted');
    expect(run.policyAtDelete).to.equal(undefined);
    const v = volumeOf(run);
    expect(v.spec?.persistentVolumeReclaimPolicy).to.equal('Delete');
    expect(v.metadata?.annotations?.[HELD]).to.equal(undefined);
    expect(run.store.stored<PersistentVolumeClaim>(Resources.persistentVolumeClaims, 'c', 'ns')?.metadata?.uid).to.equal('uid-c');
  });

  it('held, the delete refused once, then deleted on the next look: held once, Delete given back', async function () {
    const run = await roll('Delete', [], { conflictOnce: true });
    expect(run.record.status?.phase).to.equal('Completed');
    expect(run.policyAtDelete).to.equal('Retain');
    expect(volumeOf(run).spec?.persistentVolumeReclaimPolicy).to.equal('Delete');
  });

  it("the hold refused (a policy guarding volumes): nothing deleted, the claim kept and fenced, the rollback aborted with the server's reason, the volume untouched", async function () {
    const run = await roll('Delete', [], { refuse: 'hold' });
    expect(run.record.status?.phase).to.equal('Aborted');
    expect(run.policyAtDelete, 'never deleted').to.equal(undefined);
    expect(run.record.status?.claims?.[0]).to.include({ name: 'c', state: 'Kept' });
    expect(run.record.status?.claims?.[0]?.message).to.match(/the API server refused holding volume v Retain across the claim's delete: .*volumes stay as they are/);
    const claim = run.store.stored<PersistentVolumeClaim>(Resources.persistentVolumeClaims, 'c', 'ns');
    expect(claim?.metadata?.uid).to.equal('uid-c');
    expect(claim?.metadata?.annotations?.['rollback.topovol.io/kept-by'], 'fenced').to.be.a('string');
    expect(volumeOf(run).spec?.persistentVolumeReclaimPolicy).to.equal('Delete');
    expect(volumeOf(run).metadata?.annotations?.[HELD]).to.equal(undefined);
  });

  it("Delete refused when given back: the claim is re-created all the same, the volume left Retain with the server's reason and a Warning", async function () {
    const run = await roll('Delete', [], { refuse: 'restore' });
    expect(run.record.status?.phase).to.equal('Completed');
    expect(run.store.stored<PersistentVolumeClaim>(Resources.persistentVolumeClaims, 'c', 'ns')?.metadata?.uid).to.not.equal('uid-c');
    const v = volumeOf(run);
    expect(v.spec?.persistentVolumeReclaimPolicy).to.equal('Retain');
    expect(v.metadata?.annotations?.[HELD]).to.equal(undefined);
    expect(v.metadata?.annotations?.[RETAINED]).to.match(/the API server refused giving its reclaim policy Delete back: .*volumes stay as they are/);
    const warned = run.events.recorded.filter((e) => e.reason === 'ProvisioningRollbackVolumeRetained');
    expect(warned.map((e) => [e.kind, e.name, e.type])).to.deep.equal([['PersistentVolume', 'v', 'Warning']]);
  });

  it('Delete refused when given back, and the re-create refused at three looks: the volume is said and counted once (its annotation ends the hold)', async function () {
    const before = await retainedCount();
    const run = await roll('Delete', [], { refuse: 'restore', refusedCreates: 3 });
    expect(run.record.status?.phase).to.equal('Completed');
    expect(await retainedCount()).to.equal(before + 1);
    const warned = run.events.recorded.filter((e) => e.reason === 'ProvisioningRollbackVolumeRetained');
    expect(warned.map((e) => e.message)).to.satisfy((ms: string[]) => ms.length === 1 && /give it its Delete back once the API server allows it/.test(ms[0]!));
  });

  it('every volume write after the hold refused, the re-create refused at three looks: the claim is re-created all the same, the volume Retain with the hold\'s mark, said at each look (later looks alike: one Event, aggregated), not counted', async function () {
    const before = await retainedCount();
    const run = await roll('Delete', [], { refuse: 'afterHold', refusedCreates: 3 });
    expect(await retainedCount()).to.equal(before);
    const said = run.events.recorded.filter((e) => e.reason === 'ProvisioningRollbackVolumeRetained').map((e) => e.message);
    // The first look knows no pod used it; later ones (the watch of the claim's pods ended with it)
    // no longer do, and say so, each the same (one Event, its count growing).
    expect(said[0]).to.match(/refused giving its reclaim policy Delete back/);
    expect(said.length).to.equal(4);
    expect(new Set(said.slice(1)).size).to.equal(1);
    expect(said[1]).to.match(/it may hold data/);
  });

  it('every volume write after the hold refused: the claim is re-created all the same, the volume Retain with the hold\'s mark, a Warning', async function () {
    const run = await roll('Delete', [], { refuse: 'afterHold' });
    expect(run.record.status?.phase).to.equal('Completed');
    expect(run.store.stored<PersistentVolumeClaim>(Resources.persistentVolumeClaims, 'c', 'ns')?.metadata?.uid).to.not.equal('uid-c');
    const v = volumeOf(run);
    expect([v.spec?.persistentVolumeReclaimPolicy, v.metadata?.annotations?.[HELD]]).to.deep.equal(['Retain', 'Delete']);
    const warned = run.events.recorded.filter((e) => e.reason === 'ProvisioningRollbackVolumeRetained');
    expect(warned.map((e) => e.message)).to.satisfy((ms: string[]) => ms.length === 1 && /refused giving its reclaim policy Delete back/.test(ms[0]!));
  });

  it('held, the claim kept on the next look, and Delete refused when given back: the claim kept, its volume left Retain with why', async function () {
    const run = await roll('Delete', [], { conflictOnce: true, keepAfterConflict: true, refuse: 'restore' });
    expect(run.record.status?.phase).to.equal('Aborted');
    expect(run.store.stored<PersistentVolumeClaim>(Resources.persistentVolumeClaims, 'c', 'ns')?.metadata?.uid).to.equal('uid-c');
    const v = volumeOf(run);
    expect(v.spec?.persistentVolumeReclaimPolicy).to.equal('Retain');
    expect(v.metadata?.annotations?.[RETAINED]).to.match(/refused giving its reclaim policy Delete back/);
  });

  it('property: the claim\'s delete always lands on a Retain volume, and Delete comes back exactly when nothing could have used it', async function () {
    await fc.assert(
      fc.asyncProperty(fc.subarray<Happening>(['raced', 'watched', 'relisted', 'restarted', 'undelivered', 'attached']), fc.boolean(), async (happenings, conflictOnce) => {
        const run = await roll('Delete', happenings, { conflictOnce });
        const v = volumeOf(run);
        expect(v.metadata?.annotations?.[HELD]).to.equal(undefined);
        // The pod scheduled in the window of a delete that was refused: the next look keeps the
        // claim, never deleted, and its volume's Delete is its own again.
        if (conflictOnce && happenings.includes('raced')) {
          expect(run.record.status?.phase).to.equal('Aborted');
          expect(run.policyAtDelete).to.equal(undefined);
          expect(v.spec?.persistentVolumeReclaimPolicy).to.equal('Delete');
          return;
        }
        expect(run.record.status?.phase).to.equal('Completed');
        expect(run.policyAtDelete).to.equal('Retain');
        expect(v.spec?.persistentVolumeReclaimPolicy).to.equal(happenings.length === 0 ? 'Delete' : 'Retain');
      }),
      { numRuns: 60 },
    );
  });
});

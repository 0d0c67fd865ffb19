import { expect } from 'chai';
import { ANN_BOUND_BY_CONTROLLER, FirstSeen, isConflict, KubeApiError, logger, Resources } from '@topovol/shared';
import type { KubeClient, KubeObject, PatchOptions, PatchType, PersistentVolume, PersistentVolumeClaim, ResourceType } from '@topovol/shared';
import { FakeEvents, FakeWrites } from '@topovol/testing';
import type { BinderAction, SelectedNodeConfirmation } from '../../src/binder/actions.js';
import { BinderActuator } from '../../src/binder/actuator.js';
import { AssumeCache } from '../../src/binder/assume-cache.js';
import { decideClaim } from '../../src/binder/decide-claim.js';
import { BinderReconciler } from '../../src/binder/reconcile-binder.js';
import { boundByUpstream, UPSTREAM_MANAGER } from '../../src/binder/second-binder.js';
import type { SelectedNodeIssueSeen } from '../../src/binder/selected-node-checks.js';
import { selectedNodeIssueRefuted, StaleViewError, verifyOnServer } from '../../src/binder/verify-on-server.js';
import { decided, ref, summary } from './decision-summary.js';
import type { DecisionCase } from './decision-summary.js';
import { claim, pod, sc, vol, world } from './world-fixture.js';
import type { WorldInput } from './world-fixture.js';

// The release / reclaim path and the server checks and writes around it: edges a mutation run of
// reclaim-volume, decide-volume, decide-bound-claim, verify-on-server, actuator, selected-node-checks,
// wait-for-consumer, assume-cache and reconcile-binder found no unit test held (each case below
// fails with the guard it names removed or inverted). Data-losing ones first.

const WFFC = { volumeBindingMode: 'WaitForFirstConsumer' } as const;
const SEL = 'volume.kubernetes.io/selected-node';
const BIND_COMPLETED = { 'pv.kubernetes.io/bind-completed': 'yes' };
const notFound = (plural: string, name: string): KubeApiError => new KubeApiError(404, { kind: 'Status', reason: 'NotFound', message: `${plural} "${name}" not found`, details: { name, kind: plural } });
/** A client for the server checks: claims by name, volumes by list; any other call fails the test. */
const serving = (o: { claims?: PersistentVolumeClaim[]; volumes?: PersistentVolume[] }, reads: string[] = []): KubeClient =>
  ({
    get: (r: ResourceType, name: string, ns?: string) => {
      reads.push(`get ${r.plural} ${ns ?? ''}/${name}`);
      if (r.plural !== 'persistentvolumeclaims') return Promise.reject(new Error(`unexpected get of ${r.plural}`));
      const found = o.claims?.find((c) => c.metadata?.name === name && c.metadata.namespace === ns);
      return found ? Promise.resolve(structuredClone(found)) : Promise.reject(notFound(r.plural, name));
    },
    list: (r: ResourceType) => {
      reads.push(`list ${r.plural}`);
      return r.plural === 'persistentvolumes' ? Promise.resolve({ items: structuredClone(o.volumes ?? []) }) : Promise.reject(new Error(`unexpected list of ${r.plural}`));
    },
  }) as unknown as KubeClient;


const decisions: DecisionCase[] = [
  {
    // decide-bound-claim: without the name check, the volume keeps a claimRef naming no claim: its
    // sync finds "ns/old" gone (the server agrees) and releases it to its reclaim policy.
    name: "a Bound claim whose volume's claimRef has its uid but another name: the claimRef is repaired, the volume not released",
    decide: 'claim',
    claim: claim('c', '1Gi', { volumeName: 'v', annotations: BIND_COMPLETED, phase: 'Bound' }),
    w: { volumes: [vol('v', '1Gi', { phase: 'Bound', claimRef: ref('old', { uid: 'uid-c' }) })] },
    want: ['bindVolume v', 'claimPhase Bound'],
  },
  {
    // reclaim-volume / decide-volume: upstream's recycleVolumeOperation looks for users only when
    // the claim is not cached (`used && !claimCached`): the pods of a claim re-created under the
    // same name use another volume.
    name: 'Recycle, its claim re-created under the same name and used by a running pod: Failed (no recycler), not held as used',
    decide: 'volume',
    volume: vol('v', '1Gi', { persistentVolumeReclaimPolicy: 'Recycle', phase: 'Bound', claimRef: ref('c', { uid: 'uid-old' }) }),
    w: { claims: [claim('c', '1Gi', { volumeName: 'other' })], pods: [pod('p', 'c', 'n1', 'Running')] },
    want: ['volumePhase Released', 'volumePhase Failed', 'event Warning VolumeFailedRecycle'],
  },
  // wait-for-consumer (upstream's findNonScheduledPodsByPVC and emitEventForUnboundDelayBindingClaim).
  {
    name: 'a delayed-binding claim whose only unscheduled pod has terminated waits for a first consumer, not for that pod',
    decide: 'claim',
    claim: claim('c', '1Gi', { storageClassName: 'late' }),
    w: { classes: [sc('late', WFFC)], pods: [pod('gone', 'c', undefined, 'Failed')] },
    want: ['event Normal WaitForFirstConsumer'],
  },
  {
    name: 'a delayed-binding claim with a stale Bound status and no consumer is reset to Pending',
    decide: 'claim',
    claim: claim('c', '1Gi', { storageClassName: 'late', phase: 'Bound' }),
    w: { classes: [sc('late', WFFC)] },
    want: ['event Normal WaitForFirstConsumer', 'claimPhase Pending'],
  },
];

describe('reclaim and release: decisions a mutation run found untested', function () {
  for (const c of decisions) {
    it(c.name, function () {
      expect(decided(c)).to.deep.equal(c.want);
    });
  }

  const messageOf = (actions: BinderAction[], reason: string): string | undefined => actions.flatMap((a) => (a.kind === 'event' && a.reason === reason ? [a.message] : []))[0];

  it('a bind-completed claim that names no volume is Lost with upstream\'s "lost reference" Warning, not "lost its PersistentVolume"', function () {
    const actions = decideClaim(claim('c', '1Gi', { annotations: BIND_COMPLETED, phase: 'Bound' }), world());
    expect(summary(actions)).to.deep.equal(['claimPhase Lost', 'event Warning ClaimLost']);
    expect(messageOf(actions, 'ClaimLost')).to.equal('Bound claim has lost reference to PersistentVolume. Data on the volume is lost!');
  });

  it('one unscheduled pod: "waiting for pod p to be scheduled" (singular, as upstream)', function () {
    const actions = decideClaim(claim('c', '1Gi', { storageClassName: 'late' }), world({ classes: [sc('late', WFFC)], pods: [pod('p', 'c')] }));
    expect(messageOf(actions, 'WaitForPodScheduled')).to.equal('waiting for pod p to be scheduled');
  });
});

describe('selected-node removal: the server check that a provisioner is not at work', function () {
  const NOW = 10_000_000;
  const GRACE = 60_000;
  const WAITING = claim('c', '1Gi', { storageClassName: 'late', annotations: { [SEL]: 'n1' } });
  /** The confirmation decideClaim asks for a gone node once the grace has passed with no activity in the cache. */
  function goneConfirmation(): SelectedNodeConfirmation {
    const actions = decideClaim(WAITING, world({ classes: [sc('late', WFFC)], nodes: [], now: NOW, graceMs: GRACE, noted: { issue: 'gone', node: 'n1', since: 0 } }));
    const strip = actions.find((a): a is Extract<BinderAction, { kind: 'annotateClaim' }> => a.kind === 'annotateClaim');
    expect(strip?.confirm, summary(actions).join('; ')).to.not.equal(undefined);
    return strip!.confirm!;
  }
  const gone = (provisioning: number[]) => selectedNodeIssueRefuted(WAITING, goneConfirmation(), { kind: 'node', node: undefined, provisioning });

  it('gone node: a Provisioning Event on the server within the grace (the cache missed it) keeps the annotation', function () {
    expect(gone([NOW - GRACE / 2])).to.match(/the provisioner has been at work/);
  });

  it('gone node: a Provisioning Event on the server older than the grace does not keep it for ever (the provisioner gave up too)', function () {
    expect(gone([NOW - 2 * GRACE])).to.equal(undefined);
  });

  it('gone node: an Event exactly at the start of the grace is quiet for the whole grace, as the decision counted it', function () {
    expect(gone([NOW - GRACE])).to.equal(undefined);
  });

  it("noConsumer: an unscheduled pod of another claim in the namespace (the server lists them all) does not keep this claim's node", function () {
    const confirm: SelectedNodeConfirmation = { issue: 'noConsumer', node: 'n1', quietSince: -Infinity };
    expect(selectedNodeIssueRefuted(WAITING, confirm, { kind: 'pods', pods: [pod('other', 'other-claim')], provisioning: [] })).to.equal(undefined);
    expect(selectedNodeIssueRefuted(WAITING, confirm, { kind: 'pods', pods: [pod('mine', 'c')], provisioning: [] })).to.match(/has a pod that may use it/);
  });
});

describe('verifyOnServer: Released waits for the server, other phases do not', function () {
  const released = vol('v1', '1Gi', { phase: 'Bound', claimRef: ref('c', { uid: 'uid-c' }), persistentVolumeReclaimPolicy: 'Delete', annotations: { 'pv.kubernetes.io/provisioned-by': 'csi.example.com' } });
  const release: BinderAction[] = [
    { kind: 'volumePhase', volume: released, phase: 'Released' },
    { kind: 'event', target: released, type: 'Normal', reason: 'x', message: 'y' },
  ];

  it('the cache lost the claim but the server still has it, bound to this volume: refused, nothing released', async function () {
    const reads: string[] = [];
    const refuted = await verifyOnServer(serving({ claims: [claim('c', '1Gi', { volumeName: 'v1', phase: 'Bound' })] }, reads), release);
    expect(reads).to.deep.equal(['get persistentvolumeclaims ns/c']);
    expect([refuted?.index, refuted?.check]).to.deep.equal([0, 'release']);
    expect(refuted?.why).to.match(/claim ns\/c still exists; not releasing volume v1/);
  });

  it('the server has the claim, not bound yet: refused', async function () {
    expect((await verifyOnServer(serving({ claims: [claim('c', '1Gi')] }), release))?.check).to.equal('release');
  });

  // A take-back of an unfinished binding (orphaned-bind.ts) goes through the same read: the cache
  // may not show a claim kube-scheduler has just pre-bound a volume for.
  const unfinished: PersistentVolume = { ...released, metadata: { ...released.metadata, annotations: { 'pv.kubernetes.io/bound-by-controller': 'yes' } }, status: { phase: 'Available' } };
  const takeBack: BinderAction[] = [{ kind: 'unbindVolume', volume: unfinished, keepClaimRef: true, takeBack: 'the claim is gone' }];
  it('a take-back, the server still has the claim the cache had not seen: refused (check take_back)', async function () {
    const reads: string[] = [];
    const refuted = await verifyOnServer(serving({ claims: [claim('c', '1Gi', { uid: unfinished.spec?.claimRef?.uid })] }, reads), takeBack);
    expect(reads).to.deep.equal(['get persistentvolumeclaims ns/c']);
    expect([refuted?.index, refuted?.check]).to.deep.equal([0, 'take_back']);
  });
  it('a take-back, the claim gone on the server too: confirmed', async function () {
    expect(await verifyOnServer(serving({}), takeBack)).to.equal(undefined);
  });

  it('the server has a claim of that name with another uid (re-created): released', async function () {
    expect(await verifyOnServer(serving({ claims: [claim('c', '1Gi', { uid: 'uid-new' })] }), release)).to.equal(undefined);
  });

  it('Bound, Available and Failed of a volume with a claimRef, and a claim phase other than Lost, read nothing from the server', async function () {
    const reads: string[] = [];
    const live = claim('c', '1Gi', { volumeName: 'v1', phase: 'Bound' });
    const plan: BinderAction[] = [
      { kind: 'volumePhase', volume: released, phase: 'Bound' },
      { kind: 'volumePhase', volume: released, phase: 'Failed', message: 'm' },
      { kind: 'volumePhase', volume: released, phase: 'Available' },
      { kind: 'claimPhase', claim: live, phase: 'Bound', volume: released },
      { kind: 'claimPhase', claim: live, phase: 'Pending' },
    ];
    expect(await verifyOnServer(serving({ claims: [live], volumes: [{ ...released, status: { phase: 'Bound' } }] }, reads), plan)).to.equal(undefined);
    expect(reads).to.deep.equal([]);
  });
});

describe('binder actuator: the claimRef a binding leaves on the volume', function () {
  let store: FakeWrites;
  const actuator = (volumes = new AssumeCache<PersistentVolume>(), claims = new AssumeCache<PersistentVolumeClaim>()): BinderActuator =>
    new BinderActuator({ client: store, events: new FakeEvents(), volumes, claims, log: logger(), dryRun: false });
  beforeEach(function () {
    store = new FakeWrites();
  });

  // A claimRef naming another claim (or none with this uid) makes the volume's sync release it
  // while its claim is Bound to it: with Delete, its provisioner deletes the data.
  const refs: [string, ReturnType<typeof ref>][] = [
    ['pre-bound by name only (no uid): the uid is written, or the claim goes Lost as misbound', ref('c')],
    ['its uid but another name: the name is repaired', ref('old', { uid: 'uid-c' })],
    ['its uid but another namespace: the namespace is repaired', ref('c', { namespace: 'elsewhere', uid: 'uid-c' })],
  ];
  for (const [name, claimRef] of refs) {
    it(`bindVolume of a volume ${name}`, async function () {
      const v = store.seed(Resources.persistentVolumes, vol('v', '1Gi', { claimRef }));
      const c = store.seed(Resources.persistentVolumeClaims, claim('c', '1Gi'));
      await actuator().run([{ kind: 'bindVolume', volume: v, claim: c, boundByController: false }]);
      const after = store.stored<PersistentVolume>(Resources.persistentVolumes, 'v');
      expect(after?.spec?.claimRef).to.include({ namespace: 'ns', name: 'c', uid: 'uid-c' });
      expect(after?.status?.phase).to.equal('Bound');
    });
  }

  it("the claim's status PUT after its binding carries the answer's resourceVersion: a status written in between is not overwritten", async function () {
    /** Another writer sets a status condition right after the binder's claim patch is answered. */
    class Interleaved extends FakeWrites {
      override async patch<T extends KubeObject>(r: ResourceType, name: string, namespace: string | undefined, type: PatchType, patch: unknown, opts: PatchOptions = {}): Promise<T> {
        const answer = await super.patch<T>(r, name, namespace, type, patch, opts);
        if (r === Resources.persistentVolumeClaims && !opts.subresource) {
          await super.patch(r, name, namespace, 'merge', { status: { conditions: [{ type: 'Resizing', status: 'True' }] } }, { subresource: 'status' });
        }
        return answer;
      }
    }
    store = new Interleaved();
    const v = store.seed(Resources.persistentVolumes, vol('v', '1Gi', { phase: 'Bound', claimRef: ref('c', { uid: 'uid-c' }) }));
    const c = store.seed(Resources.persistentVolumeClaims, claim('c', '1Gi'));
    const err = await actuator()
      .run([{ kind: 'bindClaim', claim: c, volume: v, boundByController: true }])
      .then(() => undefined, (e: unknown) => e);
    expect(isConflict(err), `expected a Conflict, got ${String(err)}`).to.equal(true);
    expect(store.stored<PersistentVolumeClaim>(Resources.persistentVolumeClaims, 'c', 'ns')?.status?.conditions).to.deep.equal([{ type: 'Resizing', status: 'True' }]);
  });

  it("a written claim is assumed (upstream's storeClaimUpdate): the next decision sees its volumeName before the informer does", async function () {
    const v = store.seed(Resources.persistentVolumes, vol('v', '1Gi', { phase: 'Bound', claimRef: ref('c', { uid: 'uid-c' }) }));
    const c = store.seed(Resources.persistentVolumeClaims, claim('c', '1Gi'));
    const claims = new AssumeCache<PersistentVolumeClaim>();
    await actuator(undefined, claims).run([{ kind: 'bindClaim', claim: c, volume: v, boundByController: true }]);
    expect(claims.get('ns/c', c)?.spec?.volumeName).to.equal('v');
  });

  it('a write the server refuses assumes nothing (the index would show a volume unbound that is not)', async function () {
    const assumed: string[] = [];
    const volumes = new AssumeCache<PersistentVolume>({ onAssume: (o) => assumed.push(o.metadata?.name ?? '') });
    const v = store.seed(Resources.persistentVolumes, vol('v', '1Gi', { phase: 'Bound', annotations: { [ANN_BOUND_BY_CONTROLLER]: 'yes' }, claimRef: ref('c', { uid: 'uid-c' }) }));
    await store.patch(Resources.persistentVolumes, 'v', undefined, 'merge', { metadata: { labels: { other: 'writer' } } });
    for (const a of [{ kind: 'unbindVolume', volume: v, keepClaimRef: false }, { kind: 'volumePhase', volume: v, phase: 'Released' }] satisfies BinderAction[]) {
      const err = await actuator(volumes)
        .run([a])
        .then(() => undefined, (e: unknown) => e);
      expect(isConflict(err), `${a.kind}: expected a Conflict, got ${String(err)}`).to.equal(true);
    }
    expect(assumed).to.deep.equal([]);
    expect(volumes.get('v', v)).to.equal(v);
  });
});

describe('binder reconcile: what was assumed is dropped when the server refuses the plan', function () {
  function setup(client: KubeClient, w: WorldInput, store = new FakeWrites()) {
    const volumes = new AssumeCache<PersistentVolume>();
    const claims = new AssumeCache<PersistentVolumeClaim>();
    const actuator = new BinderActuator({ client: store, events: new FakeEvents(), volumes, claims, log: logger(), dryRun: false });
    const r = new BinderReconciler({
      world: world(w),
      client,
      actuator,
      volumes,
      claims,
      inFlight: new Set(),
      requeueClaims: () => undefined,
      selectedNodeIssues: new FirstSeen<SelectedNodeIssueSeen>(),
      dryRun: false,
    });
    return { r, volumes, claims, store };
  }
  const failure = (p: Promise<unknown>): Promise<unknown> => p.then(() => undefined, (e: unknown) => e);

  it('a binding refused with 409: the assumed copies of the claim and of the volume it picked are forgotten, the retry reads the informer', async function () {
    const informerVolume = vol('v', '1Gi');
    const informerClaim = claim('c', '1Gi');
    const store = new FakeWrites();
    // The server has moved on from both copies: another writer took the volume.
    store.seed(Resources.persistentVolumes, { ...vol('v', '1Gi', { claimRef: ref('x', { uid: 'uid-x' }) }), metadata: { name: 'v', resourceVersion: '9' } });
    store.seed(Resources.persistentVolumeClaims, informerClaim);
    const { r, volumes, claims } = setup(serving({}), { volumes: [informerVolume], claims: [informerClaim] }, store);
    // Copies from earlier writes of ours, newer than the informer's, older than the server's.
    const ourVolume: PersistentVolume = { ...informerVolume, metadata: { ...informerVolume.metadata, resourceVersion: '5' } };
    const ourClaim: PersistentVolumeClaim = { ...informerClaim, metadata: { ...informerClaim.metadata, resourceVersion: '4' } };
    volumes.assume('v', ourVolume);
    claims.assume('ns/c', ourClaim);
    expect(isConflict(await failure(r.claim('ns', 'c')))).to.equal(true);
    expect(volumes.get('v', informerVolume)).to.equal(informerVolume);
    expect(claims.get('ns/c', informerClaim)).to.equal(informerClaim);
  });

  it('a plan the server refutes (StaleViewError: Lost, the volume is there) forgets the assumed claim too', async function () {
    const informerClaim = claim('c', '1Gi', { volumeName: 'v', annotations: BIND_COMPLETED, phase: 'Bound' });
    const onServer = vol('v', '1Gi', { phase: 'Bound', claimRef: ref('c', { uid: 'uid-c' }) });
    const { r, claims } = setup(serving({ volumes: [onServer] }), { claims: [informerClaim] });
    claims.assume('ns/c', { ...informerClaim, metadata: { ...informerClaim.metadata, resourceVersion: '4' } });
    expect(await failure(r.claim('ns', 'c'))).to.be.instanceOf(StaleViewError);
    expect(claims.get('ns/c', informerClaim)).to.equal(informerClaim);
  });
});

describe('boundByUpstream: only a claimRef kube-controller-manager owns', function () {
  it("kube-controller-manager owns another spec field, kubectl wrote the claimRef: not a second binder", function () {
    const managedFields = [
      { manager: UPSTREAM_MANAGER, operation: 'Update', apiVersion: 'v1', fieldsType: 'FieldsV1', fieldsV1: { 'f:spec': { 'f:persistentVolumeReclaimPolicy': {} } } },
      { manager: 'kubectl-patch', operation: 'Update', apiVersion: 'v1', fieldsType: 'FieldsV1', fieldsV1: { 'f:spec': { 'f:claimRef': {} } } },
    ];
    const raw: PersistentVolume = { metadata: { name: 'v', uid: 'uid-v', managedFields }, spec: { claimRef: ref('c', { uid: 'u' }) } };
    const cached: PersistentVolume = { metadata: { name: 'v', uid: 'uid-v' }, spec: {} };
    expect(boundByUpstream(raw, cached)).to.equal(false);
  });
});

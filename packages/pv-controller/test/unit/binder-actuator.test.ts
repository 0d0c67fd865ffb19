import { expect } from 'chai';
import { ANN_BIND_COMPLETED, ANN_BOUND_BY_CONTROLLER, isConflict, logger, projectClaim, Resources } from '@topovol/shared';
import type { Logger, PersistentVolume, PersistentVolumeClaim } from '@topovol/shared';
import type { BinderAction } from '../../src/binder/actions.js';
import { BinderActuator } from '../../src/binder/actuator.js';
import { AssumeCache } from '../../src/binder/assume-cache.js';
import { FakeEvents, FakeWrites } from '@topovol/testing';
import { claim, vol } from './world-fixture.js';

// The binder actuator over an in-memory store that enforces preconditions like the API server:
// the end state of the store for each action kind, and that a decision made on an older
// resourceVersion changes nothing. The real server is test/integration/binder-actuator.test.ts.
const SEL = 'volume.kubernetes.io/selected-node';
const boundTo = (): PersistentVolume => vol('v', '1Gi', { phase: 'Bound', annotations: { [ANN_BOUND_BY_CONTROLLER]: 'yes' }, claimRef: { namespace: 'ns', name: 'c', uid: 'uid-c' } });

interface Case {
  name: string;
  volume?: PersistentVolume;
  claim?: PersistentVolumeClaim;
  actions: (v: PersistentVolume, c: PersistentVolumeClaim) => BinderAction[];
  /** The stored volume and claim afterwards. */
  then: (v: PersistentVolume | undefined, c: PersistentVolumeClaim | undefined) => void;
}

const cases: Case[] = [
  {
    name: 'bindVolume: claimRef to the claim (with its uid and resourceVersion), bound-by-controller, phase Bound',
    actions: (v, c) => [{ kind: 'bindVolume', volume: v, claim: c, boundByController: true }],
    then: (v) => {
      expect(v?.spec?.claimRef).to.deep.equal({ kind: 'PersistentVolumeClaim', apiVersion: 'v1', namespace: 'ns', name: 'c', uid: 'uid-c', resourceVersion: '1' });
      expect(v?.metadata?.annotations).to.deep.equal({ [ANN_BOUND_BY_CONTROLLER]: 'yes' });
      expect(v?.status).to.deep.equal({ phase: 'Bound' });
    },
  },
  {
    name: "bindVolume of a user's pre-binding: the claimRef and annotations stay, only the phase is written",
    volume: vol('v', '1Gi', { claimRef: { namespace: 'ns', name: 'c', uid: 'uid-c' } }),
    actions: (v, c) => [{ kind: 'bindVolume', volume: v, claim: c, boundByController: false }],
    then: (v) => {
      expect(v?.spec?.claimRef).to.deep.equal({ namespace: 'ns', name: 'c', uid: 'uid-c' });
      expect(v?.metadata?.annotations).to.equal(undefined);
      expect(v?.status?.phase).to.equal('Bound');
    },
  },
  {
    name: 'bindClaim: volumeName, bind-completed and bound-by-controller, status Bound with the volume capacity and access modes',
    actions: (v, c) => [{ kind: 'bindClaim', claim: c, volume: v, boundByController: true }],
    then: (_v, c) => {
      expect(c?.spec?.volumeName).to.equal('v');
      expect(c?.metadata?.annotations).to.deep.equal({ [ANN_BIND_COMPLETED]: 'yes', [ANN_BOUND_BY_CONTROLLER]: 'yes' });
      expect(c?.status).to.deep.equal({ phase: 'Bound', accessModes: ['ReadWriteOnce'], capacity: { storage: '1Gi' } });
    },
  },
  {
    name: 'bindClaim keeps an annotation value already there (upstream sets a mark only when absent)',
    claim: claim('c', '1Gi', { annotations: { [ANN_BOUND_BY_CONTROLLER]: 'set-by-someone' } }),
    actions: (v, c) => [{ kind: 'bindClaim', claim: c, volume: v, boundByController: true }],
    then: (_v, c) => expect(c?.metadata?.annotations).to.deep.equal({ [ANN_BIND_COMPLETED]: 'yes', [ANN_BOUND_BY_CONTROLLER]: 'set-by-someone' }),
  },
  {
    name: 'two actions on one volume: the second builds on the first write (its resourceVersion), not on the decision copy',
    actions: (v, c) => [
      { kind: 'updateVolumeMeta', volume: v, set: { a: '1' } },
      { kind: 'bindVolume', volume: v, claim: c, boundByController: true },
    ],
    then: (v) => {
      expect(v?.metadata?.annotations).to.deep.equal({ a: '1', [ANN_BOUND_BY_CONTROLLER]: 'yes' });
      expect(v?.spec?.claimRef?.uid).to.equal('uid-c');
      expect(v?.status?.phase).to.equal('Bound');
    },
  },
  {
    name: "volumePhase: the phase and the Event's message",
    volume: boundTo(),
    actions: (v) => [{ kind: 'volumePhase', volume: v, phase: 'Failed', message: 'no recycler' }],
    then: (v) => expect(v?.status).to.deep.equal({ phase: 'Failed', message: 'no recycler' }),
  },
  {
    name: 'claimPhase Lost: access modes and capacity are cleared',
    claim: { ...claim('c', '1Gi', { volumeName: 'v' }), status: { phase: 'Bound', accessModes: ['ReadWriteOnce'], capacity: { storage: '1Gi' } } },
    actions: (_v, c) => [{ kind: 'claimPhase', claim: c, phase: 'Lost' }],
    then: (_v, c) => {
      expect(c?.status).to.deep.equal({ phase: 'Lost' });
      expect(c?.spec?.volumeName).to.equal('v');
    },
  },
  {
    name: "unbindVolume of the controller's binding: claimRef and bound-by-controller removed, phase Available",
    volume: boundTo(),
    actions: (v) => [{ kind: 'unbindVolume', volume: v, keepClaimRef: false }],
    then: (v) => {
      expect(v?.spec?.claimRef).to.equal(undefined);
      expect(v?.metadata?.annotations).to.deep.equal({});
      expect(v?.status).to.deep.equal({ phase: 'Available' });
    },
  },
  {
    name: "unbindVolume of a user's pre-binding: the claimRef keeps its name and loses its uid",
    volume: boundTo(),
    actions: (v) => [{ kind: 'unbindVolume', volume: v, keepClaimRef: true }],
    then: (v) => {
      expect(v?.spec?.claimRef).to.deep.equal({ namespace: 'ns', name: 'c' });
      expect(v?.status?.phase).to.equal('Available');
    },
  },
  {
    name: 'annotateClaim: sets and removes annotations, leaves the others',
    claim: claim('c', '1Gi', { annotations: { keep: 'k', [SEL]: 'n1' } }),
    actions: (_v, c) => [{ kind: 'annotateClaim', claim: c, set: { added: 'a' }, remove: [SEL] }],
    then: (_v, c) => expect(c?.metadata?.annotations).to.deep.equal({ keep: 'k', added: 'a' }),
  },
  {
    name: 'updateVolumeMeta: annotations set and removed, the named finalizers removed',
    volume: { ...vol('v', '1Gi', { annotations: { old: 'o', keep: 'k' } }), metadata: { name: 'v', resourceVersion: '1', annotations: { old: 'o', keep: 'k' }, finalizers: ['a/f', 'b/f'] } },
    actions: (v) => [{ kind: 'updateVolumeMeta', volume: v, set: { added: 'a' }, remove: ['old'], removeFinalizers: ['a/f'] }],
    then: (v) => {
      expect(v?.metadata?.annotations).to.deep.equal({ keep: 'k', added: 'a' });
      expect(v?.metadata?.finalizers).to.deep.equal(['b/f']);
    },
  },
  {
    name: "setClaimClass: the claim's storageClassName",
    actions: (_v, c) => [{ kind: 'setClaimClass', claim: c, storageClassName: 'fast' }],
    then: (_v, c) => expect(c?.spec?.storageClassName).to.equal('fast'),
  },
];

describe('binder actuator over an in-memory API server', function () {
  let store: FakeWrites;
  let events: FakeEvents;
  const actuator = (dryRun = false): BinderActuator => new BinderActuator({ client: store, events, volumes: new AssumeCache(), claims: new AssumeCache(), log: logger(), dryRun });
  const seed = (c: Case): [PersistentVolume, PersistentVolumeClaim] => [store.seed(Resources.persistentVolumes, c.volume ?? vol('v', '1Gi')), store.seed(Resources.persistentVolumeClaims, c.claim ?? claim('c', '1Gi'))];
  const stored = (): [PersistentVolume | undefined, PersistentVolumeClaim | undefined] => [
    store.stored<PersistentVolume>(Resources.persistentVolumes, 'v'),
    store.stored<PersistentVolumeClaim>(Resources.persistentVolumeClaims, 'c', 'ns'),
  ];

  beforeEach(function () {
    store = new FakeWrites();
    events = new FakeEvents();
  });

  for (const c of cases) {
    it(c.name, async function () {
      const [v, cl] = seed(c);
      await actuator().run(c.actions(v, cl));
      c.then(...stored());
    });
  }

  for (const c of cases) {
    it(`a stale decision writes nothing (409 Conflict, store unchanged): ${c.name.split(':')[0]}`, async function () {
      const [v, cl] = seed(c);
      // Someone else writes both objects after the decision was made.
      await store.patch(Resources.persistentVolumes, 'v', undefined, 'merge', { metadata: { labels: { other: 'writer' } } });
      await store.patch(Resources.persistentVolumeClaims, 'c', 'ns', 'merge', { metadata: { labels: { other: 'writer' } } });
      const before = store.snapshot();
      const err = await actuator()
        .run(c.actions(v, cl))
        .then(() => undefined, (e: unknown) => e);
      expect(isConflict(err), `expected a Conflict, got ${String(err)}`).to.equal(true);
      expect(store.snapshot()).to.deep.equal(before);
    });
  }

  // The claim informer caches projectClaim's copy: a write decided on it must leave what the copy
  // lacks as the server has it (the store keeps metadata sent to a core object's status, as
  // kube-apiserver's claim status strategy does).
  for (const c of cases) {
    it(`decided on the cached projection, keeps the claim's labels, finalizers, other annotations and status conditions: ${c.name.split(':')[0]}`, async function () {
      const base = c.claim ?? claim('c', '1Gi');
      const extras = {
        labels: { app: 'db' },
        annotations: { 'example.com/note': 'kept' },
        finalizers: ['kubernetes.io/pvc-protection'],
        ownerReferences: [{ apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'db', uid: 'sts-uid', controller: true }],
      };
      const [v, cl] = seed({ ...c, claim: { ...base, metadata: { ...base.metadata, ...extras, annotations: { ...base.metadata?.annotations, ...extras.annotations } }, status: { ...base.status, conditions: [{ type: 'Resizing', status: 'True' }] } } });
      await actuator().run(c.actions(v, projectClaim(cl)));
      const after = stored()[1];
      expect(after?.metadata?.labels).to.deep.equal(extras.labels);
      expect(after?.metadata?.annotations).to.include(extras.annotations);
      expect(after?.metadata?.finalizers).to.deep.equal(extras.finalizers);
      expect(after?.metadata?.ownerReferences).to.deep.equal(extras.ownerReferences);
      expect(after?.status?.conditions).to.deep.equal([{ type: 'Resizing', status: 'True' }]);
    });
  }

  it('dry-run writes nothing and still records the Events', async function () {
    const [v, cl] = seed({ name: 'all', actions: () => [], then: () => undefined });
    const before = store.snapshot();
    const all = cases.flatMap((c) => c.actions(v, cl));
    await actuator(true).run([...all, { kind: 'event', target: cl, type: 'Normal', reason: 'WouldBind', message: 'm' }]);
    expect(store.snapshot()).to.deep.equal(before);
    expect(events.recorded).to.deep.equal([{ kind: 'PersistentVolumeClaim', name: 'c', type: 'Normal', reason: 'WouldBind', message: 'm' }]);
  });

  it('an event action records the Event and writes nothing; requeueAfter and noteSelectedNodeIssue write nothing', async function () {
    const [v, cl] = seed({ name: 'events', actions: () => [], then: () => undefined });
    const before = store.snapshot();
    await actuator().run([
      { kind: 'event', target: v, type: 'Warning', reason: 'VolumeFailedRecycle', message: 'no recycler' },
      { kind: 'requeueAfter', ms: 1000 },
      { kind: 'noteSelectedNodeIssue', claim: cl, issue: undefined, node: 'n1', at: 0 },
    ]);
    expect(store.snapshot()).to.deep.equal(before);
    expect(events.recorded).to.deep.equal([{ kind: undefined, name: 'v', type: 'Warning', reason: 'VolumeFailedRecycle', message: 'no recycler' }]);
  });

  it('a Warning the recorder lets through is logged at info too (bad input gets a log line); a Normal one, or one the spam filter drops, is not', async function () {
    const [v, cl] = seed({ name: 'logged', actions: () => [], then: () => undefined });
    const lines: { msg: string; meta: Record<string, unknown> }[] = [];
    const log = { info: (msg: string, meta: Record<string, unknown>) => lines.push({ msg, meta }) } as unknown as Logger;
    let admit = true;
    const gate = { event: () => admit };
    const act = new BinderActuator({ client: store, events: gate, volumes: new AssumeCache(), claims: new AssumeCache(), log, dryRun: false });
    await act.run([
      { kind: 'event', target: { ...v, kind: 'PersistentVolume' }, type: 'Warning', reason: 'InvalidClaimRef', message: 'no claim can be looked up' },
      { kind: 'event', target: cl, type: 'Normal', reason: 'FailedBinding', message: 'no volume' },
    ]);
    admit = false;
    await act.run([{ kind: 'event', target: cl, type: 'Warning', reason: 'VolumeMismatch', message: 'dropped' }]);
    expect(lines).to.deep.equal([{ msg: 'warning', meta: { object: 'PersistentVolume/v', reason: 'InvalidClaimRef', message: 'no claim can be looked up' } }]);
  });
});

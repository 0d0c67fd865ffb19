import { expect } from 'chai';
import fc from 'fast-check';
import type { PersistentVolume, PersistentVolumeClaim } from '@topovol/shared';
import type { BinderAction } from '../../src/binder/actions.js';
import { decideClaim } from '../../src/binder/decide-claim.js';
import { decideVolume, releaseOf } from '../../src/binder/decide-volume.js';
import { bindingUnfinished, takenFromFreePool } from '../../src/binder/orphaned-bind.js';
import { refutation, takeBackRefuted } from '../../src/binder/verify-on-server.js';
import { claim, pod, vol, world } from './world-fixture.js';
import { build, worldArb } from './world-arbitraries.js';

const BY_CONTROLLER = { 'pv.kubernetes.io/bound-by-controller': 'yes' };
const ref = (uid: string, name = 'c') => ({ kind: 'PersistentVolumeClaim', apiVersion: 'v1', namespace: 'ns', name, uid });
/** A static volume with Delete whose claimRef (to claim ns/c, uid u1) a binding wrote, in this phase. */
const written = (phase: string, annotations: Record<string, string> | undefined = BY_CONTROLLER): PersistentVolume =>
  vol('v', '1Gi', { persistentVolumeReclaimPolicy: 'Delete', claimRef: ref('u1'), phase, annotations });
const deleting = (x: PersistentVolumeClaim): PersistentVolumeClaim => ({ ...x, metadata: { ...x.metadata, deletionTimestamp: '2026-01-01T00:00:00Z', finalizers: ['kubernetes.io/pvc-protection'] } });
const kinds = (actions: BinderAction[]): string[] => actions.map((a) => (a.kind === 'volumePhase' ? `volumePhase ${a.phase}` : a.kind === 'unbindVolume' ? `unbindVolume${a.takeBack ? ` (${a.takeBack})` : ''}` : a.kind));

// A binding from the free pool that never reached its claim (the process stopped between the
// volume's write and the claim's, or kube-scheduler pre-bound the volume), whose claim then went:
// made Available again, never Released (orphaned-bind.ts).
describe('pv-binder: an unfinished binding whose claim went', function () {
  describe('which volumes carry one', function () {
    const cases: { name: string; v: PersistentVolume; want: boolean }[] = [
      { name: 'Available, claimRef with uid, bound-by-controller', v: written('Available'), want: true },
      { name: 'no phase yet, claimRef with uid, bound-by-controller: perhaps a used volume created again from a dump (its status dropped)', v: written('Pending'), want: false },
      { name: 'Bound: the claim may have been written and used', v: written('Bound'), want: false },
      { name: 'Released', v: written('Released'), want: false },
      { name: 'a claimRef a user wrote (no bound-by-controller)', v: written('Available', {}), want: false },
      { name: 'a claimRef without uid (pre-bound by name)', v: vol('v', '1Gi', { claimRef: { ...ref('u1'), uid: undefined }, annotations: BY_CONTROLLER }), want: false },
      { name: "made by in-tree provisioning (provisioned-by): its claim's to release", v: written('Available', { ...BY_CONTROLLER, 'pv.kubernetes.io/provisioned-by': 'kubernetes.io/gce-pd' }), want: false },
    ];
    for (const t of cases) it(`${t.name}: ${t.want}`, () => expect(bindingUnfinished(t.v)).to.equal(t.want));
  });

  describe("the volume's decision", function () {
    const cases: { name: string; v: PersistentVolume; claims?: PersistentVolumeClaim[]; pods?: ReturnType<typeof pod>[]; want: string[] }[] = [
      { name: 'Available, claim gone: taken back', v: written('Available'), want: ['unbindVolume (the claim is gone)'] },
      { name: 'no phase yet (perhaps created again from a dump), claim gone: Released, as upstream', v: written('Pending'), want: ['volumePhase Released'] },
      { name: 'Available, claim created again under its name: taken back', v: written('Available'), claims: [claim('c', '1Gi', { uid: 'u2' })], want: ['unbindVolume (the claim was deleted and created again)'] },
      { name: 'Available, claim being deleted: left to the claim, which holds it back until it goes', v: written('Available'), claims: [deleting(claim('c', '1Gi', { uid: 'u1' }))], want: [] },
      { name: 'Available, claim bound to another volume: unbound, as upstream', v: written('Available'), claims: [claim('c', '1Gi', { uid: 'u1', volumeName: 'other' })], want: ['unbindVolume'] },
      { name: 'Available, claim there and waiting: left to the claim', v: written('Available'), claims: [claim('c', '1Gi', { uid: 'u1' })], want: [] },
      { name: 'Available, claim bound to it: Bound', v: written('Available'), claims: [claim('c', '1Gi', { uid: 'u1', volumeName: 'v' })], want: ['volumePhase Bound'] },
      { name: 'Bound, claim gone: Released, as upstream (the claim may have been Bound and used)', v: written('Bound'), want: ['volumePhase Released', 'volumePhase Failed'] },
      { name: 'Available, user-made claimRef, claim gone: Released, as upstream', v: written('Available', {}), want: ['volumePhase Released', 'volumePhase Failed'] },
    ];
    for (const t of cases) {
      it(t.name, function () {
        const w = world({ volumes: [t.v], claims: t.claims, pods: t.pods });
        const got = kinds(decideVolume(t.v, w)).filter((k) => k !== 'event');
        // A release's reclaim step depends on the deleter; only Released matters here.
        expect(got.slice(0, 1)).to.deep.equal(t.want.slice(0, 1));
        if (t.want.length === 0) expect(got).to.deep.equal([]);
        expect(releaseOf(t.v, w), 'a deletion is timed only for a release').to.equal(t.want[0] === 'volumePhase Released');
      });
    }
  });

  it('a take-back keeps the claimRef\'s namespace and name (an administrator may have reserved the volume so) and drops its uid', function () {
    const [a] = decideVolume(written('Available'), world({ volumes: [written('Available')] }));
    expect(a).to.include({ kind: 'unbindVolume', keepClaimRef: true, takeBack: 'the claim is gone' });
  });

  it('a take-back is said on the volume, after its write (a refuted take-back says nothing): why it stays Available, reserved, and how to free it', function () {
    const actions = decideVolume(written('Available'), world({ volumes: [written('Available')] }));
    expect(actions.map((a) => a.kind)).to.deep.equal(['unbindVolume', 'event']);
    const e = actions[1] as Extract<BinderAction, { kind: 'event' }>;
    expect([e.type, e.reason]).to.deep.equal(['Normal', 'BindingTakenBack']);
    expect(e.message).to.include('ns/c').and.include('the claim is gone').and.include('reserved for a claim named ns/c').and.include('remove spec.claimRef');
  });

  describe("the claim's decision", function () {
    it('a claim being deleted, no pod placed, with a half-written volume: waits, the binding not completed', function () {
      const c = deleting(claim('c', '1Gi', { uid: 'u1' }));
      const v = written('Available');
      expect(kinds(decideClaim(c, world({ volumes: [v], claims: [c] }))).filter((k) => k !== 'event'), 'no write: the claim is Pending already').to.deep.equal([]);
    });
    it('the same claim with a pod placed on a node: the binding is completed (as upstream)', function () {
      const c = deleting(claim('c', '1Gi', { uid: 'u1' }));
      const v = written('Available');
      expect(kinds(decideClaim(c, world({ volumes: [v], claims: [c], pods: [pod('p', 'c', 'n1')] })))).to.deep.equal(['bindVolume', 'bindClaim']);
    });
    it('a claim not being deleted: the binding is completed', function () {
      const c = claim('c', '1Gi', { uid: 'u1' });
      expect(kinds(decideClaim(c, world({ volumes: [written('Available')], claims: [c] })))).to.deep.equal(['bindVolume', 'bindClaim']);
    });

    // The same with the claim naming the volume (spec.volumeName, a user's): either binder stopped
    // after the volume's claimRef. Upstream completes it and, once the claim goes, Releases it.
    describe('a claim that names the half-written volume', function () {
      const named = (extra: Parameters<typeof claim>[2] = {}): PersistentVolumeClaim => claim('c', '1Gi', { uid: 'u1', volumeName: 'v', ...extra });
      const decide = (c: PersistentVolumeClaim, pods: ReturnType<typeof pod>[] = []): { claim: BinderAction[]; volume: string[] } => {
        const w = world({ volumes: [written('Available')], claims: [c], pods });
        return { claim: decideClaim(c, w), volume: kinds(decideVolume(written('Available'), w)) };
      };
      it('being deleted, no pod placed: neither the claim nor the volume completes it', function () {
        const got = decide(deleting(named()));
        expect(kinds(got.claim).filter((k) => k !== 'event'), 'no write: the claim is Pending already').to.deep.equal([]);
        expect(got.volume, 'no phase Bound: the signal for the take-back stays').to.deep.equal([]);
      });
      it('being deleted, a pod placed on a node: completed by the claim, once the server confirms the pod (as upstream)', function () {
        const got = decide(deleting(named()), [pod('p', 'c', 'n1')]);
        expect(kinds(got.claim)).to.deep.equal(['bindVolume', 'bindClaim']);
        expect(got.claim[0], "the server's pods are read first").to.include({ forDeletingClaim: true });
        expect(got.volume, "left to the claim's confirmed write").to.deep.equal([]);
      });
      it('not being deleted: completed, as upstream', function () {
        const got = decide(named());
        expect(kinds(got.claim)).to.deep.equal(['bindVolume', 'bindClaim']);
        expect(got.claim[0]).to.not.have.property('forDeletingClaim');
        expect(got.volume).to.deep.equal(['volumePhase Bound']);
      });
      it('being deleted but Bound, its bind-completed removed (it may have used the volume; upstream re-binds claimRef first): completed, as upstream', function () {
        const got = decide(deleting(named({ phase: 'Bound' })));
        expect(kinds(got.claim)).to.deep.equal(['bindVolume', 'bindClaim']);
        expect(got.volume).to.deep.equal(['volumePhase Bound']);
      });
      // The two syncs must agree: a volume sync that wrote the phase Bound while the claim's held the
      // binding back would end the take-back signal, and the volume would be Released once the claim goes.
      it('over claims, pods and marks: the volume is written Bound only when the claim completes the binding, and for a claim being deleted that never used it, only with the server check', function () {
        const arb = fc.record({
          names: fc.boolean(),
          deleting: fc.boolean(),
          phase: fc.constantFrom('Pending', 'Bound', 'Lost'),
          completed: fc.boolean(),
          pod: fc.constantFrom('none', 'unplaced', 'placed', 'placed-ended', 'placed-terminating'),
        });
        fc.assert(
          fc.property(arb, (a) => {
            const base = named({ phase: a.phase, annotations: a.completed ? { 'pv.kubernetes.io/bind-completed': 'yes' } : undefined });
            const c0 = a.names ? base : { ...base, spec: { ...base.spec, volumeName: undefined } };
            const c = a.deleting ? deleting(c0) : c0;
            const p = pod('p', 'c', a.pod === 'none' || a.pod === 'unplaced' ? undefined : 'n1', a.pod === 'placed-ended' ? 'Succeeded' : 'Running');
            const pods = a.pod === 'none' ? [] : [a.pod === 'placed-terminating' ? { ...p, metadata: { ...p.metadata, deletionTimestamp: '2026-01-01T00:00:00Z' } } : p];
            const w = world({ volumes: [written('Available')], claims: [c], pods });
            const claimBinds = decideClaim(c, w).find((x): x is Extract<BinderAction, { kind: 'bindVolume' }> => x.kind === 'bindVolume');
            const volume = kinds(decideVolume(written('Available'), w));
            const where = JSON.stringify(a);
            expect(volume.some((k) => k.startsWith('volumePhase Released') || k.startsWith('unbindVolume')), `${where}: nothing released or taken back while the claim is there`).to.equal(false);
            // A claim that may have used the volume (Bound, Lost, bind-completed) re-binds as upstream.
            const neverUsed = c.status?.phase === 'Pending' && !a.completed;
            if (neverUsed && volume.includes('volumePhase Bound')) expect(claimBinds, `${where}: the volume's sync completes only what the claim's would`).to.not.equal(undefined);
            if (a.deleting && neverUsed && claimBinds) {
              expect(claimBinds.forDeletingClaim, `${where}: the server's pods confirm the placed pod first`).to.equal(true);
              expect(volume, `${where}: left to the claim's confirmed write`).to.deep.equal([]);
            }
            if (a.deleting && neverUsed && !['placed'].includes(a.pod)) expect(claimBinds, `${where}: held back`).to.equal(undefined);
          }),
          { numRuns: 500 },
        );
      });

      it('once the claim goes: taken back, reserved by name, never Released', function () {
        expect(kinds(decideVolume(written('Available'), world({ volumes: [written('Available')] })))).to.deep.equal(['unbindVolume (the claim is gone)', 'event']);
      });
    });
  });

  describe("the server's claim before a take-back is written", function () {
    const v = written('Available');
    const cases: { name: string; live: PersistentVolumeClaim | undefined; refuted: boolean }[] = [
      { name: 'gone', live: undefined, refuted: false },
      { name: 'created again', live: claim('c', '1Gi', { uid: 'u2' }), refuted: false },
      { name: 'being deleted (its sync holds the binding back until it goes)', live: deleting(claim('c', '1Gi', { uid: 'u1' })), refuted: true },
      { name: 'bound to another volume (unbound as upstream instead)', live: claim('c', '1Gi', { uid: 'u1', volumeName: 'other' }), refuted: true },
      { name: 'there and waiting (the cache had not seen it: kube-scheduler pre-binds for a new claim)', live: claim('c', '1Gi', { uid: 'u1' }), refuted: true },
      { name: 'bound to this volume', live: deleting(claim('c', '1Gi', { uid: 'u1', volumeName: 'v' })), refuted: true },
    ];
    for (const t of cases) {
      it(`${t.name}: ${t.refuted ? 'refuted' : 'confirmed'}`, function () {
        expect(takeBackRefuted(v, t.live) !== undefined).to.equal(t.refuted);
        const undo: BinderAction = { kind: 'unbindVolume', volume: v, keepClaimRef: false, takeBack: 'x' };
        expect(refutation(undo, { kind: 'claim', claim: t.live }) !== undefined).to.equal(t.refuted);
      });
    }
  });

  describe('what a failed binding may take back at once', function () {
    const free = vol('v', '1Gi');
    const plan = (c: PersistentVolumeClaim): BinderAction[] => [{ kind: 'bindVolume', volume: free, claim: c, boundByController: true }];
    const cases: { name: string; c: PersistentVolumeClaim; want: string[] }[] = [
      { name: 'a claim that names no volume, from the free pool', c: claim('c', '1Gi'), want: ['v'] },
      { name: 'a claim naming the volume (it may have been Bound to it)', c: claim('c', '1Gi', { volumeName: 'v' }), want: [] },
      { name: 'a Bound claim re-binding a volume that lost its claimRef', c: claim('c', '1Gi', { volumeName: 'v', phase: 'Bound', annotations: { 'pv.kubernetes.io/bind-completed': 'yes' } }), want: [] },
      { name: 'a Lost claim', c: claim('c', '1Gi', { phase: 'Lost' }), want: [] },
      { name: 'a claim marked bind-completed', c: claim('c', '1Gi', { annotations: { 'pv.kubernetes.io/bind-completed': 'yes' } }), want: [] },
    ];
    for (const t of cases) it(`${t.name}: ${JSON.stringify(t.want)}`, () => expect(takenFromFreePool(plan(t.c), t.c, world({ volumes: [free], claims: [t.c] }))).to.deep.equal(t.want));
  });

  // The shared random clusters, with the marks a binding leaves and the claim's fate varied too.
  const fate = fc.record({
    marks: fc.array(fc.constantFrom('none', 'controller', 'provisioned'), { minLength: 6, maxLength: 6 }),
    claim: fc.constantFrom('there', 'gone', 'deleting'),
    phase: fc.constantFrom('Pending', 'Bound', 'Lost'),
  });
  it('over random clusters, a take-back only ever frees a volume no claim was Bound to and none names', function () {
    fc.assert(
      fc.property(worldArb, fate, (a, f) => {
        const { c: c0, w } = build(a);
        const c: PersistentVolumeClaim = { ...c0, metadata: { ...c0.metadata, deletionTimestamp: f.claim === 'deleting' ? '2026-01-01T00:00:00Z' : undefined }, status: { phase: f.phase } };
        const volumes = w.volumes!.map((v, i) => {
          const m = f.marks[i];
          const annotations = m === 'none' ? undefined : { ...BY_CONTROLLER, ...(m === 'provisioned' ? { 'pv.kubernetes.io/provisioned-by': 'example.com/csi' } : {}) };
          return { ...v, metadata: { ...v.metadata, annotations } };
        });
        const input = { ...w, volumes, claims: f.claim === 'gone' ? [] : [c] };
        const all = [...(f.claim === 'gone' ? [] : decideClaim(c, world(input))), ...volumes.flatMap((v) => decideVolume(v, world(input)))];
        for (const x of all) {
          if (x.kind !== 'unbindVolume' || !x.takeBack) continue;
          const v = x.volume;
          const where = `${v.metadata?.name} (${x.takeBack})`;
          expect(v.status?.phase, `${where}: taken back from phase`).to.equal('Available');
          expect(x.keepClaimRef, `${where}: the claimRef's name kept (it may be an administrator's reservation)`).to.equal(true);
          expect(v.metadata?.annotations?.['pv.kubernetes.io/bound-by-controller'], `${where}: a claimRef a user wrote`).to.not.equal(undefined);
          expect(v.metadata?.annotations?.['pv.kubernetes.io/provisioned-by'], `${where}: a provisioned volume`).to.equal(undefined);
          const mine = f.claim !== 'gone' && v.spec?.claimRef?.uid === c.metadata?.uid;
          expect(mine, `${where}: its claim is there (${f.claim})`).to.equal(false);
        }
      }),
      { numRuns: 3000 },
    );
  });
});

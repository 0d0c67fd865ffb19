import { expect } from 'chai';
import fc from 'fast-check';
import { labelSelectorMatches } from '@topovol/shared';
import { claimClass, volumeClass } from '../../src/binder/claim-helpers.js';
import { volumeMismatch } from '../../src/binder/check-volume-satisfies-claim.js';
import { decideClaim } from '../../src/binder/decide-claim.js';
import { decideVolume } from '../../src/binder/decide-volume.js';
import { isPreBoundTo } from '../../src/binder/find-matching-volume.js';
import { claim, node, sc, vol, world } from './world-fixture.js';
import type { WorldInput } from './world-fixture.js';
import { build, SEL, sizes, worldArb } from './world-arbitraries.js';

// Safety of the binder's decisions over random clusters: what they may never plan, whatever the input.
describe('binder decisions: safety properties', function () {
  it('a claim is only ever bound to a volume pre-bound to it, or to a free Available volume that satisfies it', function () {
    fc.assert(
      fc.property(worldArb, (a) => {
        const { c, w } = build(a);
        for (const act of decideClaim(c, world(w))) {
          if (act.kind !== 'bindVolume') continue;
          const v = act.volume;
          const where = `${v.metadata?.name} for ${JSON.stringify(a.claim)}`;
          if (isPreBoundTo(v, c)) continue;
          expect(v.spec?.claimRef, `${where}: claimed by someone else`).to.equal(undefined);
          expect(volumeMismatch(c, v), `${where}: does not satisfy the claim`).to.equal(undefined);
          if (!c.spec?.volumeName) {
            // Available, or new (not yet written Available): never Bound, Released or Failed.
            expect(v.status?.phase, `${where}: not Available or new`).to.be.oneOf(['Available', 'Pending']);
            expect(volumeClass(v), where).to.equal(claimClass(c));
            expect(labelSelectorMatches(c.spec?.selector, v.metadata?.labels), `${where}: selector`).to.equal(true);
            // With delayed binding, a selected node means the scheduler chose provisioning.
            if (claimClass(c) === 'late') expect(c.metadata?.annotations?.[SEL], `${where}: a free volume for a claim whose selected node asks for provisioning`).to.equal(undefined);
          }
        }
      }),
      { numRuns: 3000 },
    );
  });

  it('a selected node is removed only after the whole grace with no provisioner activity, and always with a live check', function () {
    fc.assert(
      fc.property(worldArb, (a) => {
        const { c, w } = build(a);
        const strip = decideClaim(c, world(w)).find((x) => x.kind === 'annotateClaim' && x.remove?.includes(SEL));
        if (!strip || strip.kind !== 'annotateClaim') return;
        expect(strip.confirm, 'removal without a live check').to.not.equal(undefined);
        expect(a.noted, 'removed without the problem having been seen before').to.not.equal(undefined);
        const since = Math.max(w.noted!.since, w.provisioningActivity ?? -Infinity);
        expect(1_000_000 - since).to.be.at.least(60_000);
        // A node the provisioner has tried is left to it, unless the node is gone.
        if (strip.confirm!.issue !== 'gone') expect(w.provisioningActivity, 'removed under a provisioner that tried').to.equal(undefined);
        // The server's Events must show the same quiet the cache did: none since the grace began
        // for a node that is gone, none ever otherwise (verify-on-server.ts checks it).
        expect(strip.confirm!.quietSince).to.equal(strip.confirm!.issue === 'gone' ? 1_000_000 - 60_000 : -Infinity);
        if (w.provisioningActivity !== undefined) expect(w.provisioningActivity).to.be.at.most(strip.confirm!.quietSince);
      }),
      { numRuns: 3000 },
    );
  });

  it('a volume is released only when its claim is gone, re-created, or bound to another volume', function () {
    fc.assert(
      fc.property(worldArb, (a) => {
        const { c, w } = build(a);
        for (const v of w.volumes!) {
          const released = decideVolume(v, world(w)).some((x) => x.kind === 'volumePhase' && x.phase === 'Released');
          if (!released) continue;
          const ref = v.spec?.claimRef;
          const mine = ref?.name === 'c' && ref.uid === c.metadata?.uid;
          if (mine) expect(c.spec?.volumeName, `${v.metadata?.name} released while its claim still wants it`).to.not.be.oneOf([undefined, '', v.metadata?.name]);
        }
      }),
      { numRuns: 3000 },
    );
  });
});

describe('binder decisions: a claimRef no claim can be looked up by', function () {
  it('a volume whose claimRef has a uid but no namespace or no name is never released, unbound or failed: only a Warning', function () {
    fc.assert(
      fc.property(worldArb, fc.constantFrom('namespace', 'name', 'both'), fc.nat(5), (a, drop, i) => {
        const { w } = build(a);
        const v = w.volumes![i]!;
        const ref = { ...v.spec?.claimRef, uid: v.spec?.claimRef?.uid ?? 'uid-c' };
        if (drop !== 'name') delete ref.namespace;
        if (drop !== 'namespace') delete ref.name;
        const actions = decideVolume({ ...v, spec: { ...v.spec, claimRef: ref } }, world(w));
        expect(actions.map((x) => (x.kind === 'event' ? `${x.kind} ${x.reason}` : x.kind))).to.deep.equal(['event InvalidClaimRef']);
      }),
      { numRuns: 1000 },
    );
  });
});

// Several claims decided one after another, each seeing the bindings planned before it (the
// binder's assume cache does this between reconciles): never one volume for two claims, never a
// claim given two volumes; also with the absurd sizes and unusable node affinities users can write.
describe('binder decisions: no double binding across claims', function () {
  const absurd = ['1e30', '9223372036854775808', '0.5m', '-1Gi', '1Qi', ...sizes];
  const unusable = [undefined, undefined, { required: { nodeSelectorTerms: [{}] } }, { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'z', operator: 'Gt', values: ['x'] }] }] } }];
  const volumes = fc.array(
    fc.record({ size: fc.constantFrom(...absurd, '9223372036854775807', '8Ei'), cls: fc.constantFrom('', 'fast'), affinity: fc.constantFrom(...unusable), preBoundTo: fc.constantFrom(undefined, undefined, 'c0', 'c1') }),
    { minLength: 1, maxLength: 6 },
  );
  const claims = fc.array(fc.record({ size: fc.constantFrom(...absurd), cls: fc.constantFrom('', 'fast'), volumeName: fc.constantFrom(undefined, undefined, 'v0') }), { minLength: 2, maxLength: 5 });

  it('applying each planned binding before the next decision never binds a volume twice', function () {
    fc.assert(
      fc.property(volumes, claims, (vs, cs) => {
        const w: WorldInput = {
          volumes: vs.map((v, i) => vol(`v${i}`, v.size, { storageClassName: v.cls, nodeAffinity: v.affinity, claimRef: v.preBoundTo ? { namespace: 'ns', name: v.preBoundTo } : undefined })),
          claims: cs.map((c, i) => claim(`c${i}`, c.size, { storageClassName: c.cls, volumeName: c.volumeName })),
          classes: [sc('fast')],
          nodes: [node('n1')],
          now: 1_000_000,
        };
        const owner = new Map<string, string>();
        for (const c of w.claims!) {
          const binds = decideClaim(c, world(w)).filter((a) => a.kind === 'bindVolume');
          expect(binds.length, `${c.metadata?.name} given several volumes`).to.be.at.most(1);
          for (const b of binds) {
            if (b.kind !== 'bindVolume') continue;
            const name = b.volume.metadata!.name!;
            const prior = owner.get(name);
            expect(prior === undefined || prior === c.metadata?.name, `${name} planned for ${prior} and ${c.metadata?.name}`).to.equal(true);
            owner.set(name, c.metadata!.name!);
            // As the assume cache: the volume now names the claim, Bound.
            w.volumes = w.volumes!.map((v) => (v.metadata?.name === name ? { ...v, spec: { ...v.spec, claimRef: { namespace: 'ns', name: c.metadata!.name!, uid: c.metadata!.uid! } }, status: { phase: 'Bound' } } : v));
          }
        }
      }),
      { numRuns: 3000 },
    );
  });
});

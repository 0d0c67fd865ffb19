import { expect } from 'chai';
import fc from 'fast-check';
import { projectClaim } from '@topovol/shared';
import type { PersistentVolumeClaim } from '@topovol/shared';
import { claimNoiseArb, claimsByIdentity, withNoise } from '@topovol/testing';
import { decideClaim } from '../../src/binder/decide-claim.js';
import { decideVolume } from '../../src/binder/decide-volume.js';
import { claimStatusFor } from '../../src/binder/claim-status.js';
import { world } from './world-fixture.js';
import { build, worldArb } from './world-arbitraries.js';

// The claim informer caches projectClaim's copy, not the claim: whatever a claim's creator adds
// (labels, owners, finalizers, other annotations, over-long values), the binder must plan the same
// for the projection as for the whole claim.
describe('binder decisions: the cached claim projection decides as the whole claim', function () {
  it('decideClaim, decideVolume and the claim status plan the same on projectClaim(c) as on c', function () {
    fc.assert(
      fc.property(worldArb, claimNoiseArb, (a, noise) => {
        const { c, w } = build(a);
        const whole = withNoise(c, noise);
        const projected = projectClaim(whole);
        const asWhole = { ...w, claims: [whole] };
        const asProjected = { ...w, claims: [projected] };
        const same = (x: unknown) => claimsByIdentity(x, { cutValues: noise.longValue !== undefined });
        expect(same(decideClaim(projected, world(asProjected))), 'decideClaim').to.deep.equal(same(decideClaim(whole, world(asWhole))));
        for (const v of w.volumes ?? []) {
          expect(same(decideVolume(v, world(asProjected))), `decideVolume ${v.metadata?.name}`).to.deep.equal(same(decideVolume(v, world(asWhole))));
          for (const phase of ['Pending', 'Bound', 'Lost'] as const) {
            const from = (x: typeof whole) => claimStatusFor(x, phase, phase === 'Bound' ? v : undefined);
            const pick = (s: ReturnType<typeof from>) => s && { phase: s.phase, accessModes: s.accessModes, capacity: s.capacity, currentVolumeAttributesClassName: s.currentVolumeAttributesClassName };
            expect(pick(from(projected)), `status ${phase}`).to.deep.equal(pick(from(whole)));
          }
        }
      }),
      { numRuns: 2000 },
    );
  });

  it('keeps nothing the loops do not read, and cuts a long value without dropping it', function () {
    const whole = withNoise(build(fc.sample(worldArb, { numRuns: 1, seed: 7 })[0]!).c, { labels: { app: 'db' }, annotations: { 'example.com/a': 'x' }, finalizers: ['kubernetes.io/pvc-protection'], owner: true, limits: true, repeatModes: true, conditions: true, status: 'asIs', volumeMode: undefined, deleting: false, marks: [], dataSource: 'none', longValue: 'volume.kubernetes.io/selected-node' });
    const p = projectClaim(whole);
    expect(p.metadata).to.not.have.any.keys('labels', 'finalizers', 'ownerReferences', 'managedFields');
    expect(Object.keys(p.metadata?.annotations ?? {})).to.deep.equal(['volume.kubernetes.io/selected-node']);
    expect(p.metadata?.annotations?.['volume.kubernetes.io/selected-node']).to.have.length(513);
    expect(p.spec?.resources).to.deep.equal({ requests: whole.spec?.resources?.requests });
    expect(p.spec?.accessModes).to.deep.equal([...new Set(whole.spec?.accessModes)]);
    expect(p.status).to.not.have.any.keys('conditions', 'allocatedResources');
  });

  it('a selector too large to cache is kept as one that matches no volume: the claim binds nothing statically', function () {
    const { c, w } = build({ ...fc.sample(worldArb, { numRuns: 1, seed: 3 })[0]!, claim: { size: '1Gi', cls: '', accessModes: ['ReadWriteOnce'], selector: false, vac: undefined, selected: undefined, volumeName: undefined } });
    const matchLabels = Object.fromEntries(Array.from({ length: 400 }, (_, i) => [`example.com/label-${i}`, 'v']));
    const big = { ...c, spec: { ...c.spec, selector: { matchLabels } } };
    const p = projectClaim(big);
    expect(JSON.stringify(p).length).to.be.below(2048);
    const plan = decideClaim(p, world({ ...w, claims: [p] }));
    expect(plan.filter((x) => x.kind === 'bindVolume')).to.deep.equal([]);
    expect(plan.filter((x) => x.kind === 'event' && x.type === 'Warning').map((x) => x.kind === 'event' && x.reason), 'said on the claim').to.deep.equal(['SelectorTooLargeToCache']);
    // A selector within the limit: no such Warning.
    const small = projectClaim({ ...c, spec: { ...c.spec, selector: { matchLabels: { tier: 'gold' } } } } as PersistentVolumeClaim);
    expect(decideClaim(small, world({ ...w, claims: [small] })).filter((x) => x.kind === 'event' && x.reason === 'SelectorTooLargeToCache')).to.deep.equal([]);
  });
});

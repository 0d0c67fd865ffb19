import { expect } from 'chai';
import fc from 'fast-check';
import { projectPod } from '@topovol/shared';
import { podNoiseArb, withPodNoise } from '@topovol/testing';
import { decideClaim } from '../../src/binder/decide-claim.js';
import { decideVolume } from '../../src/binder/decide-volume.js';
import { world } from './world-fixture.js';
import { build, worldArb } from './world-arbitraries.js';

// The pod informer caches projectPod's copy, not the pod: whatever a pod's creator or the kubelet
// adds (containers, other volumes, conditions, IPs, preferences), the binder must plan the same
// with the projection as with the whole pod.
describe('binder decisions: the cached pod projection decides as the whole pod', function () {
  it('decideClaim and decideVolume plan the same with projectPod(p) as with p', function () {
    let withPods = 0;
    fc.assert(
      fc.property(worldArb, podNoiseArb, (a, noise) => {
        const { c, w } = build(a);
        const whole = (w.pods ?? []).map((p) => withPodNoise(p, noise));
        if (whole.length > 0) withPods++;
        const asWhole = { ...w, pods: whole };
        const asProjected = { ...w, pods: whole.map(projectPod) };
        expect(decideClaim(c, world(asProjected)), 'decideClaim').to.deep.equal(decideClaim(c, world(asWhole)));
        for (const v of w.volumes ?? []) expect(decideVolume(v, world(asProjected)), `decideVolume ${v.metadata?.name}`).to.deep.equal(decideVolume(v, world(asWhole)));
      }),
      { numRuns: 2000 },
    );
    expect(withPods, 'worlds with a pod').to.be.above(500);
  });

  it('the same where the pod matters most: a claim that waits for its first consumer, and a pod placed on a node by spec.nodeName', function () {
    fc.assert(
      fc.property(worldArb, podNoiseArb, (a, noise) => {
        const { c, w } = build({ ...a, claim: { ...a.claim, cls: 'late', volumeName: undefined }, podOn: 'n1' });
        const whole = (w.pods ?? []).map((p) => withPodNoise(p, noise));
        const decide = (pods: typeof whole): unknown => decideClaim(c, world({ ...w, pods }));
        expect(decide(whole.map(projectPod))).to.deep.equal(decide(whole));
      }),
      { numRuns: 3000 },
    );
  });
});

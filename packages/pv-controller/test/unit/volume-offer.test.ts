import { expect } from 'chai';
import fc from 'fast-check';
import type { PersistentVolume } from '@topovol/shared';
import { findMatchingVolume } from '../../src/binder/find-matching-volume.js';
import { newlyOffered } from '../../src/binder/volume-offer.js';
import { build, volumeFromRecord, volumeRecordArb, worldArb } from './world-arbitraries.js';
import type { VolumeRecord } from './world-arbitraries.js';
import { node, vol } from './world-fixture.js';

// The binder queues every waiting claim of a class again only when a volume event is newlyOffered.
// What makes skipping the other events safe: a claim that could not take the volume before such an
// event cannot take it after (checked below over random volumes and claims).

const BETA_CLASS = 'volume.beta.kubernetes.io/storage-class';
const ref = { namespace: 'ns', name: 'c', uid: 'uid-c' };
const withStatus = (v: PersistentVolume, phase: string | undefined, message?: string): PersistentVolume => ({ ...v, status: { phase, message } });

describe('newlyOffered: which volume events wake waiting claims', function () {
  const cases: [string, PersistentVolume | undefined, PersistentVolume, boolean][] = [
    ['a new free volume', undefined, vol('v', '1Gi'), true],
    ['a new volume not yet written Available', undefined, withStatus(vol('v', '1Gi'), undefined), true],
    ['a new volume with a claimRef', undefined, vol('v', '1Gi', { claimRef: ref }), false],
    ['its own Available write (phase unset to Available)', withStatus(vol('v', '1Gi'), undefined), vol('v', '1Gi'), false],
    ['a status message only', vol('v', '1Gi'), withStatus(vol('v', '1Gi'), 'Available', 'hello'), false],
    ['a claimRef removed', vol('v', '1Gi', { claimRef: ref, phase: 'Released' }), vol('v', '1Gi'), true],
    ['Released to Available, no claimRef either side', vol('v', '1Gi', { phase: 'Released' }), vol('v', '1Gi'), true],
    ['a claimRef set', vol('v', '1Gi'), vol('v', '1Gi', { claimRef: ref }), false],
    ['labels changed', vol('v', '1Gi'), vol('v', '1Gi', { labels: { tier: 'gold' } }), true],
    ['capacity changed', vol('v', '1Gi'), vol('v', '2Gi'), true],
    ['class moved by the beta annotation', vol('v', '1Gi'), vol('v', '1Gi', { annotations: { [BETA_CLASS]: 'fast' } }), true],
    ['being deleted', vol('v', '1Gi'), vol('v', '1Gi', { deleting: true }), false],
    ['Failed', vol('v', '1Gi'), vol('v', '1Gi', { phase: 'Failed' }), false],
  ];
  for (const [name, old, v, want] of cases) {
    it(`${name}: ${want ? 'wakes' : 'does not wake'}`, function () {
      expect(newlyOffered(old, v)).to.equal(want);
    });
  }

  it('over random changes, a volume event that is not newlyOffered never lets a claim take a volume it could not take before', function () {
    const fields = fc.record({
      size: fc.boolean(),
      cls: fc.boolean(),
      accessModes: fc.boolean(),
      ref: fc.boolean(),
      phase: fc.boolean(),
      deleting: fc.boolean(),
      tier: fc.boolean(),
      vac: fc.boolean(),
      block: fc.boolean(),
    });
    // What else a write can change: fields no match should read (status message and reason,
    // finalizers, identity), and the beta class annotation on either side.
    const other = fc.record({
      message: fc.constantFrom(undefined, 'hello'),
      reason: fc.constantFrom(undefined, 'Why'),
      finalizers: fc.constantFrom<string[] | undefined>(undefined, ['kubernetes.io/pv-protection']),
      uid: fc.constantFrom('uid-1', 'uid-2'),
      resourceVersion: fc.constantFrom('1', '2'),
      beta: fc.constantFrom(undefined, 'fast', 'late', ''),
    });
    const dress = (v: PersistentVolume, o: typeof other extends fc.Arbitrary<infer T> ? T : never): PersistentVolume => ({
      ...v,
      metadata: { ...v.metadata, uid: o.uid, resourceVersion: o.resourceVersion, finalizers: o.finalizers, annotations: o.beta === undefined ? undefined : { [BETA_CLASS]: o.beta } },
      status: { ...v.status, message: o.message, reason: o.reason },
    });
    let quiet = 0;
    fc.assert(
      fc.property(volumeRecordArb, volumeRecordArb, fields, other, other, worldArb, fc.boolean(), fc.boolean(), (a, b, take, oa, ob, w, onNode, delay) => {
        // The new volume: the old one with some of its features taken from another.
        const mixed = Object.fromEntries(Object.entries(a).map(([k, x]) => [k, take[k as keyof typeof take] ? b[k as keyof VolumeRecord] : x])) as VolumeRecord;
        const old = dress(volumeFromRecord(0, a), oa);
        const next = dress(volumeFromRecord(0, mixed), ob);
        if (newlyOffered(old, next)) return;
        quiet++;
        const { c } = build(w);
        const opts = { delayBinding: delay, node: onNode ? node('n1') : undefined };
        const takesNext = findMatchingVolume(c, [next], opts) !== undefined && !next.spec?.claimRef;
        const tookOld = findMatchingVolume(c, [old], opts) !== undefined;
        expect(takesNext && !tookOld, `${JSON.stringify(old)} -> ${JSON.stringify(next)} for ${JSON.stringify(c)}`).to.equal(false);
      }),
      { numRuns: 5000 },
    );
    // Not vacuous: many events are not newly offered (status-only writes, claimRef set, deletion, ...).
    expect(quiet, 'events that wake nobody').to.be.above(1000);
  });
});

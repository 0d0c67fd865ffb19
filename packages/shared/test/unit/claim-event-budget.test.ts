import { expect } from 'chai';
import { ClaimEventBudget, MAX_CACHED_EVENTS_PER_CLAIM } from '../../src/informer/claim-events.js';
import type { Event } from '../../src/index.js';

function ev(name: string, about: { ns: string; name: string; uid: string }, ns = about.ns): Event {
  return { metadata: { name, namespace: ns }, involvedObject: { kind: 'PersistentVolumeClaim', namespace: about.ns, name: about.name, uid: about.uid }, reason: 'ProvisioningFailed' };
}

describe('ClaimEventBudget: which Events about claims a loop caches', function () {
  const claims = new Map([
    ['t/c1', 'u1'],
    ['t/c2', 'u2'],
  ]);
  const cached = (ns: string, name: string, uid: string): boolean => claims.get(`${ns}/${name}`) === uid;
  const c1 = { ns: 't', name: 'c1', uid: 'u1' };

  const cases: [string, Event, boolean][] = [
    ['an Event about a cached claim, in its namespace', ev('e', c1), true],
    ['a uid no cached claim has (made up, or a claim not listed yet)', ev('e', { ...c1, uid: 'made-up' }), false],
    ['a claim name not cached', ev('e', { ...c1, name: 'gone' }), false],
    ["another namespace naming the claim (its uid copied)", ev('e', c1, 'other'), false],
    ['no involvedObject uid', { metadata: { name: 'e', namespace: 't' }, involvedObject: { namespace: 't', name: 'c1' } }, false],
    ['an empty involvedObject', { metadata: { name: 'e', namespace: 't' }, involvedObject: {} }, false],
  ];
  for (const [what, e, want] of cases) it(`${what}: ${want ? 'kept' : 'left out'}`, () => expect(new ClaimEventBudget(cached).admit(e)).to.equal(want));

  it(`keeps at most ${MAX_CACHED_EVENTS_PER_CLAIM} per claim, first come; one kept stays kept as it changes; a deleted one frees its place`, function () {
    const b = new ClaimEventBudget(cached);
    const flood = Array.from({ length: 1000 }, (_, i) => ev(`forged-${i}`, c1));
    const kept = flood.filter((e) => b.admit(e));
    expect(kept.map((e) => e.metadata.name)).to.deep.equal(flood.slice(0, MAX_CACHED_EVENTS_PER_CLAIM).map((e) => e.metadata.name));
    expect(b.admit(flood[0]!), 'a kept one, updated (count and time move)').to.equal(true);
    expect(b.admit(ev('e2', { ns: 't', name: 'c2', uid: 'u2' })), 'another claim has its own bound').to.equal(true);
    expect(b.admit(ev('provisioner', c1))).to.equal(false);
    b.forget(flood[3]!);
    expect(b.admit(ev('provisioner', c1))).to.equal(true);
    expect(b.size).to.equal(MAX_CACHED_EVENTS_PER_CLAIM + 1);
  });

  it('an Event rewritten to name another claim counts against that one only (core/v1 lets involvedObject change)', function () {
    const b = new ClaimEventBudget(cached, 1);
    const e = ev('e', c1);
    expect(b.admit(e)).to.equal(true);
    expect(b.admit(ev('e', { ns: 't', name: 'c2', uid: 'u2' }))).to.equal(true);
    // c1's place is free again; c2's is taken.
    expect(b.admit(ev('x', c1))).to.equal(true);
    expect(b.admit(ev('y', { ns: 't', name: 'c2', uid: 'u2' }))).to.equal(false);
    // Rewritten to a uid no claim has: left out, and its place freed.
    expect(b.admit(ev('e', { ns: 't', name: 'c2', uid: 'made-up' }))).to.equal(false);
    expect(b.admit(ev('y', { ns: 't', name: 'c2', uid: 'u2' }))).to.equal(true);
    expect(b.size).to.equal(2);
  });

  it('property: whatever the sequence of Events and deletes, no claim holds more than the bound, and every place is released', function () {
    let seed = 7;
    const rand = (n: number): number => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
    for (let round = 0; round < 50; round++) {
      const b = new ClaimEventBudget(cached, 3);
      const live = new Map<string, Event>();
      for (let step = 0; step < 400; step++) {
        const name = `e${rand(40)}`;
        if (rand(4) === 0) {
          const old = live.get(name);
          if (old) b.forget(old);
          live.delete(name);
          continue;
        }
        const about = [c1, { ns: 't', name: 'c2', uid: 'u2' }, { ns: 't', name: 'c3', uid: 'u3' }][rand(3)]!;
        const e = ev(name, about);
        if (b.admit(e)) live.set(name, e);
        else {
          // Left out: the informer drops its cached copy (as a delete).
          const old = live.get(name);
          if (old) b.forget(old);
          live.delete(name);
        }
        const per = new Map<string, number>();
        for (const k of live.values()) per.set(k.involvedObject.uid!, (per.get(k.involvedObject.uid!) ?? 0) + 1);
        for (const n of per.values()) expect(n).to.be.at.most(3);
        expect(per.has('u3'), 'a claim not cached').to.equal(false);
        expect(b.size).to.equal(live.size);
      }
      for (const e of live.values()) b.forget(e);
      expect(b.size).to.equal(0);
    }
  });
});

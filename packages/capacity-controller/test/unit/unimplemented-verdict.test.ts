import { expect } from 'chai';
import { UnimplementedVerdict, UnimplementedVerdicts } from '../../src/source/unimplemented-verdict.js';

describe('capacity UnimplementedVerdict: a driver that answers GetCapacity with Unimplemented', function () {
  it('holds calls back for a doubling period, one probe per period, and ends on an answer', function () {
    let now = 0;
    const v = new UnimplementedVerdict(1_000, () => now);
    expect(v.waitMs()).to.equal(0);
    const first = v.begin();
    expect(first.probe, 'no verdict yet: not a probe').to.equal(false);
    expect(v.record('no GetCapacity', first.asked)).to.deep.equal({ kind: 'first', retryInMs: 1_000 });
    expect(v.message).to.equal('no GetCapacity');
    now = 400;
    expect(v.waitMs()).to.equal(600);
    now = 1_000;
    expect(v.waitMs()).to.equal(0);
    const probe = v.begin();
    expect(probe.probe).to.equal(true);
    expect(v.probing, 'the others wait for the probe').to.equal(true);
    expect(v.record('still none', probe.asked)).to.deep.equal({ kind: 'again', retryInMs: 2_000 });
    v.end(probe.probe);
    expect(v.probing).to.equal(false);
    expect(v.waitMs()).to.equal(2_000);
    now = 3_000;
    const answered = v.begin();
    v.end(answered.probe);
    expect(v.clear(), 'periods it lasted').to.equal(2);
    expect(v.message).to.equal(undefined);
    expect(v.clear()).to.equal(undefined);
    expect(v.waitMs()).to.equal(0);
  });

  it('counts the calls started before a verdict as one: their Unimplemented neither renews nor doubles it', function () {
    let now = 0;
    const v = new UnimplementedVerdict(1_000, () => now);
    const calls = [v.begin(), v.begin(), v.begin()];
    expect(v.record('none', calls[0]!.asked).kind).to.equal('first');
    expect(v.decidedSince(calls[1]!.asked), 'a call still waiting for its slot need not ask').to.equal(true);
    now = 10;
    expect(v.record('none', calls[1]!.asked)).to.deep.equal({ kind: 'stale', retryInMs: 990 });
    expect(v.record('none', calls[2]!.asked).kind).to.equal('stale');
    expect(v.waitMs()).to.equal(990);
    const later = v.begin();
    expect(v.decidedSince(later.asked)).to.equal(false);
  });

  it('waits at most an hour between two questions', function () {
    let now = 0;
    const v = new UnimplementedVerdict(600_000, () => now);
    let last = 0;
    for (let i = 0; i < 10; i++) {
      const c = v.begin();
      last = v.record('none', c.asked).retryInMs;
      v.end(c.probe);
      now += last;
    }
    expect(last).to.equal(3_600_000);
  });
});

describe('capacity UnimplementedVerdicts: one verdict per set of class parameters', function () {
  it('keyed by the parameters whatever their key order; ended in place; dropped once no item asks with them', function () {
    const vs = new UnimplementedVerdicts(1_000, () => 0);
    const remote = { type: 'remote', pool: 'p' };
    const v = vs.for(remote);
    v.record('no capacity for remote pools', v.begin().asked);
    expect(vs.of({ pool: 'p', type: 'remote' }), 'the same parameters, keys in another order').to.equal(v);
    expect(vs.of({ type: 'lvm' }), 'other parameters hold nothing').to.equal(undefined);
    expect(vs.message).to.equal('no capacity for remote pools');
    const items = [{ parameters: { type: 'lvm' }, item: { storageClassName: 'good' } }, { parameters: remote, item: { storageClassName: 'remote' } }];
    expect(vs.describe(items)).to.equal('StorageClass remote: no capacity for remote pools');
    expect(vs.itemsWith(new Map(items.map((d, i) => [`k${i}`, d])), remote)).to.deep.equal(['k1']);
    expect(vs.clear(remote)).to.equal(1);
    expect(vs.of(remote), 'ended in place, not removed').to.equal(v);
    expect(vs.message).to.equal(undefined);
    v.record('again', v.begin().asked);
    vs.keepOnly([{ type: 'lvm' }]);
    expect(vs.of(remote), 'no item asks with them any longer').to.equal(undefined);
    expect(vs.message).to.equal(undefined);
  });
});

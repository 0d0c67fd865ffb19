import { expect } from 'chai';
import fc from 'fast-check';
import { RepeatPacer } from '../../src/rollback/repeat-pacer.js';

describe('RepeatPacer: a Warning said again at every look is said once per period while unchanged', function () {
  it('new message: said; the same within the period: not; after it: said; another message: said at once; another key: its own', function () {
    const p = new RepeatPacer(300_000);
    expect(p.due('pod-1/R', 'refused: a', 0)).to.equal(true);
    expect(p.due('pod-1/R', 'refused: a', 60_000)).to.equal(false);
    expect(p.due('pod-1/R', 'refused: a', 299_999)).to.equal(false);
    expect(p.due('pod-1/R', 'refused: a', 300_000)).to.equal(true);
    expect(p.due('pod-1/R', 'refused: b', 300_001)).to.equal(true);
    expect(p.due('pod-2/R', 'refused: b', 300_002)).to.equal(true);
  });

  it('remembers at most `max` keys, the oldest said going first', function () {
    const p = new RepeatPacer(300_000, 2);
    p.due('a', 'm', 0);
    p.due('b', 'm', 1);
    p.due('c', 'm', 2);
    expect(p.size).to.equal(2);
    expect(p.due('a', 'm', 3), 'forgotten: said again').to.equal(true);
    expect(p.due('c', 'm', 4), 'still remembered').to.equal(false);
  });

  it('property: one key looked at every minute for an hour with one message is said once per 5 minutes', function () {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 120 }), (minutes) => {
        const p = new RepeatPacer(300_000);
        let said = 0;
        for (let m = 0; m < minutes; m++) if (p.due('k', 'same', m * 60_000)) said++;
        expect(said).to.equal(Math.ceil(minutes / 5));
      }),
    );
  });
});

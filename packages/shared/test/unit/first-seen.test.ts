import { expect } from 'chai';
import { FirstSeen } from '../../src/controller/first-seen.js';

describe('FirstSeen', function () {
  it('keeps the first time while the same value is seen, starts again on another, forgets on request', function () {
    const seen = new FirstSeen<string>();
    expect(seen.get('k')).to.equal(undefined);
    seen.note('k', 'gone', 100);
    seen.note('k', 'gone', 200);
    expect(seen.get('k')).to.deep.equal({ value: 'gone', since: 100 });
    seen.note('k', 'noConsumer', 300);
    expect(seen.get('k')).to.deep.equal({ value: 'noConsumer', since: 300 });
    seen.forget('k');
    expect(seen.get('k')).to.equal(undefined);
  });
});

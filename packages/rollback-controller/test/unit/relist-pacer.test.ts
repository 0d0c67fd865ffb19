import { expect } from 'chai';
import { RelistPacer } from '../../src/rollback/relist-pacer.js';

// Evictions of deleted pods' uses can come a second apart while a tenant floods its namespace; the
// claims are listed again at most once per interval, and a request inside it is not lost.
describe('RelistPacer', function () {
  function pacer() {
    let t = 0;
    const lists: number[] = [];
    const timers: { at: number; fn: () => void }[] = [];
    const p = new RelistPacer(() => lists.push(t), 30_000, () => t, (fn, ms) => void timers.push({ at: t + ms, fn }));
    const advance = (ms: number): void => {
      t += ms;
      for (const due of timers.filter((x) => x.at <= t)) {
        timers.splice(timers.indexOf(due), 1);
        due.fn();
      }
    };
    return { p, lists, timers, advance };
  }

  it('the first request lists at once', function () {
    const { p, lists } = pacer();
    p.request();
    expect(lists).to.deep.equal([0]);
  });

  it('requests a second apart for a minute: a list at once, then one at the end of each interval', function () {
    const { p, lists, timers, advance } = pacer();
    for (let s = 0; s < 60; s++) {
      p.request();
      advance(1_000);
    }
    expect(lists).to.deep.equal([0, 30_000, 60_000]);
    p.request();
    expect(timers, 'a request right after a list waits for its interval').to.have.length(1);
    p.request();
    expect(timers, 'requests meanwhile fold into it').to.have.length(1);
    advance(30_000);
    expect(lists).to.deep.equal([0, 30_000, 60_000, 90_000]);
  });

  it('a request after a quiet interval lists at once again', function () {
    const { p, lists, advance } = pacer();
    p.request();
    advance(45_000);
    p.request();
    expect(lists).to.deep.equal([0, 45_000]);
  });
});

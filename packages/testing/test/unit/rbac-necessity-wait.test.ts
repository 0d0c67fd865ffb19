import { expect } from 'chai';
import { stallAllowance } from '../../src/rbac-necessity.js';

// How long a necessity run may sit after a step before it counts as stalled, from the control run's
// step times (ms from its start; the last entry is its end state).
describe('testing: the necessity check waits by the step a run stalls at', function () {
  const control = [100, 5_600, 11_000]; // two steps, then the end state
  const rows: { step: number; want: number; why: string }[] = [
    { step: 0, want: 3_000, why: 'the first step took 100 ms: the settle time is the floor' },
    { step: 1, want: 1.5 * 5_500, why: 'the second step took 5.5 s' },
    { step: 2, want: 1.5 * 5_400, why: 'from the last step to the end state' },
    { step: 3, want: 1.5 * 11_000, why: 'more steps than the control counted: the whole control run' },
  ];
  for (const r of rows) {
    it(`after step ${r.step}: ${r.why}`, function () {
      expect(stallAllowance(control, r.step)).to.equal(r.want);
    });
  }
  it('a scenario that counts no steps: the whole control run, and never below the floor', function () {
    expect(stallAllowance([], 0)).to.equal(3_000);
    expect(stallAllowance([], 0, 500)).to.equal(0 + 500);
  });
});

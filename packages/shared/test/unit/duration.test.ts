import { expect } from 'chai';
import { formatDuration, parseDuration } from '../../src/manager/duration.js';

describe('Go-style durations', function () {
  const good: [string, number][] = [
    ['0', 0],
    ['15s', 15_000],
    ['1m30s', 90_000],
    ['500ms', 500],
    ['1.5s', 1500],
    ['2h', 7_200_000],
    ['1h2m3s', 3_723_000],
  ];
  for (const [s, ms] of good) it(`parses ${s}`, () => expect(parseDuration(s)).to.equal(ms));
  for (const s of ['', 'abc', '15', '-1s', '1x', 's', '1.s']) it(`rejects "${s}"`, () => expect(() => parseDuration(s)).to.throw(/invalid duration/));
  const fmt: [number, string][] = [
    [0, '0s'],
    [500, '500ms'],
    [15_000, '15s'],
    [90_000, '1m30s'],
    [3_600_000, '1h0m0s'],
  ];
  for (const [ms, s] of fmt) it(`formats ${ms} ms as ${s}`, () => expect(formatDuration(ms)).to.equal(s));
});

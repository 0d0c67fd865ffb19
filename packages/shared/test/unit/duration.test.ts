import { expect } from 'chai';
import { DurationError, formatDuration, parseDuration } from '../../src/manager/duration.js';

describe('Go-style durations', function () {
  describe('parseDuration', function () {
    const good: [string, number][] = [
      ['0', 0],
      ['+0', 0],
      ['-0', 0],
      ['0s', 0],
      ['15s', 15_000],
      ['+15s', 15_000],
      ['1m30s', 90_000],
      ['500ms', 500],
      ['1.5s', 1500],
      ['1.1s', 1100],
      ['.5s', 500],
      ['1.s', 1000],
      ['2h', 7_200_000],
      ['1.5h', 5_400_000],
      ['1h2m3s', 3_723_000],
      ['2h45m', 9_900_000],
      ['1s500ms', 1500],
      ['300us', 0.3],
      ['300µs', 0.3],
      ['1500000ns', 1.5],
      ['100000h', 360_000_000_000],
    ];
    for (const [s, ms] of good) it(`parses "${s}" as ${ms} ms`, () => expect(parseDuration(s)).to.equal(ms));

    const bad: [string, RegExp][] = [
      ['', /empty/],
      ['abc', /expected a number/],
      ['15', /missing unit/],
      ['1s2', /missing unit/],
      ['-1s', /must not be negative/],
      ['-1m30s', /must not be negative/],
      ['1x', /unknown unit "x"/],
      ['1S', /unknown unit "S"/],
      ['1 s', /unknown unit " s"/],
      [' 1s', /expected a number/],
      ['s', /expected a number/],
      ['.s', /expected a number/],
      ['1..5s', /missing unit/],
      ['00', /missing unit/],
      ['1e3s', /unknown unit "e"/],
      ['3000000h', /out of range/],
    ];
    for (const [s, why] of bad) {
      it(`rejects "${s}"`, function () {
        expect(() => parseDuration(s))
          .to.throw(DurationError, /^invalid duration/)
          .with.property('reason')
          .that.matches(why);
      });
    }
  });

  describe('parseDuration with allowNegative', function () {
    const good: [string, number][] = [
      ['-1s', -1000],
      ['-1m30s', -90_000],
      ['-1.5ms', -1.5],
      ['-0', 0],
      ['+2s', 2000],
    ];
    for (const [s, ms] of good) it(`parses "${s}" as ${ms} ms`, () => expect(parseDuration(s, { allowNegative: true })).to.equal(ms));
    it('still refuses what is no duration', function () {
      for (const s of ['-', '-1', '--1s', '-1x']) expect(() => parseDuration(s, { allowNegative: true }), s).to.throw(DurationError);
    });
  });

  describe('formatDuration', function () {
    const fmt: [number, string][] = [
      [0, '0s'],
      [0.000001, '1ns'],
      [0.0015, '1.5µs'],
      [0.3, '300µs'],
      [1.5, '1.5ms'],
      [500, '500ms'],
      [1000, '1s'],
      [1500, '1.5s'],
      [15_000, '15s'],
      [60_000, '1m0s'],
      [90_000, '1m30s'],
      [3_600_000, '1h0m0s'],
      [3_723_000, '1h2m3s'],
      [-2000, '-2s'],
    ];
    for (const [ms, s] of fmt) it(`formats ${ms} ms as "${s}"`, () => expect(formatDuration(ms)).to.equal(s));

    for (const ms of [1, 250, 2000, 15_000, 90_000, 5_400_000, 9_900_000, 0.3]) {
      it(`round-trips ${ms} ms`, () => expect(parseDuration(formatDuration(ms))).to.equal(ms));
    }

    it('rejects non-finite values', () => expect(() => formatDuration(Number.NaN)).to.throw(RangeError));
  });
});

import { expect } from 'chai';
import { thrown } from '@topovol/testing';
import { DurationError, formatDuration, parseDuration } from '../../src/manager/duration.js';
import { FlagError, formatHelp, parseCommandLine, parseFlags } from '../../src/manager/flag-parser.js';
import { parseBindAddress } from '../../src/manager/bind-address.js';
import type { BindAddressError } from '../../src/manager/bind-address.js';
import { KNOWN_CONTROLLERS, MANAGER_FLAGS, parseManagerFlags, validateLeaderElection } from '../../src/manager/flags.js';
import type { FlagSpec } from '../../src/manager/flag-parser.js';

// Edges of the manager's flag parsing that a mutation run found no unit test for.

describe('flag parser edges', function () {
  describe('booleans take every spelling of Go\'s strconv.ParseBool, as pflag does', function () {
    const spellings: [string, boolean][] = [
      ['1', true],
      ['t', true],
      ['T', true],
      ['true', true],
      ['TRUE', true],
      ['True', true],
      ['0', false],
      ['f', false],
      ['F', false],
      ['false', false],
      ['FALSE', false],
      ['False', false],
    ];
    for (const [raw, want] of spellings) {
      it(`--dry-run=${raw} and --leader-elect=${raw} are ${want}; so is --help=${raw}`, function () {
        const o = parseManagerFlags([`--dry-run=${raw}`, `--leader-elect=${raw}`, `--help=${raw}`]);
        expect([o.dryRun, o.leaderElect, o.help]).to.deep.equal([want, want, want]);
      });
    }
    for (const raw of ['yes', 'no', 'on', 'tRUE', 'FaLsE', '']) {
      it(`refuses --dry-run=${raw}`, () => expect(() => parseManagerFlags([`--dry-run=${raw}`])).to.throw(FlagError, /not a boolean/));
    }
  });
  describe('a flag table whose default does not match its type is a programming error', function () {
    const tables: [string, FlagSpec][] = [
      ['a float defaulting to a string', { name: 'qps', type: 'float', default: '3', help: 'h' }],
      ['a float defaulting to NaN', { name: 'qps', type: 'float', default: Number.NaN, help: 'h' }],
      ['a duration defaulting to a string', { name: 'period', type: 'duration', default: '15s', help: 'h' }],
      ['a duration defaulting to a boolean', { name: 'period', type: 'duration', default: true, help: 'h' }],
      ['a list defaulting to a string', { name: 'tags', type: 'stringList', default: 'a', help: 'h' }],
      ['a list with a number in it', { name: 'tags', type: 'stringList', default: ['a', 1] as unknown as string[], help: 'h' }],
      ['a string defaulting to a number', { name: 'path', type: 'string', default: 1, help: 'h' }],
      ['a bool defaulting to a string', { name: 'on', type: 'bool', default: 'true', help: 'h' }],
    ];
    for (const [what, spec] of tables) {
      it(what, function () {
        const err = thrown(() => parseFlags([spec], []));
        expect(err).to.be.instanceOf(Error).and.not.instanceOf(FlagError);
        expect((err as Error).message).to.equal(`flag table: default of --${spec.name} does not match its type ${spec.type}`);
      });
    }
  });
  describe('command-line syntax', function () {
    // [argv, the whole message]
    const bad: [string[], string][] = [
      [['--=x'], 'bad flag syntax: --=x'],
      [['--='], 'bad flag syntax: --='],
      [['-help'], "unknown shorthand flag: 'h' in -help (did you mean --help?)"],
      [['-dry-run'], "unknown shorthand flag: 'd' in -dry-run (did you mean --dry-run?)"],
      [['-x'], "unknown shorthand flag: 'x' in -x"],
      [['-v=3'], "unknown shorthand flag: 'v' in -v=3"],
    ];
    for (const [argv, message] of bad) {
      it(`${argv.join(' ')}: ${message}`, function () {
        const err = thrown(() => parseManagerFlags(argv));
        expect(err).to.be.instanceOf(FlagError);
        expect((err as FlagError).message).to.equal(message);
      });
    }

    it('--kube-api-burst=1 and --concurrent-workers=1 are accepted (at least 1 includes 1)', function () {
      const o = parseManagerFlags(['--kube-api-burst=1', '--concurrent-workers=1']);
      expect([o.kubeApiBurst, o.concurrentWorkers]).to.deep.equal([1, 1]);
    });
  });

  describe('help text', function () {
    it('is pflag\'s layout exactly: sorted, types after the names, three spaces after the longest, defaults as pflag prints them, -h last', function () {
      const specs: FlagSpec[] = [
        { name: 'zones', type: 'stringList', default: ['a', 'b'], help: 'Zones.' },
        { name: 'period', type: 'duration', default: 90_000, help: 'Period.' },
        { name: 'on', type: 'bool', default: false, help: 'On.' },
        { name: 'path', type: 'string', default: '/x', help: 'Path.' },
        { name: 'qps', type: 'float', default: 2.5, help: 'QPS.' },
        { name: 'n', type: 'int', default: 3, help: 'N.' },
      ];
      expect(formatHelp(specs).split('\n')).to.deep.equal([
        '      --n int             N. (default 3)',
        '      --on                On. (default false)',
        '      --path string       Path. (default "/x")',
        '      --period duration   Period. (default 1m30s)',
        '      --qps float         QPS. (default 2.5)',
        '      --zones strings     Zones. (default [a,b])',
        '  -h, --help              Show this help and exit.',
      ]);
    });
  });

  describe('parseCommandLine (the benchmarks\' command lines)', function () {
    /** Runs fn with process.stdout and process.stderr captured; returns what it returned and what each got. */
    function captured<T>(fn: () => T): { result: T; stdout: string; stderr: string } {
      const out: string[] = [];
      const err: string[] = [];
      const stdout = process.stdout.write.bind(process.stdout);
      const stderr = process.stderr.write.bind(process.stderr);
      process.stdout.write = (chunk: string | Uint8Array): boolean => out.push(String(chunk)) > 0;
      process.stderr.write = (chunk: string | Uint8Array): boolean => err.push(String(chunk)) > 0;
      try {
        return { result: fn(), stdout: out.join(''), stderr: err.join('') };
      } finally {
        process.stdout.write = stdout;
        process.stderr.write = stderr;
      }
    }
    const specs: FlagSpec[] = [{ name: 'rounds', type: 'int', default: 3, help: 'Rounds.' }];
    const parse = (argv: readonly string[]): { rounds: number; help: boolean } => {
      const p = parseFlags(specs, argv);
      return { rounds: Number(p.values.rounds), help: p.help };
    };
    const help = (): string => 'HELP';

    it('returns the options, printing nothing', function () {
      expect(captured(() => parseCommandLine(['--rounds=5'], parse, help))).to.deep.equal({ result: { rounds: 5, help: false }, stdout: '', stderr: '' });
    });
    it('--help: prints the help to stdout and returns exit code 0', function () {
      expect(captured(() => parseCommandLine(['--help'], parse, help))).to.deep.equal({ result: 0, stdout: 'HELP\n', stderr: '' });
    });
    it('a bad flag: prints the error and the help to stderr and returns exit code 2', function () {
      expect(captured(() => parseCommandLine(['--rounds=x'], parse, help))).to.deep.equal({
        result: 2,
        stdout: '',
        stderr: 'error: invalid value "x" for flag --rounds: not an integer\n\nHELP\n',
      });
    });
    it('an error that is not a FlagError is thrown on (a bug, not a bad command line)', function () {
      const boom = new Error('bug');
      expect(() =>
        captured(() =>
          parseCommandLine(
            [],
            () => {
              throw boom;
            },
            help,
          ),
        ),
      ).to.throw(boom);
    });
  });
  describe('durations at Go\'s edges', function () {
    it('"µs" in both spellings (U+00B5 micro sign and U+03BC Greek mu), as time.ParseDuration', function () {
      expect([parseDuration('3\u00b5s'), parseDuration('3\u03bcs'), parseDuration('3us')]).to.deep.equal([0.003, 0.003, 0.003]);
    });
    it('the largest time.Duration (2^63-1 ns) is accepted; one nanosecond more is out of range', function () {
      expect(parseDuration('9223372036854775807ns')).to.equal(9_223_372_036_854 + 0.775807);
      expect(() => parseDuration('9223372036854775808ns')).to.throw(DurationError).with.property('reason', 'out of range');
    });
    it('a negative zero is zero, as Go reads it ("-0s", "-0.1ns"); one nanosecond below zero is refused', function () {
      expect([parseDuration('-0s'), parseDuration('-0.1ns'), parseDuration('-0m0s')]).to.deep.equal([0, 0, 0]);
      expect(() => parseDuration('-1ns')).to.throw(DurationError).with.property('reason', 'must not be negative');
    });
    // [ms, Go's Duration.String]: each unit from its first value, and negatives
    const formats: [number, string][] = [
      [0.000999, '999ns'],
      [0.001, '1µs'],
      [0.999999, '999.999µs'],
      [1, '1ms'],
      [999.999999, '999.999999ms'],
      [1000, '1s'],
      [-0.0005, '-500ns'],
      [-0.0015, '-1.5µs'],
      [-1.5, '-1.5ms'],
      [-2000, '-2s'],
      [-90_000, '-1m30s'],
      [-3_600_000, '-1h0m0s'],
    ];
    for (const [ms, want] of formats) it(`formats ${ms} ms as "${want}"`, () => expect(formatDuration(ms)).to.equal(want));
    it('formatting NaN or an infinity throws a RangeError that names the value', function () {
      for (const v of [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]) expect(() => formatDuration(v)).to.throw(RangeError, `cannot format duration ${v}`);
    });
  });
  describe('the manager\'s flags', function () {
    it('a bad bind address is refused with the address parser\'s own reason, on one line', function () {
      for (const [flag, value] of [
        ['metrics-bind-address', 'localhost'],
        ['health-probe-bind-address', ':99999'],
      ]) {
        const reason = (thrown(() => parseBindAddress(value!)) as BindAddressError).reason;
        expect(reason).to.be.a('string').and.not.equal('');
        const err = thrown(() => parseManagerFlags([`--${flag}=${value}`]));
        expect(err).to.be.instanceOf(FlagError);
        expect((err as FlagError).message).to.equal(`invalid value "${value}" for flag --${flag}: ${reason}`);
      }
    });

    it('any positive retry period is accepted, as client-go\'s NewLeaderElector accepts it (1 ms, 500 µs)', function () {
      expect(validateLeaderElection(15_000, 10_000, 1)).to.equal(undefined);
      expect(parseManagerFlags(['--leader-elect-retry-period=500us']).retryPeriodMs).to.equal(0.5);
    });

    it('--controllers names every controller the manager ships, in its help too', function () {
      expect(KNOWN_CONTROLLERS).to.deep.equal(['pv-binder', 'zonal-pv-upgrade', 'capacity', 'rollback']);
      expect(MANAGER_FLAGS.find((f) => f.name === 'controllers')?.help).to.match(/All controllers: pv-binder, zonal-pv-upgrade, capacity, rollback\.$/);
    });
  });
});

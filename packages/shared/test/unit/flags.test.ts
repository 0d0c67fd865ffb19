import { expect } from 'chai';
import { thrown } from '@topovol/testing';
import {
  BindAddressError,
  extraNumber,
  FlagError,
  formatHelp,
  KNOWN_CONTROLLERS,
  MANAGER_FLAGS,
  parseBindAddress,
  parseFlags,
  parseManagerFlags,
  resolveControllers,
  validateLeaderElection,
} from '../../src/manager/index.js';
import type { FlagSpec, ManagerOptions } from '../../src/manager/index.js';

describe('manager flags', function () {
  describe('MANAGER_FLAGS table', function () {
    const want: [string, FlagSpec['type'], unknown][] = [
      ['kubeconfig', 'string', ''],
      ['kube-api-qps', 'float', 20],
      ['kube-api-burst', 'int', 30],
      ['controllers', 'stringList', ['*']],
      ['leader-elect', 'bool', true],
      ['leader-elect-namespace', 'string', ''],
      ['leader-elect-lease-duration', 'duration', 15_000],
      ['leader-elect-renew-deadline', 'duration', 10_000],
      ['leader-elect-retry-period', 'duration', 2_000],
      ['metrics-bind-address', 'string', ':8443'],
      ['metrics-secure', 'bool', true],
      ['metrics-cert-path', 'string', ''],
      ['health-probe-bind-address', 'string', ':8081'],
      ['log-level', 'string', 'info'],
      ['log-format', 'string', 'json'],
      ['concurrent-workers', 'int', 4],
      ['cache-sync-timeout', 'duration', 120_000],
      ['shutdown-timeout', 'duration', 30_000],
      ['dry-run', 'bool', false],
    ];
    it('has exactly the kube-controller-manager-style flags', () => expect(MANAGER_FLAGS.map((f) => f.name)).to.have.members(want.map(([n]) => n)));
    for (const [name, type, def] of want) {
      it(`--${name} is a ${type} defaulting to ${JSON.stringify(def)}`, function () {
        const spec = MANAGER_FLAGS.find((f) => f.name === name);
        expect(spec, name).to.not.equal(undefined);
        expect(spec!.type).to.equal(type);
        expect(spec!.default).to.deep.equal(def);
        expect(spec!.help).to.be.a('string').that.is.not.empty;
      });
    }
    it('--controllers help lists the known controllers', function () {
      const help = MANAGER_FLAGS.find((f) => f.name === 'controllers')!.help;
      for (const c of KNOWN_CONTROLLERS) expect(help).to.contain(c);
    });
  });

  describe('parseManagerFlags', function () {
    it('returns the defaults for an empty command line', function () {
      const want: ManagerOptions = {
        kubeconfig: '',
        kubeApiQps: 20,
        kubeApiBurst: 30,
        controllers: ['*'],
        leaderElect: true,
        leaderElectNamespace: '',
        leaseDurationMs: 15_000,
        renewDeadlineMs: 10_000,
        retryPeriodMs: 2_000,
        metricsBindAddress: ':8443',
        metricsSecure: true,
        metricsCertPath: '',
        healthProbeBindAddress: ':8081',
        logLevel: 'info',
        logFormat: 'json',
        concurrentWorkers: 4,
        shutdownTimeoutMs: 30_000,
        cacheSyncTimeoutMs: 120_000,
        dryRun: false,
        help: false,
        extra: {},
      };
      expect(parseManagerFlags([])).to.deep.equal(want);
    });

    it('does not share the default list between parses', function () {
      parseManagerFlags([]).controllers.push('mutated');
      expect(parseManagerFlags([]).controllers).to.deep.equal(['*']);
    });

    const syntax: [string, string[], Partial<ManagerOptions>][] = [
      ['--flag=value', ['--kube-api-qps=50'], { kubeApiQps: 50 }],
      ['--flag value', ['--kube-api-burst', '7'], { kubeApiBurst: 7 }],
      ['--string value', ['--kubeconfig', '/tmp/kc'], { kubeconfig: '/tmp/kc' }],
      ['--string= (empty)', ['--leader-elect-namespace='], { leaderElectNamespace: '' }],
      ['a value containing =', ['--kubeconfig=/tmp/a=b'], { kubeconfig: '/tmp/a=b' }],
      ['bare bool', ['--dry-run'], { dryRun: true }],
      ['--bool=false', ['--leader-elect=false'], { leaderElect: false }],
      ['--bool=true', ['--dry-run=true'], { dryRun: true }],
      ['--bool=0 / =1', ['--leader-elect=0', '--dry-run=1'], { leaderElect: false, dryRun: true }],
      ['bare bool followed by another flag', ['--dry-run', '--concurrent-workers=2'], { dryRun: true, concurrentWorkers: 2 }],
      ['float with fraction', ['--kube-api-qps=2.5'], { kubeApiQps: 2.5 }],
      ['zero qps (unthrottled)', ['--kube-api-qps=0'], { kubeApiQps: 0 }],
      ['negative qps (unthrottled)', ['--kube-api-qps', '-1'], { kubeApiQps: -1 }],
      ['list', ['--controllers=*,-capacity'], { controllers: ['*', '-capacity'] }],
      ['list with a leading - as separate value', ['--controllers', '-capacity'], { controllers: ['-capacity'] }],
      ['repeated list flags append', ['--controllers=pv-binder', '--controllers', 'capacity'], { controllers: ['pv-binder', 'capacity'] }],
      ['empty list', ['--controllers='], { controllers: [] }],
      ['repeated scalar flag: last wins', ['--concurrent-workers=2', '--concurrent-workers=3'], { concurrentWorkers: 3 }],
      [
        'durations',
        ['--leader-elect-lease-duration=30s', '--leader-elect-renew-deadline', '20s', '--leader-elect-retry-period=500ms', '--shutdown-timeout=1m30s'],
        { leaseDurationMs: 30_000, renewDeadlineMs: 20_000, retryPeriodMs: 500, shutdownTimeoutMs: 90_000 },
      ],
      ['zero shutdown timeout', ['--shutdown-timeout=0'], { shutdownTimeoutMs: 0 }],
      ['disabled endpoints', ['--metrics-bind-address=0', '--health-probe-bind-address', '0'], { metricsBindAddress: '0', healthProbeBindAddress: '0' }],
      ['loopback endpoints with port 0', ['--metrics-bind-address=127.0.0.1:0', '--health-probe-bind-address=[::1]:9090'], { metricsBindAddress: '127.0.0.1:0', healthProbeBindAddress: '[::1]:9090' }],
      ['log options', ['--log-level=debug', '--log-format', 'text'], { logLevel: 'debug', logFormat: 'text' }],
      ['--help', ['--help'], { help: true }],
      ['-h', ['-h'], { help: true }],
      ['--help=false', ['--help=false'], { help: false }],
      ['--help skips leader-election consistency checks', ['--leader-elect-lease-duration=1s', '--help'], { help: true, leaseDurationMs: 1000 }],
      ['--leader-elect=false skips leader-election consistency checks', ['--leader-elect=false', '--leader-elect-retry-period=0'], { leaderElect: false, retryPeriodMs: 0 }],
    ];
    for (const [what, argv, want] of syntax) it(`accepts ${what}: ${argv.join(' ')}`, () => expect(parseManagerFlags(argv)).to.deep.include(want));

    // [argv, flag the message must name, message]
    const bad: [string[], string, RegExp][] = [
      [['--kube-api-qps=abc'], '--kube-api-qps', /^invalid value "abc" for flag --kube-api-qps: not a number$/],
      [['--kube-api-qps='], '--kube-api-qps', /not a number/],
      [['--kube-api-qps=NaN'], '--kube-api-qps', /not a number/],
      [['--kube-api-qps=Infinity'], '--kube-api-qps', /not a number/],
      [['--kube-api-qps=0x10'], '--kube-api-qps', /not a number/],
      [['--kube-api-qps=1e999'], '--kube-api-qps', /out of range/],
      [['--kube-api-burst=1.5'], '--kube-api-burst', /^invalid value "1.5" for flag --kube-api-burst: not an integer$/],
      [['--kube-api-burst=ten'], '--kube-api-burst', /not an integer/],
      [['--kube-api-burst=99999999999999999999'], '--kube-api-burst', /out of range/],
      [['--kube-api-burst=0'], '--kube-api-burst', /^invalid value "0" for flag --kube-api-burst: must be at least 1$/],
      [['--concurrent-workers=0'], '--concurrent-workers', /must be at least 1/],
      [['--concurrent-workers', '-3'], '--concurrent-workers', /must be at least 1/],
      [['--leader-elect=maybe'], '--leader-elect', /^invalid value "maybe" for flag --leader-elect: not a boolean/],
      [['--dry-run=yes'], '--dry-run', /not a boolean/],
      [['--help=please'], '--help', /not a boolean/],
      [['--shutdown-timeout=soon'], '--shutdown-timeout', /^invalid value "soon" for flag --shutdown-timeout: not a duration/],
      [['--shutdown-timeout=30'], '--shutdown-timeout', /not a duration: missing unit/],
      [['--shutdown-timeout=-5s'], '--shutdown-timeout', /not a duration: must not be negative/],
      [['--leader-elect-lease-duration=15x'], '--leader-elect-lease-duration', /not a duration: unknown unit "x"/],
      [['--log-format=xml'], '--log-format', /^invalid value "xml" for flag --log-format: must be one of json, text$/],
      [['--log-level=trace'], '--log-level', /must be one of error, warn, info, debug/],
      [['--metrics-bind-address=localhost'], '--metrics-bind-address', /want host:port, :port or 0/],
      [['--metrics-bind-address='], '--metrics-bind-address', /want host:port, :port or 0/],
      [['--metrics-bind-address=8080'], '--metrics-bind-address', /want host:port, :port or 0/],
      [['--health-probe-bind-address=:99999'], '--health-probe-bind-address', /port 99999 out of range/],
      [['--health-probe-bind-address=::1:8081'], '--health-probe-bind-address', /want host:port/],
      [['--no-such-flag'], '--no-such-flag', /^unknown flag: --no-such-flag$/],
      [['--no-such-flag=1'], '--no-such-flag', /^unknown flag: --no-such-flag$/],
      [['-kube-api-burst=8'], '--kube-api-burst', /unknown shorthand flag: 'k' in -kube-api-burst=8 \(did you mean --kube-api-burst\?\)/],
      [['---kubeconfig=x'], '---kubeconfig', /bad flag syntax/],
      [['--kubeconfig'], '--kubeconfig', /^flag needs an argument: --kubeconfig$/],
      [['--kube-api-qps'], '--kube-api-qps', /flag needs an argument/],
      [['--shutdown-timeout'], '--shutdown-timeout', /flag needs an argument/],
      [['--controllers'], '--controllers', /flag needs an argument/],
      [['--kubeconfig', '--dry-run'], '--kubeconfig', /flag needs an argument: --kubeconfig/],
      [['stray'], 'stray', /unexpected argument "stray"/],
      [['--', '--dry-run'], '--dry-run', /unexpected argument "--dry-run"/],
    ];
    for (const [argv, flag, msg] of bad) {
      it(`rejects ${argv.join(' ')}`, function () {
        const err = thrown(() => parseManagerFlags(argv));
        expect(err).to.be.instanceOf(FlagError);
        const message = (err as FlagError).message;
        expect(message).to.match(msg);
        expect(message).to.contain(flag);
        expect(message).to.not.contain('\n');
      });
    }

    describe('leader-election timings (lease > renew > 1.2 × retry > 0)', function () {
      const ok: [string, string, string][] = [
        ['15s', '10s', '2s'],
        ['4s', '3s', '1s'],
        ['137s', '107s', '26s'],
        ['2s', '1500ms', '1s'],
      ];
      for (const [lease, renew, retry] of ok) {
        it(`accepts lease ${lease}, renew ${renew}, retry ${retry}`, function () {
          const o = parseManagerFlags([`--leader-elect-lease-duration=${lease}`, `--leader-elect-renew-deadline=${renew}`, `--leader-elect-retry-period=${retry}`]);
          expect(o.leaseDurationMs).to.be.greaterThan(o.renewDeadlineMs);
        });
      }

      const bad: [string, string, string, RegExp][] = [
        ['5s', '10s', '2s', /^--leader-elect-lease-duration \(5s\) must be greater than --leader-elect-renew-deadline \(10s\)$/],
        ['10s', '10s', '2s', /--leader-elect-lease-duration \(10s\) must be greater than --leader-elect-renew-deadline/],
        ['15s', '2s', '2s', /^--leader-elect-renew-deadline \(2s\) must be greater than 1.2 × --leader-elect-retry-period \(2s\)$/],
        ['15s', '2400ms', '2s', /--leader-elect-renew-deadline \(2.4s\) must be greater than 1.2 ×/],
        ['15s', '1s', '2s', /--leader-elect-renew-deadline/],
        ['15s', '10s', '0', /^--leader-elect-retry-period \(0s\) must be greater than zero$/],
        ['0', '0', '0', /--leader-elect-retry-period/],
      ];
      for (const [lease, renew, retry, msg] of bad) {
        it(`rejects lease ${lease}, renew ${renew}, retry ${retry}`, function () {
          const argv = [`--leader-elect-lease-duration=${lease}`, `--leader-elect-renew-deadline=${renew}`, `--leader-elect-retry-period=${retry}`];
          expect(() => parseManagerFlags(argv)).to.throw(FlagError, msg);
        });
      }

      it('validateLeaderElection agrees with the defaults', () => expect(validateLeaderElection(15_000, 10_000, 2_000)).to.equal(undefined));
    });

    describe('controller-specific flags', function () {
      const extra: FlagSpec[] = [
        { name: 'driver-name', type: 'string', default: '', help: 'CSI driver name.' },
        { name: 'resync-period', type: 'duration', default: 60_000, help: 'Resync period.' },
        { name: 'max-attempts', type: 'int', default: 5, help: 'Attempts.', validate: (v) => (typeof v === 'number' && v > 10 ? 'must be at most 10' : undefined) },
        { name: 'watch-widgets', type: 'bool', default: false, help: 'Watch widgets.' },
      ];
      it('land in extra with their defaults', () =>
        expect(parseManagerFlags([], extra).extra).to.deep.equal({ 'driver-name': '', 'resync-period': 60_000, 'max-attempts': 5, 'watch-widgets': false }));
      it('are parsed like the manager flags', () =>
        expect(parseManagerFlags(['--driver-name=hostpath.csi.k8s.io', '--resync-period', '5m', '--max-attempts=7', '--watch-widgets'], extra).extra).to.deep.equal({
          'driver-name': 'hostpath.csi.k8s.io',
          'resync-period': 300_000,
          'max-attempts': 7,
          'watch-widgets': true,
        }));
      it('run their own validation', () => expect(() => parseManagerFlags(['--max-attempts=11'], extra)).to.throw(FlagError, /^invalid value "11" for flag --max-attempts: must be at most 10$/));
      it('are unknown without their spec', () => expect(() => parseManagerFlags(['--driver-name=x'])).to.throw(FlagError, /unknown flag: --driver-name/));
    });
  });

  describe('parseFlags (generic)', function () {
    const specs: FlagSpec[] = [
      { name: 'name', type: 'string', default: 'x', help: 'h' },
      { name: 'tags', type: 'stringList', default: ['a'], help: 'h' },
      { name: 'verbose', type: 'bool', default: false, help: 'h' },
    ];
    it('collects positional arguments and everything after --', () =>
      expect(parseFlags(specs, ['one', '--verbose', 'two', '--', '--name=y', '-h'])).to.deep.equal({
        values: { name: 'x', tags: ['a'], verbose: true },
        help: false,
        positional: ['one', 'two', '--name=y', '-h'],
      }));
    it('trims list items and drops empty ones', () => expect(parseFlags(specs, ['--tags= b , ,c']).values.tags).to.deep.equal(['b', 'c']));
    it('does not mutate the spec defaults', function () {
      parseFlags(specs, ['--tags=b', '--tags=c']);
      expect(specs[1]!.default).to.deep.equal(['a']);
    });

    const badTables: [string, FlagSpec[], RegExp][] = [
      ['duplicate names', [specs[0]!, { ...specs[0]! }], /defined twice/],
      ['a reserved name', [{ name: 'help', type: 'bool', default: false, help: 'h' }], /reserved/],
      ['a name with dashes', [{ name: '--x', type: 'bool', default: false, help: 'h' }], /bad flag name/],
      ['a default of the wrong type', [{ name: 'n', type: 'int', default: '3', help: 'h' }], /default of --n does not match its type int/],
      ['a fractional int default', [{ name: 'n', type: 'int', default: 1.5, help: 'h' }], /default of --n/],
    ];
    for (const [what, table, msg] of badTables) {
      it(`throws a plain Error (a bug, not a FlagError) on ${what}`, function () {
        const err = thrown(() => parseFlags(table, []));
        expect(err).to.be.instanceOf(Error).and.not.instanceOf(FlagError);
        expect((err as Error).message).to.match(msg);
      });
    }
    it('rejects an extra flag that redefines a manager flag', () =>
      expect(() => parseManagerFlags([], [{ name: 'dry-run', type: 'bool', default: true, help: 'h' }])).to.throw(Error, /--dry-run is defined twice/));
  });

  describe('resolveControllers', function () {
    const known = ['pv-binder', 'zonal-pv-upgrade', 'capacity', 'rollback'];
    // [--controllers, disabled by default, enabled]
    const table: [string[], string[], string[]][] = [
      [['*'], [], known],
      [['*', '-capacity'], [], ['pv-binder', 'zonal-pv-upgrade', 'rollback']],
      [['-capacity', '*'], [], ['pv-binder', 'zonal-pv-upgrade', 'rollback']],
      [['pv-binder'], [], ['pv-binder']],
      [['rollback', 'pv-binder'], [], ['pv-binder', 'rollback']],
      [['pv-binder', 'pv-binder'], [], ['pv-binder']],
      [[], [], []],
      [['-capacity'], [], []],
      [['*'], ['rollback'], ['pv-binder', 'zonal-pv-upgrade', 'capacity']],
      [['*', 'rollback'], ['rollback'], known],
      [['rollback'], ['rollback'], ['rollback']],
      [['pv-binder', '-pv-binder'], [], []],
      [['-pv-binder', 'pv-binder'], [], []],
      [['*', 'capacity', '-capacity'], [], ['pv-binder', 'zonal-pv-upgrade', 'rollback']],
    ];
    for (const [req, off, want] of table) {
      it(`--controllers=${req.join(',')} (off by default: ${off.join(',') || 'none'}) → ${want.join(',') || 'none'}`, () =>
        expect(resolveControllers(req, known, off)).to.deep.equal(want));
    }

    const unknown: [string[], string][] = [
      [['nope'], 'nope'],
      [['-nope'], 'nope'],
      [['*', 'pv-bindr'], 'pv-bindr'],
      [['-*'], '*'],
      [[''], ''],
    ];
    for (const [req, name] of unknown) {
      it(`rejects unknown controller in --controllers=${req.join(',')}`, () =>
        expect(() => resolveControllers(req, known)).to.throw(
          FlagError,
          `unknown controller "${name}" in --controllers (known: pv-binder, zonal-pv-upgrade, capacity, rollback)`,
        ));
    }
  });

  describe('parseBindAddress', function () {
    const good: [string, { host: string; port: number } | undefined][] = [
      ['0', undefined],
      [':8080', { host: '', port: 8080 }],
      [':0', { host: '', port: 0 }],
      ['127.0.0.1:0', { host: '127.0.0.1', port: 0 }],
      ['0.0.0.0:8081', { host: '0.0.0.0', port: 8081 }],
      ['localhost:9090', { host: 'localhost', port: 9090 }],
      ['[::1]:9', { host: '::1', port: 9 }],
      ['[::]:65535', { host: '::', port: 65535 }],
    ];
    for (const [s, want] of good) it(`parses "${s}"`, () => expect(parseBindAddress(s)).to.deep.equal(want));
    for (const s of ['', '8080', 'localhost', ':', ':http', ':65536', '::1:80', 'a b:80', '1.2.3.4:80:90', '00']) {
      it(`rejects "${s}"`, () => expect(() => parseBindAddress(s)).to.throw(BindAddressError, `invalid bind address "${s}"`));
    }
  });

  describe('formatHelp', function () {
    const help = formatHelp(MANAGER_FLAGS);
    const lines = help.split('\n');
    const wantDefaults: [string, string][] = [
      ['kubeconfig', '(default "")'],
      ['kube-api-qps', '(default 20)'],
      ['kube-api-burst', '(default 30)'],
      ['controllers', '(default [*])'],
      ['leader-elect', '(default true)'],
      ['leader-elect-namespace', '(default "")'],
      ['leader-elect-lease-duration', '(default 15s)'],
      ['leader-elect-renew-deadline', '(default 10s)'],
      ['leader-elect-retry-period', '(default 2s)'],
      ['metrics-bind-address', '(default ":8443")'],
      ['metrics-secure', '(default true)'],
      ['metrics-cert-path', '(default "")'],
      ['health-probe-bind-address', '(default ":8081")'],
      ['log-level', '(default "info")'],
      ['log-format', '(default "json")'],
      ['concurrent-workers', '(default 4)'],
      ['cache-sync-timeout', '(default 2m0s)'],
      ['shutdown-timeout', '(default 30s)'],
      ['dry-run', '(default false)'],
    ];
    it('covers every flag of the table', () => expect(wantDefaults.map(([n]) => n)).to.have.members(MANAGER_FLAGS.map((f) => f.name)));
    for (const [name, def] of wantDefaults) {
      it(`lists --${name} with its type, help and ${def}`, function () {
        const spec = MANAGER_FLAGS.find((f) => f.name === name)!;
        const line = lines.find((l) => l.startsWith(`      --${name} `));
        expect(line, `line for --${name}`).to.be.a('string');
        expect(line).to.contain(spec.help).and.contain(def);
        const type = { string: 'string', int: 'int', float: 'float', bool: '', duration: 'duration', stringList: 'strings' }[spec.type];
        if (type) expect(line).to.match(new RegExp(`^ {6}--${name} ${type} +\\S`));
        else expect(line).to.match(new RegExp(`^ {6}--${name} +\\S`));
      });
    }
    it('is sorted by flag name, with -h/--help last', function () {
      const names = lines.map((l) => /--([a-z0-9-]+)/.exec(l)?.[1]);
      expect(names.at(-1)).to.equal('help');
      const flagNames = names.slice(0, -1) as string[];
      expect(flagNames).to.deep.equal([...flagNames].sort());
      expect(lines.at(-1)).to.match(/^ {2}-h, --help +\S/);
    });
    it('aligns the help column (kube style)', function () {
      const column = (l: string): number => /^\s+-\S*(?:, --\S+)?(?: \S+)? +/.exec(l)![0].length;
      expect(new Set(lines.map(column)).size).to.equal(1);
    });
    it('matches the kube layout for a float flag', () => expect(help).to.match(/^ {6}--kube-api-qps float +QPS to use .* \(default 20\)$/m));
    it('includes controller-specific flags', () =>
      expect(formatHelp([...MANAGER_FLAGS, { name: 'echo-watch-widgets', type: 'bool', default: false, help: 'Also watch widgets.' }])).to.match(
        /^ {6}--echo-watch-widgets +Also watch widgets\. \(default false\)$/m,
      ));
  });

  it("extraNumber reads a loop's numeric flag: the value given, the table's default, or the fallback without the table", function () {
    const specs: FlagSpec[] = [
      { name: 'echo-period', type: 'duration', default: 15_000, help: 'p' },
      { name: 'echo-workers', type: 'int', default: 16, help: 'w' },
    ];
    const given = parseManagerFlags(['--echo-period=2s'], specs).extra;
    expect(extraNumber(given, 'echo-period', 1)).to.equal(2_000);
    expect(extraNumber(given, 'echo-workers', 1)).to.equal(16);
    expect(extraNumber(parseManagerFlags([]).extra, 'echo-workers', 7)).to.equal(7);
  });
});

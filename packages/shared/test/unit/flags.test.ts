import { expect } from 'chai';
import { FlagError, formatHelp, MANAGER_FLAGS, parseBindAddress, parseManagerFlags, resolveControllers } from '../../src/manager/flags.js';
import type { FlagSpec } from '../../src/manager/flags.js';

describe('manager flags', function () {
  it('has kube-controller-manager-style defaults', function () {
    const o = parseManagerFlags([]);
    expect(o).to.deep.include({
      kubeconfig: '',
      kubeApiQps: 20,
      kubeApiBurst: 30,
      controllers: ['*'],
      leaderElect: true,
      leaseDurationMs: 15_000,
      renewDeadlineMs: 10_000,
      retryPeriodMs: 2_000,
      metricsBindAddress: ':8080',
      healthProbeBindAddress: ':8081',
      logLevel: 'info',
      logFormat: 'json',
      concurrentWorkers: 4,
      shutdownTimeoutMs: 30_000,
      dryRun: false,
      help: false,
    });
  });

  const syntax: [string, string[], Partial<ReturnType<typeof parseManagerFlags>>][] = [
    ['--flag=value', ['--kube-api-qps=50'], { kubeApiQps: 50 }],
    ['--flag value', ['--kube-api-burst', '7'], { kubeApiBurst: 7 }],
    ['single dash', ['-kube-api-burst=8'], { kubeApiBurst: 8 }],
    ['bare bool', ['--dry-run'], { dryRun: true }],
    ['bool=false', ['--leader-elect=false'], { leaderElect: false }],
    ['zero qps', ['--kube-api-qps=0'], { kubeApiQps: 0 }],
    ['negative qps', ['--kube-api-qps=-1'], { kubeApiQps: -1 }],
    ['list', ['--controllers=*,-capacity'], { controllers: ['*', '-capacity'] }],
    ['durations', ['--leader-elect-lease-duration=30s', '--leader-elect-renew-deadline=20s', '--leader-elect-retry-period=500ms'], { leaseDurationMs: 30_000, renewDeadlineMs: 20_000, retryPeriodMs: 500 }],
    ['disabled endpoints', ['--metrics-bind-address=0', '--health-probe-bind-address', '0'], { metricsBindAddress: '0', healthProbeBindAddress: '0' }],
    ['help', ['--help'], { help: true }],
    ['-h', ['-h'], { help: true }],
  ];
  for (const [what, argv, want] of syntax) it(`accepts ${what}`, () => expect(parseManagerFlags(argv)).to.deep.include(want));

  const bad: [string[], RegExp][] = [
    [['--kube-api-qps=fast'], /--kube-api-qps: not a number/],
    [['--kube-api-burst=1.5'], /--kube-api-burst: not an integer/],
    [['--kube-api-burst=0'], /--kube-api-burst: must be at least 1/],
    [['--concurrent-workers=0'], /--concurrent-workers/],
    [['--leader-elect=maybe'], /--leader-elect: not a boolean/],
    [['--shutdown-timeout=soon'], /--shutdown-timeout: invalid duration/],
    [['--log-format=xml'], /--log-format: must be one of json, text/],
    [['--log-level=trace'], /--log-level/],
    [['--metrics-bind-address=localhost'], /--metrics-bind-address/],
    [['--health-probe-bind-address=:99999'], /--health-probe-bind-address/],
    [['--no-such-flag'], /unknown flag: --no-such-flag/],
    [['--kubeconfig'], /flag needs an argument: --kubeconfig/],
    [['stray'], /unexpected argument: stray/],
    [['--leader-elect-lease-duration=5s'], /--leader-elect-lease-duration must be greater than --leader-elect-renew-deadline/],
    [['--leader-elect-renew-deadline=2s'], /--leader-elect-renew-deadline must be greater/],
    [['--leader-elect-retry-period=0'], /--leader-elect-retry-period must be greater than zero/],
  ];
  for (const [argv, msg] of bad) {
    it(`rejects ${argv.join(' ')}`, function () {
      let err: unknown;
      try {
        parseManagerFlags(argv);
      } catch (e) {
        err = e;
      }
      expect(err).to.be.instanceOf(FlagError);
      expect((err as Error).message).to.match(msg);
      expect((err as Error).message).to.not.contain('\n');
    });
  }

  it('parses controller-specific flags into extra', function () {
    const extra: FlagSpec[] = [{ name: 'driver-name', type: 'string', default: '', help: 'x' }];
    expect(parseManagerFlags(['--driver-name=hostpath.csi.k8s.io'], extra).extra).to.deep.equal({ 'driver-name': 'hostpath.csi.k8s.io' });
  });

  const known = ['pv-binder', 'zonal-pv-upgrade', 'capacity', 'rollback'];
  const resolve: [string[], string[], string[]][] = [
    [['*'], [], known],
    [['*', '-capacity'], [], ['pv-binder', 'zonal-pv-upgrade', 'rollback']],
    [['pv-binder'], [], ['pv-binder']],
    [['*'], ['rollback'], ['pv-binder', 'zonal-pv-upgrade', 'capacity']],
    [['*', 'rollback'], ['rollback'], known],
    [['pv-binder', '-pv-binder'], [], []],
  ];
  for (const [req, off, want] of resolve) {
    it(`--controllers=${req.join(',')} (off by default: ${off.join(',') || 'none'})`, () => expect(resolveControllers(req, known, off)).to.deep.equal(want));
  }
  for (const req of [['nope'], ['-nope'], ['*', 'pv-bindr']]) {
    it(`rejects unknown controller in ${req.join(',')}`, () => expect(() => resolveControllers(req, known)).to.throw(FlagError, /unknown controller ".*" in --controllers \(known: pv-binder/));
  }

  it('parses bind addresses', function () {
    expect(parseBindAddress('0')).to.equal(undefined);
    expect(parseBindAddress(':8080')).to.deep.equal({ host: '', port: 8080 });
    expect(parseBindAddress('127.0.0.1:0')).to.deep.equal({ host: '127.0.0.1', port: 0 });
    expect(parseBindAddress('[::1]:9')).to.deep.equal({ host: '::1', port: 9 });
  });

  it('help lists every flag with its default', function () {
    const help = formatHelp(MANAGER_FLAGS);
    for (const f of MANAGER_FLAGS) expect(help).to.contain(`--${f.name}`);
    expect(help).to.contain('(default 20)').and.contain('(default 15s)').and.contain('(default ":8080")').and.contain('(default [*])');
  });
});

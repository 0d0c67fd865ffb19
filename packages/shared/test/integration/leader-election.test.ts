import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { Informer, Resources } from '../../src/index.js';
import type { KubeClient, KubeObject, Lease } from '../../src/index.js';
import { createTestNamespace, eventually, sharedControlPlane } from '@topovol/testing';
import type { ControlPlane } from '@topovol/testing';
import { httpGet, sample, startEchoManager } from './manager-process.js';
import type { EchoManager } from './manager-process.js';

// Short timings keep the test quick; the relations between them are what client-go's algorithm
// (and ours) guarantees, so they are what we assert on, measured on the Lease's own timestamps. The
// lease and renew deadline are long enough that a loaded machine's slow requests neither cost a
// leader its Lease mid-test nor use up the slack of the handover bounds, and short enough that a
// standby waiting two leases fails the upper bound.
const LEASE_S = 8;
const RETRY_S = 1;
const JITTER = 1.2;
const ELECTION = [`--leader-elect-lease-duration=${LEASE_S}s`, '--leader-elect-renew-deadline=6s', `--leader-elect-retry-period=${RETRY_S}s`];

describe('leader election with two manager processes', function () {
  this.timeout(120_000);
  let cp: ControlPlane;
  let admin: KubeClient;
  let ns: string;
  const managers: EchoManager[] = [];

  before(async function () {
    cp = await sharedControlPlane();
    admin = cp.adminClient();
  });

  beforeEach(async function () {
    ns = await createTestNamespace(admin);
  });

  afterEach(async function () {
    await Promise.all(managers.splice(0).map((m) => m.proc.kill()));
  });

  const lease = (): Promise<Lease> => admin.get<Lease>(Resources.leases, 'topovol-echo', ns);

  /** Starts two managers; returns [leader, standby], told apart by who reconciles and by their metrics. */
  async function startPair(): Promise<[EchoManager, EchoManager]> {
    for (const name of ['mgr-a', 'mgr-b']) managers.push(await startEchoManager(cp, `${name}-${ns}`, [...ELECTION, `--leader-elect-namespace=${ns}`]));
    const by = await stampedBy('first');
    const leader = managers.find((m) => by.endsWith(`/${m.proc.pid}`))!;
    const standby = managers.find((m) => m !== leader)!;
    expect(leader, `stamp ${by}`).to.not.equal(undefined);
    await eventually(async () => {
      expect(await masterStatus(leader)).to.equal(1);
      expect(await masterStatus(standby)).to.equal(0);
    });
    return [leader, standby];
  }

  async function masterStatus(m: EchoManager): Promise<number | undefined> {
    return sample((await httpGet(m.metricsPort, '/metrics')).body, 'leader_election_master_status', { name: 'topovol-echo' });
  }

  /** Only the leader reconciles: a labelled ConfigMap gets stamped by exactly one process. */
  async function stampedBy(name: string): Promise<string> {
    await admin.create(Resources.configMaps, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: ns, labels: { 'test.topovol.dev/echo': '' } } });
    return eventually(async () => {
      const o = await admin.get<KubeObject>(Resources.configMaps, name, ns);
      const by = o.metadata?.annotations?.['test.topovol.dev/reconciled-by'];
      expect(by).to.be.a('string');
      return by!;
    });
  }

  /** One write to the Lease, as its watch delivered it. */
  interface LeaseWrite {
    holder: string;
    durationS?: number;
    renewTime: string;
  }

  /**
   * Runs `during` while recording every write to the Lease, in order: a watch delivers each one, so
   * a write another replica's follows at once is still seen, with no clock involved. Resolves with
   * what `during` returned and the writes.
   */
  async function watchingLease<T>(during: (writes: readonly LeaseWrite[]) => Promise<T>): Promise<[T, LeaseWrite[]]> {
    const writes: LeaseWrite[] = [];
    const leases = new Informer<Lease>(admin, Resources.leases, { namespace: ns, fieldSelector: 'metadata.name=topovol-echo' });
    const record = (l: Lease): void => void writes.push({ holder: l.spec?.holderIdentity ?? '', durationS: l.spec?.leaseDurationSeconds, renewTime: l.spec?.renewTime ?? '' });
    leases.addEventHandler({ onAdd: record, onUpdate: (_old, l) => record(l) });
    leases.start();
    try {
      await leases.waitForSync();
      return [await during(writes), writes];
    } finally {
      await leases.stop();
    }
  }

  it('exactly one process holds the lease and reconciles; SIGKILL of the leader hands over within lease duration + retry period', async function () {
    const [leader, standby] = await startPair();
    const held = await lease();
    expect(held.spec?.leaseDurationSeconds).to.equal(LEASE_S);
    // The old holder's last renewal is read from the Lease's writes, not by a GET after the kill,
    // which a stalled test process could make after the standby had taken the Lease.
    const [taken, renewals] = await watchingLease(async (writes) => {
      await leader.proc.kill();
      const l = await eventually(async () => {
        const now = await lease();
        expect(now.spec?.holderIdentity).to.not.equal(held.spec?.holderIdentity);
        return now;
      }, 60_000);
      await eventually(() => expect(writes.map((w) => w.holder)).to.include(l.spec?.holderIdentity));
      return l;
    });
    const lastRenew = Math.max(...renewals.filter((r) => r.holder === held.spec?.holderIdentity).map((r) => Date.parse(r.renewTime)));
    expect(taken.spec?.leaseTransitions).to.equal((held.spec?.leaseTransitions ?? 0) + 1);
    // The standby trusts a lease until leaseDuration after it *observed* the last renewal (it looks
    // every retry period, with jitter), then acquires at its next try.
    const handover = (Date.parse(taken.spec!.acquireTime!) - lastRenew) / 1000;
    // Never before the lease ran out: the standby counts the lease from when it saw the last renewal,
    // which was written before it could be seen. Both times come from this machine's clock; the
    // standby stamps acquireTime before its read of the Lease, so that read's time (under a
    // retry period) may come off.
    expect(handover, JSON.stringify(renewals)).to.be.at.least(LEASE_S - RETRY_S);
    // At most a lease and two jittered retry periods (the standby's look after the renewal, its try
    // after the lease), with 3 s for the requests between: a standby that waited two leases fails.
    expect(handover, JSON.stringify(renewals)).to.be.at.most(LEASE_S + 2 * RETRY_S * JITTER + 3);
    expect(await stampedBy('second')).to.match(new RegExp(`/${standby.proc.pid}$`));
  });

  it('a leader that loses its lease while shutting down exits at once with code 1, not after its in-flight reconciles', async function () {
    const m = await startEchoManager(cp, `mgr-${ns}`, [...ELECTION, `--leader-elect-namespace=${ns}`, '--shutdown-timeout=60s']);
    managers.push(m);
    await stampedBy('first');
    // A reconcile that takes a minute: the graceful shutdown waits for it.
    await admin.create(Resources.configMaps, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'slow', namespace: ns, labels: { 'test.topovol.dev/echo': '' } }, data: { hold: '60000' } });
    await eventually(() => expect(readFileSync(m.proc.logFile, 'utf8')).to.contain('holding'));
    const stopping = m.proc.stop(90_000);
    // Meanwhile another identity takes the Lease and keeps it renewed (a standby after a partition).
    let stealing = true;
    const thief = (async () => {
      while (stealing) {
        const l = await lease();
        const now = new Date().toISOString().replace('Z', '000Z');
        await admin.replace<Lease>(Resources.leases, { ...l, spec: { ...l.spec, holderIdentity: 'thief', renewTime: now } }).catch(() => undefined);
        await new Promise((r) => setTimeout(r, 300));
      }
    })();
    try {
      // Without the fix it kept reconciling as a second leader until the shutdown timeout, then exited 0.
      expect(await m.proc.waitForExit()).to.equal(1);
      expect(readFileSync(m.proc.logFile, 'utf8')).to.contain('leader election lost while shutting down');
    } finally {
      stealing = false;
      await thief;
      await stopping;
      // The other tests' managers watch every namespace: they must not find it holding.
      await admin.delete(Resources.configMaps, 'slow', ns);
    }
  });

  // The frozen-leader cases get a longer retry period (and lease) so that there is room to stop the
  // process between two renewals on a loaded machine.
  const FROZEN_LEASE_S = 6;
  const FROZEN_RETRY_S = 2;
  const FROZEN = [`--leader-elect-lease-duration=${FROZEN_LEASE_S}s`, '--leader-elect-renew-deadline=4s', `--leader-elect-retry-period=${FROZEN_RETRY_S}s`];

  /**
   * SIGSTOPs the process between two renewals: a renewal in flight when it stops would be cut off by
   * its own deadline on waking (as client-go's), and the leader lose a Lease nobody took. The next
   * renewal begins a retry period after the last one ended; it stops a fifth of a retry period after
   * a renewal's time (the renewal's start, on this machine's clock), and only if that renewal was
   * seen soon enough, else at the next one.
   */
  async function stopBetweenRenewals(pid: number): Promise<void> {
    const step = FROZEN_RETRY_S * 1000;
    for (let tries = 0; tries < 20; tries++) {
      const before = (await lease()).spec?.renewTime;
      const renewed = await eventually(async () => {
        const t = (await lease()).spec?.renewTime;
        expect(t).to.be.a('string').and.not.equal(before);
        return Date.parse(t!);
      }, 30_000, 20);
      const age = Date.now() - renewed;
      if (age > step * 0.15) continue;
      await new Promise((r) => setTimeout(r, step * 0.2 - age));
      process.kill(pid, 'SIGSTOP');
      return;
    }
    throw new Error('no renewal seen soon enough to stop the process between two');
  }

  // A leader frozen past its lease (SIGSTOP, as a long GC pause or a blocked event loop stops it)
  // wakes with its watches' events and its renew timer due at once. Its workers would send their
  // writes before the renew loop's read of the Lease answers; the write fence holds them.
  it('a leader frozen past its lease wakes to find its Lease taken: it sends none of its queued writes and exits 1', async function () {
    const m = await startEchoManager(cp, `frozen-${ns}`, [...FROZEN, `--leader-elect-namespace=${ns}`]);
    managers.push(m);
    await stampedBy('first');
    const pid = m.proc.pid!;
    let stealing = true;
    let thief: Promise<void> | undefined;
    try {
      await stopBetweenRenewals(pid);
      try {
        // Past the lease as a standby counts it; then another identity takes it and keeps it renewed.
        await new Promise((r) => setTimeout(r, (FROZEN_LEASE_S + 1) * 1000));
        thief = (async () => {
          while (stealing) {
            const l = await lease().catch(() => undefined);
            const now = new Date().toISOString().replace('Z', '000Z');
            if (l) await admin.replace<Lease>(Resources.leases, { ...l, spec: { ...l.spec, holderIdentity: 'standby', renewTime: now } }).catch(() => undefined);
            await new Promise((r) => setTimeout(r, 300));
          }
        })();
        await eventually(async () => expect((await lease()).spec?.holderIdentity).to.equal('standby'));
        await admin.create(Resources.configMaps, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'while-frozen', namespace: ns, labels: { 'test.topovol.dev/echo': '' } } });
      } finally {
        process.kill(pid, 'SIGCONT');
      }
      expect(await m.proc.waitForExit()).to.equal(1);
      const log = readFileSync(m.proc.logFile, 'utf8');
      expect(log).to.contain('leader election lost');
      const cm = await admin.get<KubeObject>(Resources.configMaps, 'while-frozen', ns);
      expect(cm.metadata?.annotations?.['test.topovol.dev/reconciled-by'], log.slice(-3000)).to.equal(undefined);
    } finally {
      stealing = false;
      await thief;
    }
  });

  it('a leader frozen past its renew deadline, its Lease left alone, renews when it wakes and then sends the writes it held', async function () {
    const m = await startEchoManager(cp, `paused-${ns}`, [...FROZEN, `--leader-elect-namespace=${ns}`]);
    managers.push(m);
    await stampedBy('first');
    const pid = m.proc.pid!;
    await stopBetweenRenewals(pid);
    try {
      await new Promise((r) => setTimeout(r, (FROZEN_LEASE_S + 1) * 1000));
      await admin.create(Resources.configMaps, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'while-paused', namespace: ns, labels: { 'test.topovol.dev/echo': '' } } });
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    // No replica took the Lease: the renewal succeeds, the fence opens, the held write goes out.
    const by = await eventually(async () => {
      const o = await admin.get<KubeObject>(Resources.configMaps, 'while-paused', ns);
      const v = o.metadata?.annotations?.['test.topovol.dev/reconciled-by'];
      expect(v).to.be.a('string');
      return v!;
    }, 30_000);
    expect(by).to.match(new RegExp(`/${pid}$`));
    expect(m.proc.running, 'still running').to.equal(true);
  });

  it('a leader whose loop stops with an error releases its leases and exits 1, so that another replica does the work', async function () {
    const m = await startEchoManager(cp, `failing-${ns}`, [...ELECTION, `--leader-elect-namespace=${ns}`, '--controllers=echo,failing']);
    managers.push(m);
    expect(await m.proc.waitForExit()).to.equal(1);
    const log = readFileSync(m.proc.logFile, 'utf8');
    expect(log).to.match(/became leader.*topovol-failing/);
    expect(log).to.match(/controller stopped with an error; exiting.*the failing fixture failed/);
    for (const name of ['topovol-failing', 'topovol-echo']) expect((await admin.get<Lease>(Resources.leases, name, ns)).spec?.holderIdentity, name).to.equal('');
  });

  // Without it, the replica started first took the Lease and, its caches never synced, kept the loop
  // stopped on every replica (--cache-sync-timeout only fails its readiness).
  it('a replica whose caches cannot sync never campaigns: one that can takes the Lease and reconciles', async function () {
    // The widgets CRD is absent (manager-endpoints.test.ts creates and deletes it).
    await eventually(async () => expect(await admin.get(Resources.customResourceDefinitions, 'widgets.test.topovol.dev').then(() => 'present', () => 'absent')).to.equal('absent'), 60_000);
    const stuck = await startEchoManager(cp, `unsynced-${ns}`, [...ELECTION, `--leader-elect-namespace=${ns}`, '--echo-watch-widgets']);
    managers.push(stuck);
    await eventually(async () => expect((await httpGet(stuck.probePort, '/readyz?verbose')).body).to.match(/loop-echo failed: waiting for caches: .*widgets/));
    await new Promise((r) => setTimeout(r, 3 * RETRY_S * 1000));
    expect(await lease().catch(() => undefined), 'no Lease taken by the replica that cannot sync').to.equal(undefined);
    expect(readFileSync(stuck.proc.logFile, 'utf8')).to.not.contain('became leader');
    expect(await masterStatus(stuck), 'a no-leader alert sees it (the series is 0, not absent)').to.equal(0);
    const able = await startEchoManager(cp, `able-${ns}`, [...ELECTION, `--leader-elect-namespace=${ns}`]);
    managers.push(able);
    expect(await stampedBy('first')).to.match(new RegExp(`/${able.proc.pid}$`));
  });

  it('a graceful stop releases the lease and the standby takes over, exit code 0', async function () {
    const [leader, standby] = await startPair();
    const held = await lease();
    // The release is seen in the Lease's writes even if the standby takes the Lease a moment later.
    const [, holders] = await watchingLease(async (writes) => {
      await leader.proc.stop();
      expect(await leader.proc.waitForExit()).to.equal(0);
      const taker = await eventually(async () => {
        const l = await lease();
        expect(l.spec?.holderIdentity).to.be.a('string').and.not.equal('').and.not.equal(held.spec?.holderIdentity);
        return l.spec!.holderIdentity!;
      }, 30_000);
      await eventually(() => expect(writes.map((h) => h.holder)).to.include(taker));
    });
    // Released, as client-go's ReleaseOnCancel: the old holder's last write empties the holder with a
    // 1 s lease, and the standby's take-over follows it, instead of waiting for the lease to expire.
    const firstNew = holders.findIndex((h) => h.holder !== '' && h.holder !== held.spec?.holderIdentity);
    const release = holders.findIndex((h) => h.holder === '');
    expect(release, JSON.stringify(holders)).to.be.at.least(0);
    expect(holders[release]!.durationS, JSON.stringify(holders)).to.equal(1);
    expect(release, JSON.stringify(holders)).to.be.below(firstNew);
    expect(holders.slice(0, release).every((h) => h.holder === held.spec?.holderIdentity), JSON.stringify(holders)).to.equal(true);
    expect(await stampedBy('after-release')).to.match(new RegExp(`/${standby.proc.pid}$`));
  });
});

import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { AuditLogTail, controllerUser, eventually, FaultProxy, sharedControlPlane } from '@topovol/testing';
import type { ControlPlane, ManagedProcess } from '@topovol/testing';
import { BindingWorkload } from './binding-workload.js';
import { BINDER_WORKERS, binderLease, CHAOS_SCALE, deleteBinderLease, ELECTION_LEASE_S, identityOf, kubeconfigVia, recordChaosResult, startBinderManager } from './chaos-harness.js';

/** How late the slow leader's requests arrive: past its lease (and so its renew deadline). */
const LATE_MS = (ELECTION_LEASE_S + 2) * 1000;

// Two managers campaign for the pv-binder Lease while a burst of bindings runs, and the leader is
// taken away: SIGKILLed, or cut off by a network so slow that its writes arrive after a standby
// took over (zombie writes). The standby finishes the work; the binding invariants hold, because
// every binder write carries the object's resourceVersion (a late write conflicts, it does not
// clobber), which is the fencing Kubernetes controllers rely on (client-go's leaderelection package
// says a lease alone does not fence; see its README).
describe('reliability: leader failover during a burst of bindings', function () {
  this.timeout(600_000);
  let cp: ControlPlane;
  const procs: ManagedProcess[] = [];

  before(async function () {
    cp = await sharedControlPlane();
  });
  afterEach(async function () {
    await Promise.all(procs.splice(0).map((p) => p.kill()));
    await deleteBinderLease(cp.adminClient());
  });

  const holder = async (): Promise<string | undefined> => (await binderLease(cp.adminClient()))?.spec?.holderIdentity;

  it('two managers started at once: one leads; SIGKILL of it mid-burst, the other binds the rest', async function () {
    const admin = cp.adminClient();
    const w = await BindingWorkload.create(admin, 'rel-kill-');
    try {
      procs.push(...(await Promise.all(['a', 'b'].map((n) => startBinderManager(`${w.ns}-${n}`)))));
      const leader = await eventually(async () => {
        const h = await holder();
        const p = procs.find((x) => identityOf(x) === h);
        if (!p) throw new Error(`lease held by ${h ?? 'nobody'}`);
        return p;
      }, 60_000);
      const standby = procs.find((p) => p !== leader)!;
      await w.pairs(10 * CHAOS_SCALE);
      await w.untilAllBound(120_000);
      const before = await w.bound();
      expect(readFileSync(standby.logFile, 'utf8'), 'the standby never led').to.not.include('"acquired lease');

      const burstSize = 40 * CHAOS_SCALE;
      const burst = w.pairs(burstSize, 4);
      await eventually(() => expect(w.created).to.be.at.least(before.size + burstSize / 3), 120_000, 100);
      await leader.kill();
      const killed = Date.now();
      await burst;
      await w.untilAllBound(180_000);
      const convergeSeconds = (Date.now() - killed) / 1000;

      expect(await holder()).to.equal(identityOf(standby));
      const violations = await w.violations(before);
      recordChaosResult({ scenario: 'leader failover', fault: 'leader SIGKILL, standby takes over', intensity: 'once, mid-burst', operations: w.operations, violations: violations.length, convergeSeconds });
      expect(violations).to.deep.equal([]);
      expect(standby.running).to.equal(true);
    } finally {
      await w.cleanup();
    }
  });

  it('a leader whose requests arrive late (past its lease) loses the lease and exits; its late writes cannot undo the new leader\'s bindings', async function () {
    const admin = cp.adminClient();
    const w = await BindingWorkload.create(admin, 'rel-slow-');
    const proxy = await FaultProxy.start(cp.url, readFileSync(cp.caFile), 7);
    try {
      const slow = await startBinderManager(`${w.ns}-slow`, { kubeconfig: await kubeconfigVia(proxy.url, `${w.ns}-slow`) });
      procs.push(slow);
      await eventually(async () => expect(await holder()).to.equal(identityOf(slow)), 60_000);
      const standby = await startBinderManager(`${w.ns}-standby`);
      procs.push(standby);
      await w.pairs(10 * CHAOS_SCALE);
      await w.untilAllBound(120_000);
      const before = await w.bound();

      const burstSize = 40 * CHAOS_SCALE;
      const burst = w.pairs(burstSize, 4);
      const storm = w.storm(2);
      await eventually(() => expect(w.created).to.be.at.least(before.size + burstSize / 3), 120_000, 100);
      // Every request of the old leader, its binding writes included, now reaches the API server
      // LATE_MS after it was sent: longer than its renew deadline and the lease.
      proxy.set({ delay: 1, delayMs: LATE_MS });
      const slowed = Date.now();
      expect(await slow.waitForExit(), 'the old leader exits when it cannot renew (as kube-controller-manager)').to.equal(1);
      expect(slow.logTail(50)).to.include('leader election lost; exiting');
      await eventually(async () => expect(await holder()).to.equal(identityOf(standby)), 60_000);
      await Promise.all([burst, storm]);
      // The old leader's writes still in the proxy land now, after the takeover.
      await new Promise((r) => setTimeout(r, LATE_MS + 1_000));
      await w.untilAllBound(180_000);
      const convergeSeconds = (Date.now() - slowed) / 1000;

      const violations = await w.violations(before);
      recordChaosResult({ scenario: 'leader failover', fault: 'leader partitioned by a slow network (writes land after takeover) + conflict storm', intensity: `all requests +${LATE_MS / 1000} s`, operations: w.operations, violations: violations.length, convergeSeconds });
      expect(violations).to.deep.equal([]);
      // Writes, not only lease reads: the binder's in-flight bindings arrived late.
      const lateBindingWrites = proxy.delayedWrites.filter((w) => /\/(persistentvolumes|persistentvolumeclaims)\//.test(w));
      expect(lateBindingWrites, 'binding writes of the old leader were delayed').to.not.deep.equal([]);
      expect(standby.running).to.equal(true);
    } finally {
      await proxy.stop();
      await w.cleanup();
    }
  });

  it('SIGTERM with a backlog: the leader finishes only the keys it holds, releases the lease and exits 0; the next leader binds the rest', async function () {
    const admin = cp.adminClient();
    const w = await BindingWorkload.create(admin, 'rel-term-');
    try {
      // Stored before any binder runs, so the leader starts with every claim queued. At the client's
      // default 20 writes/s a binder binds about 5 pairs/s: the backlog outlasts the first seconds.
      const n = 120;
      await w.volumesThenClaims(n);
      const audit = new AuditLogTail(cp.auditLogPath);
      const leader = await startBinderManager(`${w.ns}-leader`);
      procs.push(leader);
      await eventually(async () => expect((await w.bound()).size).to.be.greaterThan(0), 120_000, 20);
      const atSignal = (await w.bound()).size;
      expect(atSignal, 'the leader still had a backlog when it was stopped').to.be.below(n / 2);
      // A grace period past --shutdown-timeout (30 s): a leader that worked through its queue
      // would bind the whole backlog before exiting (it did, before the fix), not be killed.
      await leader.stop(60_000);
      expect(await leader.waitForExit()).to.equal(0);
      const atExit = await w.bound();
      const log = readFileSync(leader.logFile, 'utf8');
      // At most the claims its workers held when it began shutting down: the claims the API server
      // got a write of after that moment (its log's time; this machine's clock, as the audit log's).
      const shutdownLine = log.split('\n').find((l) => l.includes('"shutting down"'));
      const shutdownAt = Date.parse((JSON.parse(shutdownLine ?? '{}') as { timestamp?: string }).timestamp ?? '');
      expect(shutdownAt, `its shutdown logged: ${shutdownLine}`).to.be.a('number').and.not.NaN;
      const writtenAfter = new Set(
        audit
          .events()
          .filter((e) => e.stage === 'ResponseComplete' && e.user.username === controllerUser('pv-binder') && e.objectRef?.resource === 'persistentvolumeclaims' && e.objectRef.namespace === w.ns && ['update', 'patch'].includes(e.verb))
          .filter((e) => Date.parse(e.requestReceivedTimestamp ?? '') >= shutdownAt)
          .map((e) => e.objectRef?.name),
      );
      expect([...writtenAfter], 'claims written after SIGTERM').to.have.length.at.most(BINDER_WORKERS);
      expect(atExit.size, 'bound by the first leader').to.be.below(n);
      expect(log).to.include('"released lease"').and.not.include('shutdown timeout');
      expect((await binderLease(admin))?.spec?.holderIdentity ?? '').to.equal('');

      // Nothing queued was lost: the next leader lists the claims again and binds every one.
      procs.push(await startBinderManager(`${w.ns}-next`));
      await w.untilAllBound(180_000);
      expect(await w.violations(atExit)).to.deep.equal([]);
    } finally {
      await w.cleanup();
    }
  });
});

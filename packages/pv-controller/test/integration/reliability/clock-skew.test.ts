import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { eventually, sharedControlPlane } from '@topovol/testing';
import type { ControlPlane, ManagedProcess } from '@topovol/testing';
import { BindingWorkload } from './binding-workload.js';
import { binderLease, CHAOS_SCALE, CLOCK_PRELOAD, deleteBinderLease, ELECTION_LEASE_S, identityOf, recordChaosResult, startBinderManager } from './chaos-harness.js';

const HOUR = 3_600_000;

// Wrong clocks must not make two leaders. The leader's wall clock is an hour slow, so every
// renewTime it writes looks an hour old to anyone comparing it with their own clock; the standby's
// wall clock is an hour fast and then steps another hour forward (NTP, a resumed VM) while it
// watches. Leader election trusts a lease for leaseDuration after it *observed* a change, on the
// monotonic clock (client-go's leaderelection does the same), so neither may matter: the lease
// never changes hands while the leader renews, and after the leader is killed the standby takes
// over and binds the rest.
describe('reliability: clock skew between leader and standby', function () {
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

  it('a standby whose clock is ahead and then steps never takes the lease from a live leader whose clock is behind', async function () {
    const admin = cp.adminClient();
    const w = await BindingWorkload.create(admin, 'rel-skew-');
    try {
      const leader = await startBinderManager(`${w.ns}-leader`, { nodeArgs: CLOCK_PRELOAD, env: { ...process.env, TOPOVOL_TEST_CLOCK_SKEW_MS: String(-HOUR) } });
      procs.push(leader);
      await eventually(async () => expect((await binderLease(admin))?.spec?.holderIdentity).to.equal(identityOf(leader)), 60_000);
      const stepAfterMs = 5_000;
      const standby = await startBinderManager(`${w.ns}-standby`, { nodeArgs: CLOCK_PRELOAD, env: { ...process.env, TOPOVOL_TEST_CLOCK_SKEW_MS: String(HOUR), TOPOVOL_TEST_CLOCK_STEP: `${stepAfterMs}:${HOUR}` } });
      procs.push(standby);
      const standbyStarted = Date.now();

      // Bindings run while the clocks disagree; the lease is watched all along.
      const holders = new Set<string>();
      const watching = (async () => {
        // Past the step, plus three lease durations of a naive standby's chances.
        while (Date.now() - standbyStarted < stepAfterMs + (3 * ELECTION_LEASE_S + 3) * 1000 * Math.min(CHAOS_SCALE, 4)) {
          holders.add((await binderLease(admin))?.spec?.holderIdentity ?? '');
          await new Promise((r) => setTimeout(r, 200));
        }
      })();
      await w.pairs(20 * CHAOS_SCALE, 4);
      await watching;
      expect([...holders]).to.deep.equal([identityOf(leader)]);
      expect(readFileSync(standby.logFile, 'utf8'), 'the standby never led').to.not.include('"acquired lease');
      await w.untilAllBound(120_000);
      const before = await w.bound();

      await leader.kill();
      const killed = Date.now();
      await eventually(async () => expect((await binderLease(admin))?.spec?.holderIdentity).to.equal(identityOf(standby)), 60_000);
      await w.pairs(10 * CHAOS_SCALE, 4);
      await w.untilAllBound(120_000);
      const convergeSeconds = (Date.now() - killed) / 1000;
      const violations = await w.violations(before);
      recordChaosResult({ scenario: 'clock skew', fault: 'leader clock -1 h; standby +1 h, then stepped +1 h; leader killed', intensity: 'skew 2 h, step 1 h', operations: w.operations, violations: violations.length, convergeSeconds });
      expect(violations).to.deep.equal([]);
    } finally {
      await w.cleanup();
    }
  });
});

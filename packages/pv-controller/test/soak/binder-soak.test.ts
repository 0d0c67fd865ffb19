import { appendFileSync, readFileSync } from 'node:fs';
import { expect } from 'chai';
import { sharedControlPlane } from '@topovol/testing';
import type { ManagedProcess } from '@topovol/testing';
import { BindingWorkload } from '../integration/reliability/binding-workload.js';
import { startBinderManager } from '../integration/reliability/chaos-harness.js';

/**
 * The memory soak (hack/chaos.sh, not the test command): the manager binary binds a steady churn
 * of claims (3 new pairs a second, the oldest deleted so that about 90 stay) for
 * $TOPOVOL_SOAK_MINUTES (10 by default), its resident set printed every 10 s and written to
 * $TOPOVOL_SOAK_RSS (CSV) when set. A leak shows as growth between the second and the last quarter.
 */
const MINUTES = Number(process.env.TOPOVOL_SOAK_MINUTES ?? 10);
const SAMPLE_MS = 10_000;

function rssMiB(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith('VmRSS:'));
  return Number(line?.split(/\s+/)[1] ?? 0) / 1024;
}

const mean = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);

describe('soak: pv-binder memory under steady claim churn', function () {
  this.timeout((MINUTES + 10) * 60_000);

  it(`binds a steady churn for ${MINUTES} min with bounded memory and the invariants holding`, async function () {
    const admin = (await sharedControlPlane()).adminClient();
    const w = await BindingWorkload.create(admin, 'soak-');
    let mgr: ManagedProcess | undefined;
    const samples: { seconds: number; rssMiB: number; live: number }[] = [];
    try {
      mgr = await startBinderManager(`${w.ns}-mgr`, { leaderElect: false });
      const started = Date.now();
      let nextSample = started;
      const csv = process.env.TOPOVOL_SOAK_RSS;
      if (csv) appendFileSync(csv, 'seconds,rss_mib,live_pairs\n');
      while (Date.now() - started < MINUTES * 60_000) {
        const tick = Date.now();
        await w.pairs(3, 3);
        await w.retireAllBut(90);
        if (Date.now() >= nextSample) {
          const s = { seconds: Math.round((Date.now() - started) / 1000), rssMiB: rssMiB(mgr.pid!), live: w.live };
          samples.push(s);
          console.log(`  t=${s.seconds}s rss=${s.rssMiB.toFixed(1)}MiB live pairs=${s.live} created=${w.created}`);
          if (csv) appendFileSync(csv, `${s.seconds},${s.rssMiB.toFixed(1)},${s.live}\n`);
          nextSample += SAMPLE_MS;
        }
        await new Promise((r) => setTimeout(r, Math.max(0, 1_000 - (Date.now() - tick))));
      }
      await w.untilAllBound(120_000);
      expect(await w.violations(new Map())).to.deep.equal([]);
      expect(mgr.running, `the manager exited:\n${mgr.logTail(20)}`).to.equal(true);
      // The first quarter is warm-up (caches, JIT); growth after it is what a leak looks like.
      const q = Math.floor(samples.length / 4);
      const second = mean(samples.slice(q, 2 * q).map((s) => s.rssMiB));
      const last = mean(samples.slice(3 * q).map((s) => s.rssMiB));
      console.log(`  mean RSS: second quarter ${second.toFixed(1)} MiB, last quarter ${last.toFixed(1)} MiB`);
      expect(last, 'resident set of the last quarter vs the second (MiB)').to.be.at.most(second * 1.25);
    } finally {
      await mgr?.stop();
      await w.cleanup();
    }
  });
});

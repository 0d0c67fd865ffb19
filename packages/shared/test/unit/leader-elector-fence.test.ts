import { expect } from 'chai';
import { classifyError, KubeApiError, WriteFencedError, writeMayHaveApplied } from '../../src/client/errors.js';
import type { KubeClient } from '../../src/client/kube-client.js';
import { LeaderElector } from '../../src/leaderelection/leader-elector.js';
import type { Lease } from '../../src/types/wire.js';

/**
 * The write fence: a leader whose last successful renewal began more than the renew deadline ago
 * (by the monotonic clock, moved by hand here) holds its loop's writes, whatever its renew loop has
 * or has not concluded yet; a renewal lifts it. The integration test with a frozen process is in
 * test/integration/leader-election.test.ts.
 */
describe('LeaderElector.writeFence', function () {
  this.timeout(20_000);

  /** A Lease store whose renewals can be held: `hold` makes every request hang until released. */
  function leaseStore() {
    let lease: Lease | undefined;
    let held: (() => void)[] | undefined;
    const gate = async (): Promise<void> => {
      if (held) await new Promise<void>((r) => held!.push(r));
    };
    const client = {
      get: async () => {
        await gate();
        if (!lease) throw new KubeApiError(404, { reason: 'NotFound' });
        return lease;
      },
      create: async (_r: unknown, obj: Lease) => {
        await gate();
        lease = { ...obj, metadata: { ...obj.metadata, resourceVersion: '1' } };
        return lease;
      },
      replace: async (_r: unknown, obj: Lease) => {
        await gate();
        lease = { ...obj, metadata: { ...obj.metadata, resourceVersion: String(Number(obj.metadata?.resourceVersion ?? '0') + 1) } };
        return lease;
      },
    } as unknown as KubeClient;
    return {
      client,
      hold: () => void (held = []),
      release: () => {
        const waiting = held ?? [];
        held = undefined;
        for (const r of waiting) r();
      },
      renewals: () => Number(lease?.metadata?.resourceVersion ?? 0),
    };
  }

  async function until(cond: () => boolean): Promise<void> {
    while (!cond()) await new Promise((r) => setTimeout(r, 5));
  }

  it('is open while not leading and within the renew deadline of the last renewal, shut past it, open again after a renewal', async function () {
    const store = leaseStore();
    let now = 1_000_000;
    let leading = false;
    const elector = new LeaderElector(
      store.client,
      { namespace: 'ns', name: 'l', identity: 'me', leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 20 },
      { onStartedLeading: () => void (leading = true), onStoppedLeading: () => void (leading = false) },
      () => now,
    );
    expect(elector.writeFence(), 'a replica that never led writes as before').to.equal(undefined);
    const running = elector.run();
    await until(() => leading);
    expect(elector.writeFence()).to.equal(undefined);

    // Frozen: renewals hang, the clock passes the renew deadline of the acquire.
    store.hold();
    await new Promise((r) => setTimeout(r, 60));
    now += 10_001;
    const why = elector.writeFence();
    expect(why).to.be.a('string').and.match(/lease ns\/l last renewed 10001 ms ago, past the renew deadline \(10000 ms\)/);
    expect(elector.isLeader(), 'the renew loop has not given up yet: only the fence stops the writes').to.equal(true);

    // The held renewal began before the clock moved; one that begins after it lifts the fence.
    const before = store.renewals();
    store.release();
    await until(() => store.renewals() > before + 1);
    expect(elector.writeFence()).to.equal(undefined);

    await elector.stop();
    await running;
    expect(elector.writeFence(), 'released: a reconcile abandoned at the shutdown timeout must not write beside the next leader').to.match(/lease ns\/l released or lost/);
  });

  it('stays open for a replica that never led, also once it stops', async function () {
    const store = leaseStore();
    const other = new LeaderElector(
      store.client,
      { namespace: 'ns', name: 'l', identity: 'standby', leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 20 },
      { onStartedLeading: () => undefined, onStoppedLeading: () => undefined },
    );
    store.hold();
    const running = other.run();
    expect(other.writeFence()).to.equal(undefined);
    const stopping = other.stop();
    store.release();
    await stopping;
    await running;
    expect(other.writeFence()).to.equal(undefined);
  });

  it('a fenced write is classified as not applied and retriable', function () {
    const err = new WriteFencedError('PATCH', '/api/v1/x', 'lease expired');
    expect(classifyError(err)).to.include({ kind: 'Fenced', retriable: true });
    expect(writeMayHaveApplied(err)).to.equal(false);
  });
});

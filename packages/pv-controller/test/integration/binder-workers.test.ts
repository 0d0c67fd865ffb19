import { expect } from 'chai';
import { metricsRegistry } from '@topovol/shared';
import { InProcessLoop, sharedControlPlane } from '@topovol/testing';
import { WORKERS_DEFAULT } from '../../src/binder/binder-flags.js';
import { pvBinderDescriptor } from '../../src/pv-binder-descriptor.js';

async function maxConcurrentReconciles(): Promise<number | undefined> {
  const m = metricsRegistry.getSingleMetric('controller_runtime_max_concurrent_reconciles');
  const { values } = (await m?.get()) ?? { values: [] };
  return values.find((v) => v.labels.controller === 'pv-binder')?.value;
}

// The pv-binder's worker count is its own flag, not --concurrent-workers (the other loops'):
// more writes in flight cost kube-apiserver and etcd less CPU per write (hack/bench/README.md).
describe('pv-binder: worker count', function () {
  this.timeout(60_000);

  it(`runs ${WORKERS_DEFAULT} workers by default, whatever --concurrent-workers says`, async function () {
    await sharedControlPlane();
    const loop = await InProcessLoop.start(pvBinderDescriptor, ['--concurrent-workers=2']);
    try {
      expect(await maxConcurrentReconciles()).to.equal(WORKERS_DEFAULT);
    } finally {
      await loop.stop();
    }
  });

  it('runs as many as --concurrent-pv-binder-syncs asks', async function () {
    const loop = await InProcessLoop.start(pvBinderDescriptor, ['--concurrent-pv-binder-syncs=3']);
    try {
      expect(await maxConcurrentReconciles()).to.equal(3);
    } finally {
      await loop.stop();
    }
  });

  it('refuses zero workers with a flag error', async function () {
    let err: unknown;
    await InProcessLoop.start(pvBinderDescriptor, ['--concurrent-pv-binder-syncs=0']).then(
      (l) => l.stop(),
      (e: unknown) => (err = e),
    );
    expect(String(err)).to.match(/--concurrent-pv-binder-syncs.*must be at least 1/);
  });
});

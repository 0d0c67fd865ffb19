import { expect } from 'chai';
import type { PersistentVolume } from '@topovol/shared';
import { AssumeCache } from '../../src/binder/assume-cache.js';

const pv = (resourceVersion: string, claim?: string): PersistentVolume => ({ metadata: { name: 'pv-1', resourceVersion }, spec: claim ? { claimRef: { namespace: 'ns', name: claim } } : {} });

describe('binder AssumeCache: our writes until the informer catches up', function () {
  it('our write wins over an older cached object, until the informer has it or something newer', function () {
    const cache = new AssumeCache<PersistentVolume>();
    cache.assume('pv-1', pv('12', 'c1'));
    expect(cache.get('pv-1', pv('10'))?.spec?.claimRef?.name).to.equal('c1');
    // Caught up (someone wrote after us, even): the informer's object from now on.
    expect(cache.get('pv-1', pv('13'))?.spec?.claimRef).to.equal(undefined);
    expect(cache.get('pv-1', pv('10'))?.metadata?.resourceVersion).to.equal('10');
  });

  it('an object the informer no longer has is gone, even when our write was stored after its delete event', function () {
    const cache = new AssumeCache<PersistentVolume>();
    // The delete event forgets first; the answer to our last write lands after it.
    cache.forget('pv-1');
    cache.assume('pv-1', pv('12', 'c1'));
    expect(cache.get('pv-1', undefined)).to.equal(undefined);
    // And it stays gone: the copy is dropped, not kept for later.
    expect(cache.get('pv-1', pv('5'))?.metadata?.resourceVersion).to.equal('5');
  });

  it('the same resourceVersion is the informer catching up', function () {
    const cache = new AssumeCache<PersistentVolume>();
    cache.assume('pv-1', pv('12', 'c1'));
    expect(cache.get('pv-1', pv('12', 'c1'))?.metadata?.resourceVersion).to.equal('12');
    expect(cache.get('pv-1', pv('11'))?.metadata?.resourceVersion).to.equal('11');
  });

  it('compares resourceVersions as numbers, and forget drops our copy', function () {
    const cache = new AssumeCache<PersistentVolume>();
    cache.assume('pv-1', pv('100', 'c1'));
    expect(cache.get('pv-1', pv('99'))?.metadata?.resourceVersion).to.equal('100');
    cache.forget('pv-1');
    expect(cache.get('pv-1', pv('99'))?.metadata?.resourceVersion).to.equal('99');
    expect(cache.get('pv-2', undefined)).to.equal(undefined);
  });
});

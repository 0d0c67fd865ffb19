import { expect } from 'chai';
import { IndexedCache } from '../../src/informer/indexed-cache.js';
import type { KubeObject } from '../../src/informer/object-key.js';

describe('IndexedCache.addIndex', function () {
  const byName = (o: KubeObject): string[] => [o.metadata?.name ?? ''];

  it('accepts the same index added again by a second loop (same or identical function)', function () {
    const cache = new IndexedCache<KubeObject>();
    cache.addIndex('name', byName);
    cache.addIndex('name', byName);
    cache.addIndex('name', (o: KubeObject): string[] => [o.metadata?.name ?? '']);
  });

  it('refuses a name reused for another function', function () {
    const cache = new IndexedCache<KubeObject>();
    cache.addIndex('name', byName);
    expect(() => cache.addIndex('name', (o) => [o.metadata?.namespace ?? ''])).to.throw(/index "name" is already defined by a different function/);
  });
});

import { expect } from 'chai';
import { IndexedCache } from '../../src/informer/indexed-cache.js';
import type { IndexFunc } from '../../src/informer/indexed-cache.js';
import type { KubeObject } from '../../src/informer/object-key.js';

const obj = (namespace: string, name: string): KubeObject => ({ metadata: { namespace, name } });

describe('IndexedCache.addIndex', function () {
  const byName = (o: KubeObject): string[] => [o.metadata?.name ?? ''];

  it('accepts the same function added again by a second loop, and files each object once', function () {
    const cache = new IndexedCache<KubeObject>();
    cache.upsert(obj('a', 'x'));
    cache.addIndex('name', byName);
    cache.addIndex('name', byName);
    cache.upsert(obj('b', 'x'));
    expect(cache.byIndex('name', 'x').map((o) => o.metadata?.namespace).sort()).to.deep.equal(['a', 'b']);
    expect(cache.indexValues('name')).to.deep.equal(['x']);
  });

  it('refuses a name reused for another function, with the name in the message, and keeps the first', function () {
    const cache = new IndexedCache<KubeObject>();
    cache.upsert(obj('a', 'x'));
    cache.addIndex('name', byName);
    expect(() => cache.addIndex('name', (o) => [o.metadata?.namespace ?? ''])).to.throw(/index "name" is already defined by a different function/);
    expect(cache.indexValues('name')).to.deep.equal(['x']);
  });

  // Same source text, different captured values: accepting the second would answer its loop with
  // the first one's prefix. Only the same function is the same index.
  it('refuses a closure with the same text as the first but other captured values', function () {
    const prefixed =
      (prefix: string): IndexFunc<KubeObject> =>
      (o) => [`${prefix}${o.metadata?.name ?? ''}`];
    const cache = new IndexedCache<KubeObject>();
    cache.addIndex('prefixed', prefixed('a/'));
    expect(() => cache.addIndex('prefixed', prefixed('b/'))).to.throw(/already defined by a different function/);
  });

  it('keeps indexes of other names independent', function () {
    const cache = new IndexedCache<KubeObject>();
    cache.addIndex('name', byName);
    cache.addIndex('namespace', (o) => [o.metadata?.namespace ?? '']);
    cache.upsert(obj('a', 'x'));
    cache.upsert(obj('a', 'y'));
    cache.remove('a/x');
    expect(cache.indexValues('name')).to.deep.equal(['y']);
    expect(cache.byIndex('namespace', 'a').map((o) => o.metadata?.name)).to.deep.equal(['y']);
  });
});

import { expect } from 'chai';
import { eventsAbout } from '../../src/informer/event-indexes.js';
import { IndexedCache } from '../../src/informer/indexed-cache.js';
import type { KubeObject } from '../../src/informer/object-key.js';
import type { Event } from '../../src/types/wire.js';
import { pv } from './event-delivery-fixtures.js';

// An index answers for the object as it is now, as client-go's tools/cache thread_safe_store.go
// updateIndices drops the old object's index values before adding the new one's.

describe('indexed cache edges', function () {
  const byClass = (o: KubeObject): string[] => [o.metadata?.labels?.class ?? ''];

  it('an object updated to another index value is found under the new value only', function () {
    const cache = new IndexedCache<KubeObject>();
    cache.addIndex('class', byClass);
    cache.upsert(pv('a', 1, { class: 'fast' }));
    cache.upsert(pv('a', 2, { class: 'slow' }));
    expect(cache.byIndex('class', 'fast')).to.deep.equal([]);
    expect(cache.byIndex('class', 'slow').map((o) => o.metadata?.resourceVersion)).to.deep.equal(['2']);
    expect(cache.indexValues('class')).to.deep.equal(['slow']);
  });

  it('removing a key the cache does not hold returns undefined and touches no index function', function () {
    const cache = new IndexedCache<KubeObject>();
    cache.addIndex('name', (o) => [o.metadata!.name!]);
    cache.upsert(pv('a', 1));
    expect(cache.remove('ghost')).to.equal(undefined);
    expect(cache.byIndex('name', 'a')).to.have.length(1);
  });

  it("eventsAbout: an Event in the claim's namespace whose involvedObject names another namespace is not about the claim", function () {
    const claim = { metadata: { namespace: 'a', name: 'c', uid: 'uid-c' } };
    const e: Event = { metadata: { namespace: 'a', name: 'e' }, involvedObject: { kind: 'PersistentVolumeClaim', namespace: 'b', name: 'c', uid: 'uid-c' } };
    expect(eventsAbout([e], claim)).to.deep.equal([]);
  });
});

import { expect } from 'chai';
import { RawObservers } from '../../src/informer/raw-observers.js';
import type { RawObserverOptions } from '../../src/informer/informer-types.js';

describe('RawObservers: which answers an informer may parse without managedFields', function () {
  const cases: { name: string; observers: RawObserverOptions[]; firstList: boolean; relist: boolean; watch: boolean }[] = [
    { name: 'no observer', observers: [], firstList: true, relist: true, watch: true },
    { name: 'observers that read none', observers: [{}, {}], firstList: true, relist: true, watch: true },
    { name: 'one of cached objects', observers: [{}, { managedFields: 'cached' }], firstList: true, relist: false, watch: false },
    { name: 'one of every object', observers: [{ managedFields: 'all' }], firstList: false, relist: false, watch: false },
    { name: 'of cached, then of every object: every', observers: [{ managedFields: 'cached' }, { managedFields: 'all' }], firstList: false, relist: false, watch: false },
    { name: 'of every, then of cached objects: still every', observers: [{ managedFields: 'all' }, { managedFields: 'cached' }], firstList: false, relist: false, watch: false },
  ];
  for (const c of cases) {
    it(c.name, function () {
      const o = new RawObservers<never>();
      for (const opts of c.observers) o.add(() => undefined, opts);
      expect({ firstList: o.mayCut(true, true), relist: o.mayCut(true, false), watch: o.mayCut(false, false) }).to.deep.equal({ firstList: c.firstList, relist: c.relist, watch: c.watch });
      expect(o.size).to.equal(c.observers.length);
    });
  }
});

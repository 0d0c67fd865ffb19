import { expect } from 'chai';
import { RawObservers } from '../../src/informer/raw-observers.js';
import type { RawObserverOptions } from '../../src/informer/informer-types.js';

describe('RawObservers: which answers an informer may parse without managedFields', function () {
  type Cut = boolean | { unlessNaming: string[] };
  const cases: { name: string; observers: RawObserverOptions[]; firstList: Cut; relist: Cut; watch: Cut }[] = [
    { name: 'no observer', observers: [], firstList: true, relist: true, watch: true },
    { name: 'observers that read none', observers: [{}, {}], firstList: true, relist: true, watch: true },
    { name: 'one of cached objects', observers: [{}, { managedFields: 'cached' }], firstList: true, relist: false, watch: false },
    { name: 'one of every object', observers: [{ managedFields: 'all' }], firstList: false, relist: false, watch: false },
    { name: 'of cached, then of every object: every', observers: [{ managedFields: 'cached' }, { managedFields: 'all' }], firstList: false, relist: false, watch: false },
    { name: 'of every, then of cached objects: still every', observers: [{ managedFields: 'all' }, { managedFields: 'cached' }], firstList: false, relist: false, watch: false },
    { name: "one of cached objects, one manager's entries: answers naming it", observers: [{ managedFields: 'cached', managers: ['kube-controller-manager'] }], firstList: true, relist: { unlessNaming: ['kube-controller-manager'] }, watch: { unlessNaming: ['kube-controller-manager'] } },
    { name: 'two observers of some managers: answers naming either', observers: [{ managedFields: 'cached', managers: ['b'] }, { managedFields: 'all', managers: ['a', 'b'] }], firstList: { unlessNaming: ['a', 'b'] }, relist: { unlessNaming: ['a', 'b'] }, watch: { unlessNaming: ['a', 'b'] } },
    { name: "some managers', then every manager's: every answer", observers: [{ managedFields: 'cached', managers: ['a'] }, { managedFields: 'cached' }], firstList: true, relist: false, watch: false },
    { name: "every manager's, then some managers': still every answer", observers: [{ managedFields: 'cached' }, { managedFields: 'cached', managers: ['a'] }], firstList: true, relist: false, watch: false },
    { name: 'a name JSON may escape: every answer', observers: [{ managedFields: 'cached', managers: ['a"b'] }], firstList: true, relist: false, watch: false },
    ...['a<b', 'a&b', 'a\\b', 'é', 'a\u2028'].map((n) => ({ name: `a name JSON may escape (${JSON.stringify(n)}): every answer`, observers: [{ managedFields: 'cached' as const, managers: [n] }], firstList: true, relist: false, watch: false })),
    { name: 'an empty list of names: every answer', observers: [{ managedFields: 'cached', managers: [] }], firstList: true, relist: false, watch: false },
    { name: 'names without managedFields read: none', observers: [{ managers: ['a'] }], firstList: true, relist: true, watch: true },
  ];
  for (const c of cases) {
    it(c.name, function () {
      const o = new RawObservers<never>();
      for (const opts of c.observers) o.add(() => undefined, opts);
      expect({ firstList: o.cut(true, true), relist: o.cut(true, false), watch: o.cut(false, false) }).to.deep.equal({ firstList: c.firstList, relist: c.relist, watch: c.watch });
      expect(o.size).to.equal(c.observers.length);
    });
  }
});

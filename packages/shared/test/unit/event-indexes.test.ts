import { expect } from 'chai';
import { eventsAbout, involvedObjectUid } from '../../src/informer/event-indexes.js';
import type { Event } from '../../src/types/wire.js';

// Events found by an object's uid are about it only in its namespace and under its name.
describe('eventsAbout', function () {
  const claim = { metadata: { namespace: 'a', name: 'c', uid: 'uid-c' } };
  const ev = (ns: string, involvedNs: string, name: string, uid = 'uid-c'): Event => ({ metadata: { namespace: ns, name: `e-${ns}-${involvedNs}-${name}` }, involvedObject: { kind: 'PersistentVolumeClaim', namespace: involvedNs, name, uid } });
  const cases: { name: string; e: Event; about: boolean }[] = [
    { name: "in the claim's namespace, naming it", e: ev('a', 'a', 'c'), about: true },
    { name: 'in another namespace, naming it there (the uid copied)', e: ev('b', 'b', 'c'), about: false },
    { name: "in another namespace, claiming the claim's namespace (an Event with eventTime)", e: ev('b', 'a', 'c'), about: false },
    { name: "in the claim's namespace, naming another claim", e: ev('a', 'a', 'other'), about: false },
  ];
  for (const c of cases) it(c.name, () => expect(eventsAbout([c.e], claim).length).to.equal(c.about ? 1 : 0));

  it('the index files Events under their involved uid only', function () {
    expect(involvedObjectUid(ev('a', 'a', 'c'))).to.deep.equal(['uid-c']);
    expect(involvedObjectUid({ metadata: {}, involvedObject: {} })).to.deep.equal([]);
  });
});

import { expect } from 'chai';
import { accessModesKey, groupsForClaim } from '../../src/binder/access-modes.js';
import { claimStatusFor } from '../../src/binder/claim-status.js';
import { claim, vol } from './world-fixture.js';

const PRE_RESIZE = 'volume.alpha.kubernetes.io/pre-resize-capacity';

// Upstream's updateClaimStatus (pv_controller.go).
describe('claimStatusFor', function () {
  const v = vol('v', '2Gi', { accessModes: ['ReadWriteOnce', 'ReadWriteMany'], volumeAttributesClassName: 'gold' });
  const cases: { name: string; status: NonNullable<ReturnType<typeof claim>['status']>; phase: 'Pending' | 'Bound' | 'Lost'; volume?: ReturnType<typeof vol>; want: object | undefined }[] = [
    { name: 'Pending → Bound: phase, access modes, capacity and current class from the volume', status: { phase: 'Pending' }, phase: 'Bound', volume: v, want: { phase: 'Bound', accessModes: ['ReadWriteOnce', 'ReadWriteMany'], capacity: { storage: '2Gi' }, currentVolumeAttributesClassName: 'gold' } },
    { name: 'already Bound with the same fields: nothing to write', status: { phase: 'Bound', accessModes: ['ReadWriteOnce', 'ReadWriteMany'], capacity: { storage: '2Gi' } }, phase: 'Bound', volume: v, want: undefined },
    { name: 'already Bound with another capacity: capacity kept (a smaller filesystem is deliberate)', status: { phase: 'Bound', accessModes: ['ReadWriteOnce', 'ReadWriteMany'], capacity: { storage: '1Gi' } }, phase: 'Bound', volume: v, want: undefined },
    { name: 'already Bound, access modes differ: only access modes follow', status: { phase: 'Bound', accessModes: ['ReadWriteOnce'], capacity: { storage: '1Gi' } }, phase: 'Bound', volume: v, want: { phase: 'Bound', accessModes: ['ReadWriteOnce', 'ReadWriteMany'], capacity: { storage: '1Gi' } } },
    { name: 'becoming Bound with a pending resize: the pre-resize capacity', status: { phase: 'Pending' }, phase: 'Bound', volume: vol('v', '5Gi', { annotations: { [PRE_RESIZE]: '3Gi' } }), want: { phase: 'Bound', accessModes: ['ReadWriteOnce'], capacity: { storage: '3Gi' } } },
    { name: 'becoming Bound with an unreadable pre-resize capacity: the volume\'s', status: { phase: 'Pending' }, phase: 'Bound', volume: vol('v', '5Gi', { annotations: { [PRE_RESIZE]: 'lots' } }), want: { phase: 'Bound', accessModes: ['ReadWriteOnce'], capacity: { storage: '5Gi' } } },
    { name: 'Lost → Bound: capacity set, current class not (only from Pending)', status: { phase: 'Lost' }, phase: 'Bound', volume: v, want: { phase: 'Bound', accessModes: ['ReadWriteOnce', 'ReadWriteMany'], capacity: { storage: '2Gi' } } },
    { name: 'Bound → Lost: access modes, capacity and current class cleared', status: { phase: 'Bound', accessModes: ['ReadWriteOnce'], capacity: { storage: '1Gi' }, currentVolumeAttributesClassName: 'gold' }, phase: 'Lost', want: { phase: 'Lost' } },
    { name: 'Pending without volume fields: nothing to write', status: { phase: 'Pending' }, phase: 'Pending', want: undefined },
    { name: 'Pending that still shows a capacity: cleared', status: { phase: 'Pending', capacity: { storage: '1Gi' } }, phase: 'Pending', want: { phase: 'Pending' } },
  ];
  for (const c of cases) it(c.name, () => expect(claimStatusFor({ ...claim('c', '1Gi'), status: c.status }, c.phase, c.volume)).to.deep.equal(c.want));
});

// pkg/controller/volume/persistentvolume/index.go: access-mode groups.
describe('access-mode groups', function () {
  it('keys modes in upstream\'s order without duplicates (GetAccessModesAsString)', function () {
    expect(accessModesKey(['ReadWriteMany', 'ReadWriteOnce', 'ReadWriteOnce'])).to.equal('RWO,RWX');
    expect(accessModesKey(['ReadWriteOncePod', 'ReadOnlyMany'])).to.equal('ROX,RWOP');
    expect(accessModesKey([])).to.equal('');
  });
  it('searches the groups containing all the claim\'s modes, fewest modes first', function () {
    expect(groupsForClaim(['RWO,ROX,RWX', 'RWX', 'RWO', 'RWO,RWX', 'ROX'], ['ReadWriteOnce'])).to.deep.equal(['RWO', 'RWO,RWX', 'RWO,ROX,RWX']);
    expect(groupsForClaim(['RWO', 'RWX'], ['ReadWriteOnce', 'ReadWriteMany'])).to.deep.equal([]);
  });
});

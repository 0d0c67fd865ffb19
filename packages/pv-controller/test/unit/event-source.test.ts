import { expect } from 'chai';
import { eventSourceOf } from '@topovol/shared';
import { pvBinderDescriptor } from '../../src/pv-binder-descriptor.js';
import { zonalPvUpgradeDescriptor } from '../../src/zonal-pv-upgrade-descriptor.js';

// What the manager and the in-process harness both record Events as (eventSourceOf).
describe('Event source of the loops', function () {
  it("pv-binder: kube-controller-manager's binder's component, and no host, as kube-controller-manager records", function () {
    expect(eventSourceOf(pvBinderDescriptor, 'topovol-pv-binder-0')).to.deep.equal({ component: 'persistentvolume-controller', host: '' });
  });

  it("Topovol's own loops: their component and the replica's host", function () {
    expect(eventSourceOf(zonalPvUpgradeDescriptor, 'topovol-0')).to.deep.equal({ component: 'topovol-zonal-pv-upgrade', host: 'topovol-0' });
  });
});

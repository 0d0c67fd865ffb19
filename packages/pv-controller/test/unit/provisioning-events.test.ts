import { expect } from 'chai';
import type { Event } from '@topovol/shared';
import { eventTime, slimProvisioningEvent } from '../../src/binder/provisioning-events.js';

const at = (s: string): number => Date.parse(s);

describe('binder: the external provisioner\'s Provisioning Events', function () {
  it('an Event happened at the newest of its timestamps, whichever recorder wrote it', function () {
    const base: Event = { metadata: { name: 'e' }, involvedObject: {} };
    expect(eventTime({ ...base, firstTimestamp: '2026-11-25T10:00:00Z', lastTimestamp: '2026-11-25T10:05:00Z' })).to.equal(at('2026-11-25T10:05:00Z'));
    expect(eventTime({ ...base, eventTime: '2026-11-25T10:00:00.123456Z', series: { count: 3, lastObservedTime: '2026-11-25T10:07:00.000000Z' } })).to.equal(at('2026-11-25T10:07:00Z'));
    expect(eventTime({ ...base, lastTimestamp: 'garbage', firstTimestamp: '2026-11-25T10:00:00Z' })).to.equal(at('2026-11-25T10:00:00Z'));
    expect(eventTime(base)).to.equal(0);
  });

  it('the informer keeps only what the stale-selected-node check reads', function () {
    const full: Event = {
      metadata: { name: 'e', namespace: 'ns', resourceVersion: '5', uid: 'u', managedFields: [{ manager: 'x' }], annotations: { a: 'b' } },
      involvedObject: { kind: 'PersistentVolumeClaim', namespace: 'ns', name: 'c', uid: 'uid-c', fieldPath: 'spec' },
      reason: 'Provisioning',
      message: 'External provisioner is provisioning volume for claim "ns/c"',
      source: { component: 'csi.example.com' },
      lastTimestamp: '2026-11-25T10:05:00Z',
    };
    const slim = slimProvisioningEvent(full);
    expect(slim.metadata).to.deep.equal({ name: 'e', namespace: 'ns', resourceVersion: '5', uid: 'u' });
    expect(slim.involvedObject).to.deep.equal({ kind: 'PersistentVolumeClaim', namespace: 'ns', name: 'c', uid: 'uid-c' });
    expect(slim.message).to.equal(undefined);
    expect(eventTime(slim)).to.equal(eventTime(full));
  });
});

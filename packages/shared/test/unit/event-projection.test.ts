import { expect } from 'chai';
import { EVENT_MESSAGE_KEPT, projectEvent } from '../../src/informer/projections.js';
import type { Event } from '../../src/types/wire.js';

describe('projectEvent: what the loops cache of an Event anyone may write', function () {
  it('keeps who, why and when, and at most EVENT_MESSAGE_KEPT of the message; drops labels and annotations', function () {
    const big: Event = {
      metadata: { name: 'e', namespace: 'ns', uid: 'u', resourceVersion: '1', labels: { a: 'x'.repeat(60) }, annotations: { b: 'y'.repeat(200_000) } },
      involvedObject: { kind: 'PersistentVolumeClaim', namespace: 'ns', name: 'c', uid: 'uc' },
      reason: 'ProvisioningFailed',
      type: 'Warning',
      message: `rpc error: code = ResourceExhausted ${'z'.repeat(1_000_000)}`,
      count: 3,
      lastTimestamp: '2026-11-27T00:00:00Z',
    };
    const slim = projectEvent(big);
    expect(JSON.stringify(slim).length).to.be.below(4096);
    expect(slim.message?.startsWith('rpc error: code = ResourceExhausted')).to.equal(true);
    expect(slim.message?.length).to.equal(EVENT_MESSAGE_KEPT + 1);
    expect(slim).to.deep.include({ reason: 'ProvisioningFailed', type: 'Warning', count: 3, lastTimestamp: '2026-11-27T00:00:00Z' });
    expect(slim.involvedObject).to.deep.equal(big.involvedObject);
    expect(slim.metadata).to.not.have.property('annotations');
  });
});

import { expect } from 'chai';
import { EVENT_FIELD_KEPT, EVENT_MESSAGE_KEPT, projectEvent, slimEvent } from '../../src/informer/projections.js';
import type { Event } from '../../src/types/wire.js';

describe('projectEvent: what the loops cache of an Event anyone may write', function () {
  it('keeps who, why and when, and at most EVENT_MESSAGE_KEPT of the message; drops labels and annotations', function () {
    const big: Event = {
      metadata: { name: 'e', namespace: 'ns', uid: 'u', resourceVersion: '1', labels: { a: 'x'.repeat(60) }, annotations: { b: 'y'.repeat(200_000) } },
      involvedObject: { kind: 'PersistentVolumeClaim', namespace: 'ns', name: 'c', uid: 'uc', resourceVersion: '42' },
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

  it('drops any string longer than EVENT_FIELD_KEPT (no name, uid, kind, reason or type is that long), so a forged Event stays small', function () {
    const forged: Event = {
      metadata: { name: 'e', namespace: 'ns', uid: 'u', resourceVersion: '1' },
      involvedObject: { kind: `K${'k'.repeat(500_000)}`, namespace: 'ns', name: `c${'x'.repeat(1_000_000)}`, uid: 'u'.repeat(400_000), apiVersion: 'v'.repeat(100_000), resourceVersion: '9'.repeat(300_000) },
      reason: `Provisioning${'r'.repeat(300_000)}`,
      type: `Warning${'t'.repeat(300_000)}`,
      series: { count: 2, lastObservedTime: '2026-11-27T00:00:00.000000Z', state: 's'.repeat(300_000) } as Event['series'],
    };
    for (const slim of [projectEvent(forged), slimEvent(forged)]) {
      expect(JSON.stringify(slim).length).to.be.below(1024);
      expect(slim.involvedObject).to.deep.equal({ kind: undefined, namespace: 'ns', name: undefined, uid: undefined, resourceVersion: undefined });
      expect(slim.reason).to.equal(undefined);
      expect(slim.series).to.deep.equal({ count: 2, lastObservedTime: '2026-11-27T00:00:00.000000Z' });
    }
    expect(projectEvent(forged).type).to.equal(undefined);
    // At the limit, kept: the longest name an object can have.
    const longest = 'n'.repeat(EVENT_FIELD_KEPT);
    expect(slimEvent({ ...forged, involvedObject: { name: longest } } as Event).involvedObject?.name).to.equal(longest);
  });
});

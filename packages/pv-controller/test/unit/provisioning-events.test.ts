import { expect } from 'chai';
import type { Event, PersistentVolumeClaim } from '@topovol/shared';
import { eventTime, slimProvisioningEvent } from '../../src/binder/provisioning-events.js';
import { ProvisioningActivity } from '../../src/binder/provisioning-activity.js';

const at = (s: string): number => Date.parse(s);

describe('binder: the external provisioner\'s Provisioning Events', function () {
  it('an Event happened at the newest of its timestamps, whichever recorder wrote it; one to the second at that second\'s end', function () {
    const base: Event = { metadata: { name: 'e' }, involvedObject: {} };
    // lastTimestamp is truncated to the second: the Event may have come up to 999 ms after it.
    expect(eventTime({ ...base, firstTimestamp: '2026-11-25T10:00:00Z', lastTimestamp: '2026-11-25T10:05:00Z' })).to.equal(at('2026-11-25T10:05:00Z') + 999);
    expect(eventTime({ ...base, eventTime: '2026-11-25T10:00:00.123456Z', series: { count: 3, lastObservedTime: '2026-11-25T10:07:00.000000Z' } })).to.equal(at('2026-11-25T10:07:00Z'));
    expect(eventTime({ ...base, lastTimestamp: 'garbage', firstTimestamp: '2026-11-25T10:00:00Z' })).to.equal(at('2026-11-25T10:00:00Z') + 999);
    expect(eventTime(base)).to.equal(0);
  });

  describe('ProvisioningActivity: by the provisioner\'s clock or, when later, by this process\'s', function () {
    const NOW = at('2026-11-29T02:00:00Z');
    const ev = (rv: string, last: string): Event => ({ metadata: { name: 'c.1', namespace: 'ns', uid: 'ev-1', resourceVersion: rv }, involvedObject: {}, lastTimestamp: last });

    it('an Event first seen now counts from now even when its clock says an hour ago (a provisioner whose clock runs behind)', function () {
      const a = new ProvisioningActivity();
      a.observe(ev('1', '2026-11-29T01:00:00Z'), NOW);
      expect(a.timeOf(ev('1', '2026-11-29T01:00:00Z'), NOW + 5_000)).to.equal(NOW);
    });

    it('a retry (a new version) counts from when it was seen; the same version keeps its first sighting', function () {
      const a = new ProvisioningActivity();
      a.observe(ev('1', '2026-11-29T01:00:00Z'), NOW);
      a.observe(ev('1', '2026-11-29T01:00:00Z'), NOW + 60_000);
      expect(a.timeOf(ev('1', '2026-11-29T01:00:00Z'), NOW + 120_000)).to.equal(NOW);
      a.observe(ev('2', '2026-11-29T01:01:00Z'), NOW + 90_000);
      expect(a.timeOf(ev('2', '2026-11-29T01:01:00Z'), NOW + 120_000)).to.equal(NOW + 90_000);
    });

    it('a version never seen (the server ahead of the watch) counts as now; its own timestamp when that is later', function () {
      const a = new ProvisioningActivity();
      a.observe(ev('1', '2026-11-29T01:00:00Z'), NOW);
      expect(a.timeOf(ev('2', '2026-11-29T01:00:00Z'), NOW + 7_000)).to.equal(NOW + 7_000);
      expect(a.timeOf(ev('3', '2026-11-29T03:00:00Z'), NOW)).to.equal(at('2026-11-29T03:00:00Z') + 999);
      a.eventDeleted(ev('1', ''));
      expect(a.timeOf(ev('1', '2026-11-29T01:00:00Z'), NOW + 9_000)).to.equal(NOW + 9_000);
    });
  });

  describe('ProvisioningActivity: a claim\'s attempts are remembered after their Events are gone', function () {
    const NOW = at('2026-11-29T02:00:00Z');
    const claim = (over: { ns?: string; name?: string; uid?: string } = {}): PersistentVolumeClaim => ({ metadata: { namespace: over.ns ?? 'ns', name: over.name ?? 'c', uid: over.uid ?? 'uid-c' } });
    /** A Provisioning Event in namespace `ns` naming claim `involved`. */
    const about = (ns: string, involved: { namespace?: string; name?: string; uid?: string }, rv = '1'): Event => ({
      metadata: { name: `c.${rv}`, namespace: ns, uid: `ev-${ns}-${rv}`, resourceVersion: rv },
      involvedObject: { kind: 'PersistentVolumeClaim', ...involved },
      lastTimestamp: '2026-11-29T01:59:00Z',
    });

    it('deleted (its TTL, or whoever may delete Events in the namespace): the claim still shows the attempt, as of its last activity', function () {
      const a = new ProvisioningActivity();
      const e = about('ns', { namespace: 'ns', name: 'c', uid: 'uid-c' });
      a.observe(e, NOW);
      a.observe(about('ns', { namespace: 'ns', name: 'c', uid: 'uid-c' }, '2'), NOW + 30_000);
      a.eventDeleted(e);
      expect(a.rememberedFor(claim())).to.equal(NOW + 30_000);
    });

    it('only for the claim the Event is about: same namespace, name and uid (eventsAbout\'s rule)', function () {
      const a = new ProvisioningActivity();
      a.observe(about('other', { namespace: 'ns', name: 'c', uid: 'uid-c' }), NOW); // filed in another namespace
      a.observe(about('ns', { namespace: 'ns', name: 'c', uid: 'uid-old' }), NOW); // a claim of that name before
      a.observe(about('ns', { namespace: 'ns', name: 'd', uid: 'uid-c' }), NOW); // another name
      a.observe(about('ns', { namespace: 'ns', name: 'c' }), NOW); // no uid
      expect(a.rememberedFor(claim())).to.equal(undefined);
      expect(a.rememberedFor(claim({ uid: 'uid-old' }))).to.equal(NOW);
    });

    it('forgotten when the claim is bound or deleted, or with its Event when no such claim is cached', function () {
      const cached = new Set(['ns/c/uid-c']);
      const a = new ProvisioningActivity((ns, name, uid) => cached.has(`${ns}/${name}/${uid}`));
      const real = about('ns', { namespace: 'ns', name: 'c', uid: 'uid-c' });
      a.observe(real, NOW);
      a.eventDeleted(real);
      expect(a.rememberedFor(claim()), 'its claim is cached: kept after the Event').to.equal(NOW);
      a.forgetClaim(claim());
      expect(a.rememberedFor(claim())).to.equal(undefined);
      const madeUp = about('ns', { namespace: 'ns', name: 'c', uid: 'uid-made-up' });
      a.observe(madeUp, NOW);
      a.eventDeleted(madeUp);
      expect(a.rememberedFor(claim({ uid: 'uid-made-up' }))).to.equal(undefined);
    });

    it('before the claims are listed, nothing is forgotten with an Event (a claim not cached yet may be there)', function () {
      const a = new ProvisioningActivity(() => undefined);
      const e = about('ns', { namespace: 'ns', name: 'c', uid: 'uid-c' });
      a.observe(e, NOW);
      a.eventDeleted(e);
      expect(a.rememberedFor(claim())).to.equal(NOW);
    });

    it('an Event whose involvedObject is rewritten again and again (core/v1 allows it) leaves no entry per rewrite; the cached claim it named keeps its attempts', function () {
      const cached = new Set(['ns/c/uid-c']);
      const a = new ProvisioningActivity((ns, name, uid) => cached.has(`${ns}/${name}/${uid}`));
      let old = about('ns', { namespace: 'ns', name: 'c', uid: 'uid-c' });
      a.observe(old, NOW);
      for (let i = 0; i < 1000; i++) {
        const next = { ...about('ns', { namespace: 'ns', name: `x${i}`, uid: `made-up-${i}` }, String(i + 2)), metadata: old.metadata };
        a.eventUpdated(old, next, NOW + i);
        old = next;
      }
      expect(a.size(), 'the real claim and the made-up one the Event names now').to.equal(2);
      expect(a.rememberedFor(claim()), 'a tenant who rewrites the provisioner\'s Event does not erase the attempt').to.equal(NOW);
    });
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

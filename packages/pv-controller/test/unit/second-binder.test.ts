import { expect } from 'chai';
import { logger } from '@topovol/shared';
import type { KubeObject, PersistentVolume, PersistentVolumeClaim, RawObserver, RawObserverOptions } from '@topovol/shared';
import { FakeEvents } from '@topovol/testing';
import { boundByUpstream, UPSTREAM_MANAGER, watchForSecondBinder } from '../../src/binder/second-binder.js';

const entry = (manager: string, fields: Record<string, unknown>, operation = 'Update'): NonNullable<NonNullable<KubeObject['metadata']>['managedFields']>[number] =>
  ({ manager, operation, apiVersion: 'v1', fieldsType: 'FieldsV1', fieldsV1: fields });
const claimRefBy = (manager: string, operation?: string) => entry(manager, { 'f:spec': { 'f:claimRef': {} } }, operation);
const finalizersBy = (manager: string) => entry(manager, { 'f:metadata': { 'f:finalizers': {} } });

const volume = (claimRef: boolean, managedFields: ReturnType<typeof entry>[] = []): PersistentVolume => ({
  metadata: { name: 'v', uid: 'uid-v', managedFields },
  spec: claimRef ? { claimRef: { namespace: 'ns', name: 'c', uid: 'u' } } : {},
});
const claim = (volumeName: string | undefined, managedFields: ReturnType<typeof entry>[] = []): PersistentVolumeClaim => ({
  metadata: { name: 'c', namespace: 'ns', uid: 'uid-c', managedFields },
  spec: volumeName ? { volumeName } : {},
});

describe('boundByUpstream: kube-controller-manager\'s binder seen binding next to this one', function () {
  const cases: { name: string; raw: KubeObject; cached: KubeObject | undefined; want: boolean }[] = [
    { name: 'a volume this process saw free, now bound by kube-controller-manager', raw: volume(true, [claimRefBy(UPSTREAM_MANAGER)]), cached: volume(false), want: true },
    // A field manager is whatever name the writer gives, and a tenant may write its claim's volumeName.
    { name: 'a claim\'s volumeName written under kube-controller-manager\'s name: not counted (anyone who edits claims could raise the alert)', raw: claim('v', [entry(UPSTREAM_MANAGER, { 'f:spec': { 'f:volumeName': {} } })]), cached: claim(undefined), want: false },
    { name: 'bound by this binder (another manager)', raw: volume(true, [claimRefBy('topovol-controller-manager'), finalizersBy(UPSTREAM_MANAGER)]), cached: volume(false), want: false },
    { name: 'pre-bound by hand (kubectl)', raw: volume(true, [claimRefBy('kubectl-patch')]), cached: volume(false), want: false },
    { name: 'first sight (a list after a start): history, not a binder at work', raw: volume(true, [claimRefBy(UPSTREAM_MANAGER)]), cached: undefined, want: false },
    { name: 'already bound when last seen (a later write of kube-controller-manager, e.g. a resize)', raw: volume(true, [claimRefBy(UPSTREAM_MANAGER)]), cached: volume(true), want: false },
    { name: 'kube-controller-manager wrote only the protection finalizer', raw: volume(true, [claimRefBy('csi-provisioner'), finalizersBy(UPSTREAM_MANAGER)]), cached: volume(false), want: false },
    { name: 'an apply by a manager of that name (not the binder\'s update)', raw: volume(true, [claimRefBy(UPSTREAM_MANAGER, 'Apply')]), cached: volume(false), want: false },
    { name: 'another volume of that name (deleted and created again, seen by a relist)', raw: volume(true, [claimRefBy(UPSTREAM_MANAGER)]), cached: { ...volume(false), metadata: { name: 'v', uid: 'old-uid' } }, want: false },
    { name: 'unbound again (released by hand): nothing bound', raw: volume(false, [claimRefBy(UPSTREAM_MANAGER)]), cached: volume(true), want: false },
  ];
  for (const c of cases) {
    it(c.name, function () {
      expect(boundByUpstream(c.raw, c.cached)).to.equal(c.want);
    });
  }
});

describe('watchForSecondBinder: who reports', function () {
  function observed(leading: boolean): FakeEvents {
    const observers: RawObserver<PersistentVolume>[] = [];
    const events = new FakeEvents();
    watchForSecondBinder({ addRawObserver: (fn) => observers.push(fn) }, events, logger(), () => leading);
    for (const fn of observers) fn(volume(true, [claimRefBy(UPSTREAM_MANAGER)]), volume(false));
    return events;
  }

  it('the leader records a SecondBinderRunning Warning on the volume', function () {
    expect(observed(true).recorded.map((e) => [e.type, e.reason, e.name])).to.deep.equal([['Warning', 'SecondBinderRunning', 'v']]);
  });

  it('a standby, which watches the same objects, records nothing', function () {
    expect(observed(false).recorded).to.deep.equal([]);
  });

  it("reads managedFields of cached volumes only, and only kube-controller-manager's entries (the binder's own echoes are parsed without them)", function () {
    const asked: RawObserverOptions[] = [];
    watchForSecondBinder({ addRawObserver: (_fn, opts) => void asked.push(opts ?? {}) }, new FakeEvents(), logger(), () => true);
    expect(asked).to.deep.equal([{ managedFields: 'cached', managers: [UPSTREAM_MANAGER] }]);
  });
});

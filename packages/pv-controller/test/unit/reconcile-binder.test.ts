import { expect } from 'chai';
import { FirstSeen, KubeApiError, logger, Resources } from '@topovol/shared';
import type { KubeClient, KubeObject, PersistentVolume, PersistentVolumeClaim, ResourceType } from '@topovol/shared';
import { FakeEvents, FakeWrites } from '@topovol/testing';
import { BinderActuator } from '../../src/binder/actuator.js';
import { AssumeCache } from '../../src/binder/assume-cache.js';
import { BinderReconciler } from '../../src/binder/reconcile-binder.js';
import type { SelectedNodeIssue } from '../../src/binder/selected-node-checks.js';
import { claim, vol, world } from './world-fixture.js';

/** FakeWrites whose volume PUTs fail as a timed-out or refused request does, with nothing written. */
class FailingVolumeWrites extends FakeWrites {
  failVolumes = false;
  override replace<T extends KubeObject>(r: ResourceType, obj: T, opts: { subresource?: 'status' } = {}): Promise<T> {
    if (this.failVolumes && r === Resources.persistentVolumes) return Promise.reject(new KubeApiError(500, { message: 'etcdserver: request timed out' }));
    return super.replace(r, obj, opts);
  }
}

// The glue around the decisions: what a failed reconcile hands back. A volume reserved for a claim
// stays free when the writes fail; nothing on it changed, so no event would wake the claims that
// passed it by while it was reserved.
describe('binder reconcile: reserved volumes', function () {
  function setup(): { r: BinderReconciler; store: FailingVolumeWrites; dropped: string[][]; inFlight: Set<string>; inFlightWhenDropped: string[][] } {
    const v = vol('v', '1Gi');
    const c = claim('c', '1Gi');
    const store = new FailingVolumeWrites();
    store.seed<PersistentVolume>(Resources.persistentVolumes, v);
    store.seed<PersistentVolumeClaim>(Resources.persistentVolumeClaims, c);
    const volumes = new AssumeCache<PersistentVolume>();
    const claims = new AssumeCache<PersistentVolumeClaim>();
    const actuator = new BinderActuator({ client: store, events: new FakeEvents(), volumes, claims, log: logger(), dryRun: false });
    const dropped: string[][] = [];
    const inFlightWhenDropped: string[][] = [];
    const inFlight = new Set<string>();
    const client = new Proxy({} as KubeClient, { get: (_t, p) => () => Promise.reject(new Error(`unexpected read ${String(p)}`)) });
    const r = new BinderReconciler({
      world: world({ volumes: [store.stored(Resources.persistentVolumes, 'v')!], claims: [store.stored(Resources.persistentVolumeClaims, 'c', 'ns')!] }),
      client,
      actuator,
      volumes,
      claims,
      inFlight,
      reservationFailed: (names) => {
        dropped.push(names);
        inFlightWhenDropped.push([...inFlight]);
      },
      selectedNodeIssues: new FirstSeen<SelectedNodeIssue>(),
      dryRun: false,
    });
    return { r, store, dropped, inFlight, inFlightWhenDropped };
  }

  it('hands a failed binding\'s volume back, no longer reserved, so waiting claims can be queued for it', async function () {
    const { r, store, dropped, inFlight, inFlightWhenDropped } = setup();
    store.failVolumes = true;
    let failed: unknown;
    await r.claim('ns', 'c').catch((err: unknown) => (failed = err));
    expect(failed, 'the reconcile fails, to be retried').to.be.instanceOf(KubeApiError);
    expect(dropped).to.deep.equal([['v']]);
    expect(inFlightWhenDropped, 'released before the claims are queued').to.deep.equal([[]]);
    expect([...inFlight]).to.deep.equal([]);
  });

  it('hands nothing back when the binding was written', async function () {
    const { r, store, dropped } = setup();
    await r.claim('ns', 'c');
    expect(store.stored<PersistentVolume>(Resources.persistentVolumes, 'v')?.spec?.claimRef?.name).to.equal('c');
    expect(dropped).to.deep.equal([]);
  });
});

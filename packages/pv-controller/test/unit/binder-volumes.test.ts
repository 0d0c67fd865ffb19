import { expect } from 'chai';
import { classifyError, FirstSeen, KubeApiError, logger, metricsRegistry, Resources, WriteFencedError } from '@topovol/shared';
import type { KubeClient, KubeObject, PatchOptions, PatchType, PersistentVolume, PersistentVolumeClaim, ResourceType } from '@topovol/shared';
import { FakeEvents, FakeWrites } from '@topovol/testing';
import { BinderActuator } from '../../src/binder/actuator.js';
import { AssumeCache } from '../../src/binder/assume-cache.js';
import { BinderReconciler, UNSETTLED_HOLD_MS } from '../../src/binder/reconcile-binder.js';
import type { SelectedNodeIssueSeen } from '../../src/binder/selected-node-checks.js';
import { BinderVolumes } from '../../src/binder/volume-view.js';
import { claim, vol, world } from './world-fixture.js';

/**
 * FakeWrites whose next claim PUTs fail with `failure` (nothing written), and whose next volume PUTs
 * (not status) are written and then fail with `failure` as if the answer were lost.
 */
class FailingClaimWrites extends FakeWrites {
  failClaimWrites = 0;
  loseVolumeAnswers = 0;
  failure = new KubeApiError(500, { message: 'etcdserver: request timed out' });
  /** What reads() served, in order. */
  readonly served: string[] = [];
  override async replace<T extends KubeObject>(r: ResourceType, obj: T, opts: { subresource?: 'status' } = {}): Promise<T> {
    const written = await super.replace(r, obj, opts);
    if (r === Resources.persistentVolumes && !opts.subresource && this.loseVolumeAnswers > 0) {
      this.loseVolumeAnswers--;
      throw this.failure;
    }
    return written;
  }

  /** The claim's bind is a merge patch of the main resource. */
  override async patch<T extends KubeObject>(r: ResourceType, name: string, namespace: string | undefined, type: PatchType, patch: unknown, opts: PatchOptions = {}): Promise<T> {
    if (r === Resources.persistentVolumeClaims && !opts.subresource && this.failClaimWrites > 0) {
      this.failClaimWrites--;
      throw this.failure;
    }
    return super.patch(r, name, namespace, type, patch, opts);
  }

  /** When set, reads fail with it. */
  readFailure?: Error;

  /**
   * Reads for the glue's server checks: a list of cluster-scoped objects by name
   * (metadata.name=<name>), as the binder's role allows, from the store; any other read is a test failure.
   */
  reads(): KubeClient {
    return new Proxy({} as KubeClient, {
      get: (_t, p) => {
        if (p !== 'list') return () => Promise.reject(new Error(`unexpected read ${String(p)}`));
        return (r: ResourceType, opts: { fieldSelector?: string } = {}) => {
          const name = /^metadata\.name=(.+)$/.exec(opts.fieldSelector ?? '')?.[1];
          if (!name) return Promise.reject(new Error(`unexpected list of ${r.plural} without a name`));
          this.served.push(`${r.plural}/${name}`);
          if (this.readFailure) return Promise.reject(this.readFailure);
          const o = this.stored(r, name);
          return Promise.resolve({ items: o ? [structuredClone(o)] : [] });
        };
      },
    });
  }
}

/**
 * Claim c (1Gi), volumes v1 (1Gi, Delete, provisioned) and v2 (2Gi) in a store whose claim PUTs fail
 * with `failure` when told to, and a reconciler whose informer view is frozen at the start: it lags
 * every write.
 */
function halfWrittenBind(failure: KubeApiError) {
  const store = new FailingClaimWrites();
  store.failure = failure;
  const v1 = store.seed<PersistentVolume>(Resources.persistentVolumes, vol('v1', '1Gi', { persistentVolumeReclaimPolicy: 'Delete', annotations: { 'pv.kubernetes.io/provisioned-by': 'csi.example.com' } }));
  const v2 = store.seed<PersistentVolume>(Resources.persistentVolumes, vol('v2', '2Gi'));
  const c = store.seed<PersistentVolumeClaim>(Resources.persistentVolumeClaims, claim('c', '1Gi'));
  const informer = new Map<string, PersistentVolume>([
    ['v1', v1],
    ['v2', v2],
  ]);
  const inFlight = new Set<string>();
  const bv = new BinderVolumes((name) => informer.get(name), inFlight);
  for (const v of informer.values()) bv.observed(v);
  const claims = new AssumeCache<PersistentVolumeClaim>();
  const w = { ...world({ claims: [c] }), ...bv.view, claim: (ns: string, n: string) => claims.get(`${ns}/${n}`, ns === 'ns' && n === 'c' ? c : undefined) };
  const events = new FakeEvents();
  const actuator = new BinderActuator({ client: store, events, volumes: bv.assumed, claims, log: logger(), dryRun: false });
  const clock = { now: 1_000_000 };
  const r = new BinderReconciler({ world: w, client: store.reads(), actuator, volumes: bv.assumed, claims, inFlight, requeueClaims: () => undefined, selectedNodeIssues: new FirstSeen<SelectedNodeIssueSeen>(), dryRun: false, now: () => clock.now });
  /** The informer delivers the volume as the server has it now. */
  const delivered = (name: string): void => {
    const v = store.stored<PersistentVolume>(Resources.persistentVolumes, name)!;
    informer.set(name, v);
    bv.observed(v);
  };
  /** A free volume created and delivered by the informer. */
  const seedVolume = (name: string, size: string): void => {
    informer.set(name, store.seed<PersistentVolume>(Resources.persistentVolumes, vol(name, size)));
    bv.observed(informer.get(name)!);
  };
  return { store, w, r, inFlight, bv, clock, events, delivered, seedVolume, claims };
}

async function bindsCounted(result: string): Promise<number> {
  const m = await metricsRegistry.getSingleMetric('topovol_pv_binder_binds_total')?.get();
  return m?.values.find((v) => v.labels.result === result)?.value ?? 0;
}

// The binder's volume view as setupBinder builds it (BinderVolumes: the informer's copies, our
// writes, the index), with an informer that has not delivered anything since the start.
describe('binder volumes: a bind half written, retried before the informer catches up', function () {
  const failures: [string, KubeApiError][] = [
    ['500 (an API server timing out on etcd)', new KubeApiError(500, { message: 'etcdserver: request timed out' })],
    ['409 Conflict (the claim changed since the decision)', new KubeApiError(409, { reason: 'Conflict', message: 'the object has been modified; please apply your changes to the latest version and try again' })],
  ];
  for (const [why, failure] of failures) {
    it(`the claim write fails with ${why}: the retry finishes the volume it wrote, and takes no second one (upstream stores its writes where its search reads)`, async function () {
      const { store, r } = halfWrittenBind(failure);

      store.failClaimWrites = 1;
      const failed = await r.claim('ns', 'c').then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(failed, 'the claim write failed').to.equal(failure);
      expect(store.stored<PersistentVolume>(Resources.persistentVolumes, 'v1')?.spec?.claimRef?.name, 'v1 was written first').to.equal('c');

      await r.claim('ns', 'c');
      expect(store.stored<PersistentVolumeClaim>(Resources.persistentVolumeClaims, 'c', 'ns')?.spec?.volumeName).to.equal('v1');
      expect(store.stored<PersistentVolume>(Resources.persistentVolumes, 'v2')?.spec?.claimRef, 'v2 untouched').to.equal(undefined);
    });

    it(`the claim write fails with ${why} twice: the second failure, which writes nothing to the volume, does not forget it either`, async function () {
      const { store, w, r } = halfWrittenBind(failure);

      store.failClaimWrites = 2;
      for (const attempt of [1, 2]) expect(await r.claim('ns', 'c').then(() => undefined, (err: unknown) => err), `attempt ${attempt} failed`).to.equal(failure);
      // Forgotten, v1 would look free as the lagging informer has it: another claim could take it,
      // and this one would pass it by and take v2, leaving v1 bound to a claim bound elsewhere.
      const free = [...w.freeVolumes('', [...w.accessModeGroups('')][0] ?? 'ReadWriteOnce', 0n)].map((v) => v.metadata?.name);
      expect(free, 'v1 is not offered to other claims').to.not.include('v1');
      expect(w.preBoundVolumes('ns', 'c').map((v) => v.metadata?.name), 'v1 is still known to be held for c').to.deep.equal(['v1']);

      await r.claim('ns', 'c');
      expect(store.stored<PersistentVolumeClaim>(Resources.persistentVolumeClaims, 'c', 'ns')?.spec?.volumeName).to.equal('v1');
      expect(store.stored<PersistentVolume>(Resources.persistentVolumes, 'v2')?.spec?.claimRef, 'v2 untouched').to.equal(undefined);
    });
  }

  it('a claim write held by the leader-election fence (nothing sent): no read-back, no error counted, and the retry finishes the volume it wrote', async function () {
    const { store, r } = halfWrittenBind(new KubeApiError(500, {}));
    store.failure = new WriteFencedError('PUT', '/api/v1/namespaces/ns/persistentvolumeclaims/c', 'lease not renewed') as unknown as KubeApiError;
    store.failClaimWrites = 1;
    const errorsBefore = await bindsCounted('error');
    expect(classifyError(await r.claim('ns', 'c').then(() => undefined, (e: unknown) => e)).kind).to.equal('Fenced');
    expect(await bindsCounted('error'), 'a pause, not a failed bind').to.equal(errorsBefore);
    await r.claim('ns', 'c');
    expect(store.served, 'nothing may have been applied: nothing to read back').to.deep.equal([]);
    expect(store.stored<PersistentVolumeClaim>(Resources.persistentVolumeClaims, 'c', 'ns')?.spec?.volumeName).to.equal('v1');
    expect(store.stored<PersistentVolume>(Resources.persistentVolumes, 'v2')?.spec?.claimRef, 'v2 untouched').to.equal(undefined);
  });

  const lost: [string, Error][] = [
    ['500 (the API server failed after etcd took the write)', new KubeApiError(500, { message: 'etcdserver: request timed out' })],
    ['a connection reset', Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' })],
  ];
  for (const [why, failure] of lost) {
    it(`the volume write lands but its answer is lost (${why}), and another worker holds the volume at the retry: the retry reads it from the server and binds it, taking no second one`, async function () {
      const { store, r, inFlight } = halfWrittenBind(new KubeApiError(500, {}));
      store.failure = failure as KubeApiError;
      store.loseVolumeAnswers = 1;
      expect(await r.claim('ns', 'c').then(() => undefined, (err: unknown) => err), 'the volume write failed').to.equal(failure);
      expect(store.stored<PersistentVolume>(Resources.persistentVolumes, 'v1')?.spec?.claimRef?.name, 'v1 was written').to.equal('c');

      // Another claim's worker, deciding on the informer (which still has v1 free), holds v1 now.
      inFlight.add('v1');
      await r.claim('ns', 'c');
      expect(store.stored<PersistentVolumeClaim>(Resources.persistentVolumeClaims, 'c', 'ns')?.spec?.volumeName).to.equal('v1');
      expect(store.stored<PersistentVolume>(Resources.persistentVolumes, 'v2')?.spec?.claimRef, 'v2 untouched').to.equal(undefined);
      expect(store.served, 'v1 read once, before the retry decided').to.deep.equal(['persistentvolumes/v1']);
    });
  }

  /** v1's write lands but its answer is lost, and the read-back is then refused for good (403). */
  async function lostThenForbidden(): Promise<ReturnType<typeof halfWrittenBind>> {
    const b = halfWrittenBind(new KubeApiError(500, {}));
    b.store.loseVolumeAnswers = 1;
    await b.r.claim('ns', 'c').catch(() => undefined);
    b.store.readFailure = new KubeApiError(403, { reason: 'Forbidden', message: 'persistentvolumes is forbidden' });
    return b;
  }

  it('a read-back the server refuses for good (403), and another worker holds the volume: the claim waits for the informer, takes no second volume, and binds the one it wrote once the informer shows it', async function () {
    const { store, r, inFlight, events, delivered } = await lostThenForbidden();
    // Another claim's worker, deciding on the informer (which still has v1 free), holds v1 now.
    inFlight.add('v1');
    const wait = await r.claim('ns', 'c');
    expect(wait, 'looked at again later').to.be.a('number').and.be.greaterThan(0);
    expect(store.stored<PersistentVolume>(Resources.persistentVolumes, 'v2')?.spec?.claimRef, 'v2 untouched').to.equal(undefined);
    expect(await r.claim('ns', 'c'), 'still waiting').to.be.a('number');
    expect(events.recorded.map((e) => `${e.kind}/${e.name} ${e.reason}`), 'said on the claim, once for the hold').to.deep.equal(['PersistentVolumeClaim/c UpdateRefused']);
    inFlight.delete('v1');
    delivered('v1');
    await r.claim('ns', 'c');
    expect(store.stored<PersistentVolumeClaim>(Resources.persistentVolumeClaims, 'c', 'ns')?.spec?.volumeName).to.equal('v1');
    expect(store.stored<PersistentVolume>(Resources.persistentVolumes, 'v2')?.spec?.claimRef, 'v2 untouched').to.equal(undefined);
  });

  it('a read-back refused for good (403) does not hold the claim for ever: past UNSETTLED_HOLD_MS it is decided on the cache', async function () {
    const { store, r, clock } = await lostThenForbidden();
    expect(await r.claim('ns', 'c')).to.be.a('number');
    clock.now += UNSETTLED_HOLD_MS;
    // Decided on the informer's view (v1 free, at its old version): its write of v1 fails its
    // precondition, as it did before read-backs, until the informer shows the write.
    const err = await r.claim('ns', 'c').then(() => undefined, (e: unknown) => e);
    expect(store.served).to.deep.equal(['persistentvolumes/v1', 'persistentvolumes/v1']);
    expect(classifyError(err).kind, 'it went on to decide and write, not stuck on the read').to.equal('Conflict');
    expect(await r.claim('ns', 'c').then(() => undefined, (e: unknown) => e), 'the read is not tried again').to.not.equal(store.readFailure);
    expect(store.served).to.have.length(2);
  });

  it('past UNSETTLED_HOLD_MS, another worker holding the volume: the claim waits for it, then retries that volume, never a second one', async function () {
    const { store, r, clock, inFlight } = await lostThenForbidden();
    expect(await r.claim('ns', 'c')).to.be.a('number');
    clock.now += UNSETTLED_HOLD_MS;
    inFlight.add('v1');
    // The read-back is refused once more, the hold is over, v1 is another worker's for now.
    expect(await r.claim('ns', 'c'), 'looked at again later').to.be.a('number');
    expect(store.stored<PersistentVolume>(Resources.persistentVolumes, 'v2')?.spec?.claimRef, 'v2 untouched').to.equal(undefined);
    inFlight.delete('v1');
    // Decided on the cache (v1 free at its old version): v1's write again, which fails its
    // precondition (it landed), as long as the informer lags; v2 is never taken.
    for (let look = 0; look < 3; look++) {
      const err = await r.claim('ns', 'c').then(() => undefined, (e: unknown) => e);
      expect(classifyError(err).kind).to.equal('Conflict');
    }
    expect(store.stored<PersistentVolume>(Resources.persistentVolumes, 'v2')?.spec?.claimRef, 'v2 untouched').to.equal(undefined);
    expect(store.served, 'no read-back past the hold').to.have.length(2);
  });

  it('past UNSETTLED_HOLD_MS, a volume the search prefers shown meanwhile: the claim retries the volume it wrote, not that one', async function () {
    const { store, r, clock, seedVolume } = await lostThenForbidden();
    expect(await r.claim('ns', 'c')).to.be.a('number');
    clock.now += UNSETTLED_HOLD_MS;
    // As large as v1, and first by name: the search's choice now.
    seedVolume('a0', '1Gi');
    const err = await r.claim('ns', 'c').then(() => undefined, (e: unknown) => e);
    expect(classifyError(err).kind).to.equal('Conflict');
    expect(store.stored<PersistentVolume>(Resources.persistentVolumes, 'a0')?.spec?.claimRef, 'a0 untouched').to.equal(undefined);
  });

  it('past UNSETTLED_HOLD_MS, a claim made again under the name (another uid): decided as any claim, the old claim\'s volume neither waited for nor retried', async function () {
    const { store, r, clock, inFlight, claims } = await lostThenForbidden();
    expect(await r.claim('ns', 'c')).to.be.a('number');
    clock.now += UNSETTLED_HOLD_MS;
    const again = claim('c', '1Gi', { uid: 'uid-again' });
    claims.assume('ns/c', { ...again, metadata: { ...again.metadata, resourceVersion: '999' } });
    inFlight.add('v1');
    await r.claim('ns', 'c').catch(() => undefined);
    expect(store.stored<PersistentVolume>(Resources.persistentVolumes, 'v2')?.spec?.claimRef?.uid, 'the new claim took the free volume').to.equal('uid-again');
  });

  it('a read-back refused for good (403) once the informer shows the volume anew: decided at once on the informer', async function () {
    const { store, r, delivered } = await lostThenForbidden();
    delivered('v1');
    expect(await r.claim('ns', 'c')).to.equal(undefined);
    expect(store.stored<PersistentVolumeClaim>(Resources.persistentVolumeClaims, 'c', 'ns')?.spec?.volumeName).to.equal('v1');
  });

  it('a claim deleted while it waits on a refused read-back: nothing of it is kept', async function () {
    const { store, r, clock } = await lostThenForbidden();
    expect(await r.claim('ns', 'c')).to.be.a('number');
    r.forgetClaim('ns/c');
    store.readFailure = undefined;
    clock.now += 1;
    await r.claim('ns', 'c').catch(() => undefined);
    expect(store.served, 'no read-back for a claim of the name decided afresh').to.have.length(1);
  });

  it('a read-back that fails for now (503) is tried again before the claim is decided', async function () {
    const { store, r } = halfWrittenBind(new KubeApiError(500, {}));
    store.loseVolumeAnswers = 1;
    await r.claim('ns', 'c').catch(() => undefined);
    store.readFailure = new KubeApiError(503, { message: 'unavailable' });
    expect(await r.claim('ns', 'c').then(() => undefined, (err: unknown) => err)).to.equal(store.readFailure);
    store.readFailure = undefined;
    await r.claim('ns', 'c');
    expect(store.stored<PersistentVolumeClaim>(Resources.persistentVolumeClaims, 'c', 'ns')?.spec?.volumeName).to.equal('v1');
  });

  it('a read-back older than what the view already has (another worker\'s write answered meanwhile) does not replace it', async function () {
    const { store, w, r, bv } = halfWrittenBind(new KubeApiError(500, {}));
    store.loseVolumeAnswers = 1;
    await r.claim('ns', 'c').catch(() => undefined);
    const listed = store.stored<PersistentVolume>(Resources.persistentVolumes, 'v1')!;
    // A later write of v1, answered to another worker and assumed, while the read-back was on its way.
    const later = { ...listed, metadata: { ...listed.metadata, resourceVersion: String(Number(listed.metadata!.resourceVersion) + 100), annotations: { later: 'yes' } } };
    bv.assumed.assume('v1', later);
    store.failClaimWrites = 1;
    await r.claim('ns', 'c').catch(() => undefined);
    expect(store.served).to.deep.equal(['persistentvolumes/v1']);
    expect(w.volume('v1')?.metadata?.annotations?.later, 'the newer copy stays').to.equal('yes');
  });

  it('a write refused with 409 (nothing written) reads nothing back', async function () {
    const { store, r } = halfWrittenBind(new KubeApiError(409, { reason: 'Conflict' }));
    store.failClaimWrites = 1;
    await r.claim('ns', 'c').catch(() => undefined);
    await r.claim('ns', 'c');
    expect(store.stored<PersistentVolumeClaim>(Resources.persistentVolumeClaims, 'c', 'ns')?.spec?.volumeName).to.equal('v1');
    expect(store.served).to.deep.equal([]);
  });

  it('a dropped write (found stale) puts the volume back in the index as the informer has it', function () {
    const informer = new Map<string, PersistentVolume>([['v1', vol('v1', '1Gi')]]);
    const bv = new BinderVolumes((name) => informer.get(name), new Set());
    bv.observed(informer.get('v1')!);
    const written = { ...vol('v1', '1Gi'), metadata: { name: 'v1', resourceVersion: '9' }, spec: { ...vol('v1', '1Gi').spec, claimRef: { namespace: 'ns', name: 'c', uid: 'uid-c' } } };
    bv.assumed.assume('v1', written);
    const free = (): string[] => [...bv.view.freeVolumes('', [...bv.view.accessModeGroups('')][0] ?? 'ReadWriteOnce', 0n)].map((v) => v.metadata!.name!);
    expect(bv.view.preBoundVolumes('ns', 'c').map((v) => v.metadata?.name)).to.deep.equal(['v1']);
    expect(free()).to.deep.equal([]);
    bv.assumed.forget('v1');
    expect(bv.view.preBoundVolumes('ns', 'c')).to.deep.equal([]);
    expect(free()).to.deep.equal(['v1']);
  });
});

import { expect } from 'chai';
import { FirstSeen, KubeApiError, logger, Resources } from '@topovol/shared';
import type { KubeClient, KubeObject, PersistentVolume, PersistentVolumeClaim, ResourceType } from '@topovol/shared';
import { FakeEvents, FakeWrites } from '@topovol/testing';
import { BinderActuator } from '../../src/binder/actuator.js';
import { AssumeCache } from '../../src/binder/assume-cache.js';
import type { BinderWorld } from '../../src/binder/binder-world.js';
import { BinderReconciler } from '../../src/binder/reconcile-binder.js';
import type { SelectedNodeIssueSeen } from '../../src/binder/selected-node-checks.js';
import { claim, vol, world } from './world-fixture.js';

/** FakeWrites whose volume PUTs wait for `release`, then fail (as a timed-out request: nothing written) or go through. */
class GatedVolumeWrites extends FakeWrites {
  private gate?: Promise<boolean>;
  private open?: (ok: boolean) => void;
  hold(): void {
    this.gate = new Promise((resolve) => (this.open = resolve));
  }
  release(ok: boolean): void {
    this.open?.(ok);
  }
  override async replace<T extends KubeObject>(r: ResourceType, obj: T, opts: { subresource?: 'status' } = {}): Promise<T> {
    if (r === Resources.persistentVolumes && this.gate && !(await this.gate)) throw new KubeApiError(500, { message: 'etcdserver: request timed out' });
    return super.replace(r, obj, opts);
  }
}

// The glue around the decisions: a claim decided while another's reservation was held may have
// passed the reserved volume by; if that reservation's writes fail, the volume is still free and no
// event says so (nothing on it changed).
describe('binder reconcile: claims passed over while a volume was reserved', function () {
  function setup(): { r: BinderReconciler; store: GatedVolumeWrites; requeued: string[][]; inFlightWhenRequeued: string[][] } {
    const store = new GatedVolumeWrites();
    store.seed<PersistentVolume>(Resources.persistentVolumes, vol('v', '1Gi'));
    for (const n of ['c1', 'c2']) store.seed<PersistentVolumeClaim>(Resources.persistentVolumeClaims, claim(n, '1Gi'));
    const volumes = new AssumeCache<PersistentVolume>();
    const claims = new AssumeCache<PersistentVolumeClaim>();
    const actuator = new BinderActuator({ client: store, events: new FakeEvents(), volumes, claims, log: logger(), dryRun: false });
    const requeued: string[][] = [];
    const inFlightWhenRequeued: string[][] = [];
    const inFlight = new Set<string>();
    const base = world({
      volumes: [store.stored(Resources.persistentVolumes, 'v')!],
      claims: ['c1', 'c2'].map((n) => store.stored<PersistentVolumeClaim>(Resources.persistentVolumeClaims, n, 'ns')!),
    });
    // As the binder's world: free volumes skip the reserved ones.
    const w: BinderWorld = { ...base, *freeVolumes(...args) { for (const v of base.freeVolumes(...args)) if (!inFlight.has(v.metadata!.name!)) yield v; } };
    const client = new Proxy({} as KubeClient, { get: (_t, p) => () => Promise.reject(new Error(`unexpected read ${String(p)}`)) });
    const r = new BinderReconciler({
      world: w,
      client,
      actuator,
      volumes,
      claims,
      inFlight,
      requeueClaims: (keys) => {
        requeued.push(keys);
        inFlightWhenRequeued.push([...inFlight]);
      },
      selectedNodeIssues: new FirstSeen<SelectedNodeIssueSeen>(),
      dryRun: false,
    });
    return { r, store, requeued, inFlightWhenRequeued };
  }

  it("queues the claim that passed the volume by once the reservation fails, not the failing claim (its retry backs off)", async function () {
    const { r, store, requeued, inFlightWhenRequeued } = setup();
    store.hold();
    const first = r.claim('ns', 'c1').then(
      () => undefined,
      (err: unknown) => err,
    );
    await r.claim('ns', 'c2'); // v is reserved for c1: c2 finds nothing
    store.release(false);
    expect(await first, 'c1 fails, to be retried').to.be.instanceOf(KubeApiError);
    expect(requeued).to.deep.equal([['ns/c2']]);
    expect(inFlightWhenRequeued, 'v no longer reserved').to.deep.equal([[]]);
  });

  it('queues nobody when the reservation succeeds, or when nobody was passed over', async function () {
    const ok = setup();
    ok.store.hold();
    const first = ok.r.claim('ns', 'c1');
    await ok.r.claim('ns', 'c2');
    ok.store.release(true);
    await first;
    expect(ok.store.stored<PersistentVolume>(Resources.persistentVolumes, 'v')?.spec?.claimRef?.name).to.equal('c1');
    expect(ok.requeued).to.deep.equal([]);

    const alone = setup();
    alone.store.hold();
    const failing = alone.r.claim('ns', 'c1').catch(() => undefined);
    alone.store.release(false);
    await failing;
    expect(alone.requeued, 'two claims failing on one volume must not wake each other without end').to.deep.equal([]);
  });

  it('a passed-over claim deleted before the reservation fails is not queued again (forgetClaim)', async function () {
    const { r, store, requeued } = setup();
    store.hold();
    const first = r.claim('ns', 'c1').catch(() => undefined);
    await r.claim('ns', 'c2');
    r.forgetClaim('ns/c2');
    store.release(false);
    await first;
    expect(requeued, 'a deleted claim leaves nothing behind').to.deep.equal([]);
  });
});

// A volume a claim's run is writing is not Released under it: the run may be about to take the
// volume back (orphaned-bind.ts), and a release written first would hand it to its deleter.
describe('binder reconcile: no release of a volume a claim is writing', function () {
  it('waits while the volume is in flight, and writes nothing meanwhile', async function () {
    const store = new FakeWrites();
    const ref = { kind: 'PersistentVolumeClaim', apiVersion: 'v1', namespace: 'ns', name: 'gone', uid: 'u-gone' };
    store.seed<PersistentVolume>(Resources.persistentVolumes, vol('v', '1Gi', { persistentVolumeReclaimPolicy: 'Delete', claimRef: ref, phase: 'Bound' }));
    const stored = store.stored<PersistentVolume>(Resources.persistentVolumes, 'v')!;
    const volumes = new AssumeCache<PersistentVolume>();
    const claims = new AssumeCache<PersistentVolumeClaim>();
    const actuator = new BinderActuator({ client: store, events: new FakeEvents(), volumes, claims, log: logger(), dryRun: false });
    const inFlight = new Set<string>(['v']);
    const reads: string[] = [];
    const client = new Proxy({} as KubeClient, { get: (_t, p) => () => (reads.push(String(p)), Promise.reject(new Error(`unexpected read ${String(p)}`))) });
    const r = new BinderReconciler({ world: world({ volumes: [stored] }), client, actuator, volumes, claims, inFlight, requeueClaims: () => undefined, selectedNodeIssues: new FirstSeen<SelectedNodeIssueSeen>(), dryRun: false });
    const log = logger();
    expect(await r.volume('v', { log }), 'looked at again soon').to.be.a('number').and.be.above(0);
    expect(store.stored<PersistentVolume>(Resources.persistentVolumes, 'v')?.metadata?.resourceVersion).to.equal(stored.metadata?.resourceVersion);
    expect(reads, 'not even the release check was sent').to.deep.equal([]);
    // Out of flight, the release goes to its server check as before (here the read fails).
    inFlight.clear();
    const err = await r.volume('v', { log }).then(() => undefined, (e: unknown) => e);
    expect(err).to.be.instanceOf(Error);
    expect(reads.length).to.be.above(0);
  });

  it('nor made Available while a claim naming it re-binds it phase first (Bound, no claimRef yet)', async function () {
    const store = new FakeWrites();
    store.seed<PersistentVolume>(Resources.persistentVolumes, vol('v', '1Gi', { phase: 'Bound' }));
    const stored = store.stored<PersistentVolume>(Resources.persistentVolumes, 'v')!;
    const volumes = new AssumeCache<PersistentVolume>();
    const claims = new AssumeCache<PersistentVolumeClaim>();
    const actuator = new BinderActuator({ client: store, events: new FakeEvents(), volumes, claims, log: logger(), dryRun: false });
    const inFlight = new Set<string>(['v']);
    const client = new Proxy({} as KubeClient, { get: (_t, p) => () => Promise.reject(new Error(`unexpected read ${String(p)}`)) });
    const r = new BinderReconciler({ world: world({ volumes: [stored] }), client, actuator, volumes, claims, inFlight, requeueClaims: () => undefined, selectedNodeIssues: new FirstSeen<SelectedNodeIssueSeen>(), dryRun: false });
    expect(await r.volume('v', { log: logger() }), 'looked at again soon').to.be.a('number').and.be.above(0);
    expect(store.stored<PersistentVolume>(Resources.persistentVolumes, 'v')?.status?.phase).to.equal('Bound');
    inFlight.clear();
    await r.volume('v', { log: logger() });
    expect(store.stored<PersistentVolume>(Resources.persistentVolumes, 'v')?.status?.phase, 'out of flight, as upstream').to.equal('Available');
  });
});

// A take-back (orphaned-bind.ts) decided on a claim cache that has not seen the claim: the server's
// claim refutes it, and then nothing is written and nothing said; confirmed, the volume is written and
// its BindingTakenBack Event follows.
describe('binder reconcile: a take-back and its Event', function () {
  const unfinished = (): PersistentVolume =>
    vol('v', '1Gi', { claimRef: { kind: 'PersistentVolumeClaim', apiVersion: 'v1', namespace: 'ns', name: 'c', uid: 'u1' }, annotations: { 'pv.kubernetes.io/bound-by-controller': 'yes' } });
  const notFound = new KubeApiError(404, { kind: 'Status', reason: 'NotFound', message: 'persistentvolumeclaims "c" not found', details: { name: 'c', kind: 'persistentvolumeclaims' } });

  function setup(serverClaim: PersistentVolumeClaim | undefined): { r: BinderReconciler; store: FakeWrites; events: FakeEvents } {
    const store = new FakeWrites();
    store.seed<PersistentVolume>(Resources.persistentVolumes, unfinished());
    const stored = store.stored<PersistentVolume>(Resources.persistentVolumes, 'v')!;
    const volumes = new AssumeCache<PersistentVolume>();
    const claims = new AssumeCache<PersistentVolumeClaim>();
    const events = new FakeEvents();
    const actuator = new BinderActuator({ client: store, events, volumes, claims, log: logger(), dryRun: false });
    const client = { get: () => (serverClaim ? Promise.resolve(structuredClone(serverClaim)) : Promise.reject(notFound)) } as unknown as KubeClient;
    const r = new BinderReconciler({ world: world({ volumes: [stored] }), client, actuator, volumes, claims, inFlight: new Set(), requeueClaims: () => undefined, selectedNodeIssues: new FirstSeen<SelectedNodeIssueSeen>(), dryRun: false });
    return { r, store, events };
  }

  it('the server still has the claim the cache lacks: refused, the volume as it was, no Event', async function () {
    const { r, store, events } = setup(claim('c', '1Gi', { uid: 'u1' }));
    const failed = await r.volume('v', { log: logger() }).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(failed, 'retried on fresh data').to.be.instanceOf(Error);
    expect(store.stored<PersistentVolume>(Resources.persistentVolumes, 'v')?.spec?.claimRef?.uid).to.equal('u1');
    expect(events.recorded).to.deep.equal([]);
  });

  it('the claim gone on the server too: taken back, reserved by name, and said once on the volume', async function () {
    const { r, store, events } = setup(undefined);
    await r.volume('v', { log: logger() });
    const v = store.stored<PersistentVolume>(Resources.persistentVolumes, 'v')!;
    expect([v.spec?.claimRef?.name, v.spec?.claimRef?.uid]).to.deep.equal(['c', undefined]);
    expect(events.recorded.map((e) => `${e.name} ${e.type} ${e.reason}`)).to.deep.equal(['v Normal BindingTakenBack']);
  });
});

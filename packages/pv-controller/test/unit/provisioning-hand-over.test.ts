import { expect } from 'chai';
import { FirstSeen, KubeApiError, logger, Resources } from '@topovol/shared';
import type { KubeClient, KubeObject, PatchOptions, PatchType, PersistentVolume, PersistentVolumeClaim, ResourceType } from '@topovol/shared';
import { FakeEvents, FakeWrites } from '@topovol/testing';
import { BinderActuator } from '../../src/binder/actuator.js';
import { AssumeCache } from '../../src/binder/assume-cache.js';
import { BinderReconciler } from '../../src/binder/reconcile-binder.js';
import type { SelectedNodeIssueSeen } from '../../src/binder/selected-node-checks.js';
import { claim, sc, world } from './world-fixture.js';

/** FakeWrites whose next claim patches fail with `failure`, nothing written. */
class FailingClaimPatches extends FakeWrites {
  failures = 0;
  failure = new KubeApiError(409, { reason: 'Conflict', message: 'Operation cannot be fulfilled on persistentvolumeclaims "c": the object has been modified; please apply your changes to the latest version and try again' });
  override async patch<T extends KubeObject>(r: ResourceType, name: string, namespace: string | undefined, type: PatchType, patch: unknown, opts: PatchOptions = {}): Promise<T> {
    if (r === Resources.persistentVolumeClaims && this.failures > 0) {
      this.failures--;
      throw this.failure;
    }
    return super.patch(r, name, namespace, type, patch, opts);
  }
}

// kube-controller-manager's provisionClaimOperationExternal: when it cannot save the provisioner
// annotation on the claim it records a ProvisioningFailed Warning "Error saving claim: <error>"
// and tries again at the next sync (pkg/controller/volume/persistentvolume/pv_controller.go).
describe('pv-binder: handing a claim to its provisioner', function () {
  it('a failed write of the provisioner annotation is a ProvisioningFailed Warning with the error, as upstream; the retry hands it over', async function () {
    const store = new FailingClaimPatches();
    const c = store.seed<PersistentVolumeClaim>(Resources.persistentVolumeClaims, claim('c', '1Gi', { storageClassName: 'fast' }));
    const events = new FakeEvents();
    const claims = new AssumeCache<PersistentVolumeClaim>();
    const volumes = new AssumeCache<PersistentVolume>();
    const w = { ...world({ claims: [c], classes: [sc('fast', { provisioner: 'csi.example.com' })] }), claim: (ns: string, n: string) => claims.get(`${ns}/${n}`, store.stored<PersistentVolumeClaim>(Resources.persistentVolumeClaims, n, ns)) };
    const actuator = new BinderActuator({ client: store, events, volumes, claims, log: logger(), dryRun: false });
    // The hand-over plans no server read (verify-on-server.ts): a client that fails any.
    const noReads = new Proxy({} as KubeClient, { get: (_t, p) => () => Promise.reject(new Error(`unexpected read ${String(p)}`)) });
    const r = new BinderReconciler({ world: w, client: noReads, actuator, volumes, claims, inFlight: new Set(), requeueClaims: () => undefined, selectedNodeIssues: new FirstSeen<SelectedNodeIssueSeen>(), dryRun: false });

    store.failures = 1;
    const failed = await r.claim('ns', 'c').then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(failed).to.equal(store.failure);
    expect(events.recorded.map((e) => `${e.type} ${e.reason}: ${e.message}`)).to.deep.equal([`Warning ProvisioningFailed: Error saving claim: ${store.failure.message}`]);

    await r.claim('ns', 'c');
    expect(store.stored<PersistentVolumeClaim>(Resources.persistentVolumeClaims, 'c', 'ns')?.metadata?.annotations?.['volume.kubernetes.io/storage-provisioner']).to.equal('csi.example.com');
    expect(events.recorded.map((e) => e.reason)).to.deep.equal(['ProvisioningFailed', 'ExternalProvisioning']);
  });
});

// A write of a claim's sync the API server refuses (a policy or webhook on claims, a narrowed role):
// upstream only logs it; said on the claim once per refused try, and only once per try.
describe('pv-binder: a claim write the API server refuses', function () {
  const refused = new KubeApiError(403, { reason: 'Forbidden', message: 'persistentvolumeclaims "c" is forbidden: ValidatingAdmissionPolicy \'guard\' denied request: claims here are frozen' });
  function reconciler(store: FakeWrites, c: PersistentVolumeClaim, events: FakeEvents, client: KubeClient, classes = [sc('fast', { provisioner: 'csi.example.com' })]): BinderReconciler {
    const claims = new AssumeCache<PersistentVolumeClaim>();
    const volumes = new AssumeCache<PersistentVolume>();
    const w = { ...world({ claims: [c], classes }), claim: (ns: string, n: string) => claims.get(`${ns}/${n}`, store.stored<PersistentVolumeClaim>(Resources.persistentVolumeClaims, n, ns)) };
    const actuator = new BinderActuator({ client: store, events, volumes, claims, log: logger(), dryRun: false });
    return new BinderReconciler({ world: w, client, actuator, volumes, claims, inFlight: new Set(), requeueClaims: () => undefined, selectedNodeIssues: new FirstSeen<SelectedNodeIssueSeen>(), dryRun: false });
  }

  it('the hand-over refused: only its ProvisioningFailed Warning (as upstream), not a second one', async function () {
    const store = new FailingClaimPatches();
    store.failure = refused;
    store.failures = 1;
    const c = store.seed<PersistentVolumeClaim>(Resources.persistentVolumeClaims, claim('c', '1Gi', { storageClassName: 'fast' }));
    const events = new FakeEvents();
    const noReads = new Proxy({} as KubeClient, { get: (_t, p) => () => Promise.reject(new Error(`unexpected read ${String(p)}`)) });
    await reconciler(store, c, events, noReads).claim('ns', 'c').catch(() => undefined);
    expect(events.recorded.map((e) => e.reason)).to.deep.equal(['ProvisioningFailed']);
  });

  it("a bound claim's Lost status refused: an UpdateRefused Warning naming the refusal, the claim as it was", async function () {
    const store = new FakeWrites();
    const c = store.seed<PersistentVolumeClaim>(Resources.persistentVolumeClaims, claim('c', '1Gi', { volumeName: 'v', phase: 'Bound', annotations: { 'pv.kubernetes.io/bind-completed': 'yes' } }));
    store.replaceStatus = () => Promise.reject(refused);
    store.patch = () => Promise.reject(refused);
    const events = new FakeEvents();
    // The server confirms the volume gone (no volume of the name) and the claim as cached.
    const server = { list: () => Promise.resolve({ items: [] }), get: () => Promise.resolve(structuredClone(c)) } as unknown as KubeClient;
    const err = await reconciler(store, c, events, server).claim('ns', 'c').then(() => undefined, (e: unknown) => e);
    expect(err).to.equal(refused);
    expect(events.recorded.map((e) => `${e.type} ${e.reason} ${e.kind}/${e.name}`)).to.deep.equal(['Warning UpdateRefused PersistentVolumeClaim/c']);
    expect(events.recorded[0]!.message).to.match(/a request of its sync was refused by the API server; retrying: .*claims here are frozen/);
    expect(store.stored<PersistentVolumeClaim>(Resources.persistentVolumeClaims, 'c', 'ns')?.status?.phase).to.equal('Bound');
  });
});

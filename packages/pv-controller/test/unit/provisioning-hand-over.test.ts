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

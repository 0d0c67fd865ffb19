import { expect } from 'chai';
import { Resources } from '@topovol/shared';
import type { KubeClient, PersistentVolume, PersistentVolumeClaim, Pod, StorageClass } from '@topovol/shared';
import { createTestNamespace, deleteNow, eventually, installCrds, sharedControlPlane, startKubeControllerManager, SuiteProcess } from '@topovol/testing';
import type { ManagedProcess } from '@topovol/testing';
import { LABEL_USAGE } from '../../src/rollback/marks.js';
import { claim, createNode, pod, provision, seenByLoop, selectNode } from './rollback-harness.js';
import type { RunningRollback } from './rollback-harness.js';

/**
 * One rollback test's world on the shared control plane: a namespace, a delayed-binding class,
 * nodes a and b, and kube-controller-manager's binder and protection controllers (started once per
 * suite). The test plays the scheduler (selected-node) and the external provisioner (PVs).
 */
export class RollbackFixture {
  admin!: KubeClient;
  ns = '';
  cls = '';
  private readonly kcm = new SuiteProcess<ManagedProcess>();
  /** The test's other namespaces (a tenant's, a victim's): cleaned with its own. */
  private others: string[] = [];

  name(s: string): string {
    return `${this.ns}-${s}`;
  }

  async startSuite(): Promise<void> {
    const cp = await sharedControlPlane();
    this.admin = cp.adminClient();
    await installCrds(this.admin);
    await this.startKcm();
  }

  private async startKcm(): Promise<void> {
    const cp = await sharedControlPlane();
    await this.kcm.start(() => startKubeControllerManager(cp, ['persistentvolume-binder-controller', 'persistentvolumeclaim-protection-controller', 'persistentvolume-protection-controller'], ['--pvclaimbinder-sync-period=2s']));
  }

  /** kube-controller-manager stopped by holdDeletedClaims, started again by stopTest. */
  private kcmStopped = false;

  /**
   * Stops kube-controller-manager until the test ends: its protection controller does not remove a
   * deleted claim's `kubernetes.io/pvc-protection` finalizer meanwhile, so the claim stays
   * Terminating (as while that controller is slow or down) until the test removes the finalizer
   * itself. A finalizer of the test's own would not do: the rollback leaves a claim carrying one
   * alone (claim-template.ts, heldByOthers).
   */
  async holdDeletedClaims(): Promise<void> {
    this.kcmStopped = true;
    await this.kcm.stop();
  }

  async stopSuite(): Promise<void> {
    await this.kcm.stop();
  }

  async startTest(prefix = 'rbs-'): Promise<void> {
    this.ns = await createTestNamespace(this.admin, prefix);
    this.cls = `${this.ns}-wffc`;
    await this.admin.create<StorageClass>(Resources.storageClasses, {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      metadata: { name: this.cls },
      provisioner: 'rollback.test.topovol.io',
      volumeBindingMode: 'WaitForFirstConsumer',
      reclaimPolicy: 'Delete',
    });
    for (const n of ['a', 'b']) await createNode(this.admin, this.name(n));
  }

  /** Another namespace for this test (a tenant's), cleaned by stopTest as the test's own is. */
  async otherNamespace(prefix: string): Promise<string> {
    const ns = await createTestNamespace(this.admin, prefix);
    this.others.push(ns);
    return ns;
  }

  /** Nothing left for other suites' cluster-wide loops to act on. */
  async stopTest(): Promise<void> {
    const { admin } = this;
    if (this.kcmStopped) {
      this.kcmStopped = false;
      await this.startKcm();
    }
    for (const ns of [this.ns, ...this.others.splice(0)]) {
      for (const p of (await admin.list<Pod>(Resources.pods, { namespace: ns })).items) await admin.delete(Resources.pods, p.metadata!.name!, ns, { gracePeriodSeconds: 0 }).catch(() => undefined);
      for (const c of (await admin.list<PersistentVolumeClaim>(Resources.persistentVolumeClaims, { namespace: ns })).items) await deleteNow(admin, Resources.persistentVolumeClaims, c.metadata!.name!, ns, { quiet: true });
    }
    await admin.delete(Resources.storageClasses, this.cls).catch(() => undefined);
    for (const n of ['a', 'b']) await admin.delete(Resources.nodes, this.name(n)).catch(() => undefined);
  }

  claim(name: string): Promise<PersistentVolumeClaim> {
    return this.admin.get<PersistentVolumeClaim>(Resources.persistentVolumeClaims, name, this.ns);
  }

  volume(name: string): Promise<PersistentVolume> {
    return this.admin.get<PersistentVolume>(Resources.persistentVolumes, this.name(name));
  }

  /** Claims c1 and c2 for pod `podName` (created from `podSpec`), both selecting node a. */
  async podWithClaims(podName: string, extra: Partial<Pod> = {}, claims = ['c1', 'c2']): Promise<Pod> {
    for (const c of claims) await this.admin.create(Resources.persistentVolumeClaims, claim(this.ns, c, this.cls));
    const base = pod(this.ns, podName, claims);
    const p = await this.admin.create<Pod>(Resources.pods, { ...base, ...extra, metadata: { ...base.metadata, ...extra.metadata }, spec: { ...base.spec!, ...extra.spec } });
    for (const c of claims) await selectNode(this.admin, this.ns, c, this.name('a'));
    return p;
  }

  /** c1 provisioned on node a (seen by the loop first, when one is given) and bound; returns the claim. */
  async provisionC1OnA(loop?: RunningRollback, opts: { policy?: 'Delete' | 'Retain'; pv?: string; claimName?: string } = {}): Promise<PersistentVolumeClaim> {
    const claimName = opts.claimName ?? 'c1';
    if (loop) await seenByLoop(loop, this.ns, claimName);
    await provision(this.admin, this.ns, claimName, this.name('a'), this.name(opts.pv ?? 'v1'), { policy: opts.policy });
    return eventually(async () => {
      const c = await this.claim(claimName);
      expect(c.status?.phase).to.equal('Bound');
      return c;
    });
  }

  async usage(pv = 'v1'): Promise<string | undefined> {
    return (await this.volume(pv)).metadata?.labels?.[LABEL_USAGE];
  }
}

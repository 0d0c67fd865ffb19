import { Resources } from '@topovol/shared';
import type { KubeClient, StorageClass } from '@topovol/shared';
import type { CsiTestDriver } from '@topovol/testing/csi-test-driver';
import { createTestNamespace, installCrds, sharedControlPlane } from '@topovol/testing';
import { createNode, deleteVolume, registerDriverOnNode, RunningCapacity, startDriver } from './capacity-harness.js';
import { deleteDriverStatus } from './status-helpers.js';

type Kind = 'node' | 'csinode' | 'class' | 'pv';

/**
 * Per test: a fresh namespace, a CSI test driver named after it, and the loop the test starts;
 * afterwards the loop stops, the driver and its aggregated status go, and every cluster-scoped
 * object the test tracked is deleted (the control plane is shared by all suites).
 * `useCapacityTestbed` registers the mocha hooks in the calling describe.
 */
export class CapacityTestbed {
  admin!: KubeClient;
  ns = '';
  driverName = '';
  driver!: CsiTestDriver;
  loop: RunningCapacity | undefined;
  private cleanup: (() => Promise<void>) | undefined;
  private readonly created: { kind: Kind; name: string }[] = [];

  /** A name unique to this test, for cluster-scoped objects. */
  name(s: string): string {
    return `${this.ns}-${s}`;
  }

  /** Deleted after the test. */
  track(kind: Kind, name: string): void {
    this.created.push({ kind, name });
  }

  /**
   * A node of this test (name(n)) with these labels; its CSINode lists the driver with `keys`
   * (default: the label keys), or no CSINode at all with 'unregistered'.
   */
  async addNode(n: string, labels: Record<string, string>, keys: string[] | 'unregistered' = Object.keys(labels)): Promise<void> {
    await createNode(this.admin, this.name(n), labels);
    this.track('node', this.name(n));
    if (keys !== 'unregistered') await this.register(n, keys);
  }

  /** The driver registers on node name(n) with these topology keys. */
  async register(n: string, keys: string[]): Promise<void> {
    await registerDriverOnNode(this.admin, this.name(n), this.driverName, keys);
    this.track('csinode', this.name(n));
  }

  /** A WaitForFirstConsumer class name(c) of this test's driver. */
  async addClass(c: string, parameters: Record<string, string> = {}): Promise<void> {
    await this.admin.create<StorageClass>(Resources.storageClasses, { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: this.name(c) }, provisioner: this.driverName, volumeBindingMode: 'WaitForFirstConsumer', parameters });
    this.track('class', this.name(c));
  }

  /** The capacity loop for this driver, publishing into the test's namespace. */
  async start(args: string[]): Promise<RunningCapacity> {
    this.loop = await RunningCapacity.start([`--csi-address=${this.driver.endpoint}`, `--capacity-namespace=${this.ns}`, ...args]);
    return this.loop;
  }

  async setUp(prefix: string): Promise<void> {
    this.ns = await createTestNamespace(this.admin, prefix);
    this.driverName = `${this.ns}.csi.topovol.test`;
    ({ driver: this.driver, cleanup: this.cleanup } = await startDriver({ name: this.driverName }));
  }

  async tearDown(): Promise<void> {
    await this.loop?.stop();
    this.loop = undefined;
    await this.cleanup?.();
    await deleteDriverStatus(this.admin, this.driverName);
    const res = { node: Resources.nodes, csinode: Resources.csiNodes, class: Resources.storageClasses, pv: Resources.persistentVolumes };
    await Promise.all(this.created.splice(0).map((c) => (c.kind === 'pv' ? deleteVolume(this.admin, c.name) : this.admin.delete(res[c.kind], c.name).catch(() => undefined))));
  }
}

export function useCapacityTestbed(prefix: string): CapacityTestbed {
  const tb = new CapacityTestbed();
  before(async function () {
    tb.admin = (await sharedControlPlane()).adminClient();
    await installCrds(tb.admin);
  });
  beforeEach(() => tb.setUp(prefix));
  afterEach(() => tb.tearDown());
  return tb;
}

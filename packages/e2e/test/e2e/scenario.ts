import { expect } from 'chai';
import { Resources } from '@topovol/shared';
import type { Event, KubeClient, KubeObject, PersistentVolume, PersistentVolumeClaim, Pod, ResourceType, StorageClass } from '@topovol/shared';
import { createTestNamespace, delayedClass, eventsAbout, eventually, HOSTNAME, localVolume, markPodRunning, NO_PROVISIONER, SELECTED_NODE, unschedulable, volumeTopology } from '@topovol/testing';
import type { StorageStack, Unschedulable } from '@topovol/testing';
import { DRIVER, e2eStack, NODE_KEY } from './e2e-stack.js';
import { STATEFUL_SETS } from './statefulset.js';

/**
 * Generous: the suite asserts end states, never how fast they come (two cores run everything).
 * TOPOVOL_E2E_WAIT_MS shortens it for runs with loops left out, where the waits are expected to fail.
 */
export const WAIT_MS = Number(process.env.TOPOVOL_E2E_WAIT_MS ?? 120_000);

/**
 * One scenario's fixture: the shared stack, a fresh namespace per test, cluster-scoped names
 * unique to the test, waits that fail with a readable picture of the namespace, and afterwards
 * its pods deleted (a Pending pod would keep the scheduler retrying). Volumes and claims stay:
 * every test has classes of its own, so they meet no other test.
 */
export class Scenario {
  stack!: StorageStack;
  admin!: KubeClient;
  ns = '';

  static use(prefix: string): Scenario {
    const s = new Scenario();
    before(async function () {
      // A cold build of kube-scheduler, kube-controller-manager and csi-provisioner takes minutes.
      this.timeout(50 * 60_000);
      s.stack = await e2eStack();
      s.admin = s.stack.admin;
    });
    beforeEach(async function () {
      s.ns = await createTestNamespace(s.admin, prefix);
    });
    afterEach(async function () {
      if (this.currentTest?.state === 'failed') process.stderr.write(`\n--- ${s.ns} when "${this.currentTest.title}" failed ---\n${await s.picture()}\n`);
      await s.deletePods();
    });
    return s;
  }

  /** A name for a cluster-scoped object (class, volume) unique to this test. */
  name(s: string): string {
    return `${this.ns}-${s}`;
  }

  async create<T extends KubeObject>(r: ResourceType, obj: T): Promise<T> {
    return this.admin.create<T>(r, obj);
  }

  /** A WaitForFirstConsumer class for pre-provisioned local volumes only. */
  async localClass(suffix: string): Promise<string> {
    await this.create<StorageClass>(Resources.storageClasses, delayedClass(this.name(suffix), NO_PROVISIONER));
    return this.name(suffix);
  }

  /**
   * A WaitForFirstConsumer class of the CSI driver, with a pool of its own whose free space per node
   * is set first, so that the capacity instances publish these figures for it.
   */
  async driverClass(suffix: string, capacity: Record<string, bigint>): Promise<string> {
    const pool = this.name(suffix);
    for (const n of this.stack.nodes) n.setCapacity(capacity[n.name] ?? 0n, pool);
    await this.create<StorageClass>(Resources.storageClasses, delayedClass(this.name(suffix), DRIVER, { pool }));
    return this.name(suffix);
  }

  /** `count[node]` local PVs of `size` on each node, named <test>-<suffix>-<node>-<i>; returns their names. */
  async localVolumes(cls: string, suffix: string, count: Record<string, number>, size = '1Gi'): Promise<string[]> {
    const names: string[] = [];
    for (const [node, n] of Object.entries(count)) {
      for (let i = 0; i < n; i++) {
        names.push(this.name(`${suffix}-${node}-${i}`));
        await this.create<PersistentVolume>(Resources.persistentVolumes, localVolume(names.at(-1)!, size, cls, node));
      }
    }
    return names;
  }

  /**
   * Waits until the volumes are Available (Topovol's binder writes that phase): kube-scheduler
   * matches pre-provisioned volumes only in that phase (FindMatchingVolume in
   * k8s.io/component-helpers storage/volume/pv_helpers.go) and would provision instead meanwhile.
   */
  async available(names: readonly string[]): Promise<void> {
    await this.until(`volumes ${names.join(', ')} Available`, async () => {
      for (const n of names) expect((await this.admin.get<PersistentVolume>(Resources.persistentVolumes, n)).status?.phase, n).to.equal('Available');
    });
  }

  pod(name: string): Promise<Pod> {
    return this.admin.get<Pod>(Resources.pods, name, this.ns);
  }

  claim(name: string): Promise<PersistentVolumeClaim> {
    return this.admin.get<PersistentVolumeClaim>(Resources.persistentVolumeClaims, name, this.ns);
  }

  /** Waits with `check`; a timeout fails with the last error and the namespace's picture. */
  async until<T>(what: string, check: () => Promise<T>, timeoutMs = WAIT_MS): Promise<T> {
    try {
      return await eventually(async () => {
        this.stack.requireAllRunning();
        return check();
      }, timeoutMs, 250);
    } catch (err) {
      throw new Error(`${what}: ${err instanceof Error ? err.message : String(err)}\n${await this.picture()}`);
    }
  }

  /** The node the scheduler bound the pod to (`timeoutMs`: a story with rollbacks in it takes longer). */
  async scheduled(pod: string, timeoutMs = WAIT_MS): Promise<string> {
    return this.until(
      `pod ${pod} scheduled`,
      async () => {
        const p = await this.pod(pod);
        if (!p.spec?.nodeName) throw new Error(`pod ${pod} not scheduled`);
        return p.spec.nodeName;
      },
      timeoutMs,
    );
  }

  /**
   * The pod stays Pending: the reason a user sees (PodScheduled=False) and the scheduler's newest
   * FailedScheduling Event, once both say each of `says`. Waiting for the words, not for the first
   * report: an attempt made before the scheduler's cache held every claim reports
   * `persistentvolumeclaim "x" not found`, and the next attempt the real reason.
   */
  async unschedulable(pod: string, says: string[] = []): Promise<Unschedulable & { event: Event }> {
    return this.until(`pod ${pod} reported unschedulable`, async () => {
      const why = unschedulable(await this.pod(pod));
      if (!why) throw new Error(`pod ${pod} has no PodScheduled=False condition`);
      const event = (await eventsAbout(this.admin, this.ns, 'Pod', pod, 'FailedScheduling')).at(-1);
      if (!event) throw new Error(`no FailedScheduling Event for ${pod}`);
      for (const words of says) {
        expect(why.message, `pod ${pod}'s PodScheduled condition`).to.contain(words);
        expect(event.message, `pod ${pod}'s newest FailedScheduling Event`).to.contain(words);
      }
      return { ...why, event };
    });
  }

  /** The claim stays Pending and its Events say which pod it waits for (`kubectl describe pvc`). */
  async waitingFor(claimName: string, pod: string): Promise<void> {
    await this.until(`claim ${claimName} waiting for pod ${pod}`, async () => {
      expect((await this.claim(claimName)).status?.phase, claimName).to.equal('Pending');
      const events = await eventsAbout(this.admin, this.ns, 'PersistentVolumeClaim', claimName, 'WaitForPodScheduled');
      expect(events.map((e) => e.message)).to.include(`waiting for pod ${pod} to be scheduled`);
    });
  }

  /**
   * The claim Bound to a Bound volume that is bound back to it (same uid) and lies on `node`:
   * hostname affinity for local volumes, the driver's node key for provisioned ones.
   */
  async boundOn(claimName: string, node: string): Promise<PersistentVolume> {
    return this.until(`claim ${claimName} Bound on ${node}`, async () => {
      const c = await this.claim(claimName);
      expect(c.status?.phase, `claim ${claimName}`).to.equal('Bound');
      const pv = await this.admin.get<PersistentVolume>(Resources.persistentVolumes, c.spec!.volumeName!);
      expect(pv.status?.phase, `volume ${pv.metadata?.name}`).to.equal('Bound');
      expect(pv.spec?.claimRef?.uid).to.equal(c.metadata?.uid);
      expect(volumeTopology(pv, HOSTNAME) ?? volumeTopology(pv, NODE_KEY), `node of ${pv.metadata?.name}`).to.equal(node);
      return pv;
    });
  }

  /**
   * In place of the kubelets: every pod of the namespace that is scheduled but not running yet is
   * reported Running and Ready. Returns the pods by name with their nodes.
   */
  async runScheduledPods(): Promise<Map<string, string>> {
    const placed = new Map<string, string>();
    for (const p of (await this.admin.list<Pod>(Resources.pods, { namespace: this.ns })).items) {
      if (!p.spec?.nodeName) continue;
      if (p.status?.phase !== 'Running') await markPodRunning(this.admin, this.ns, p.metadata!.name!);
      placed.set(p.metadata!.name!, p.spec.nodeName);
    }
    return placed;
  }

  /** Pods, claims and the volumes of this test's classes, one line each, with the Events of the namespace. */
  async picture(): Promise<string> {
    try {
      const pods = (await this.admin.list<Pod>(Resources.pods, { namespace: this.ns })).items;
      const claims = (await this.admin.list<PersistentVolumeClaim>(Resources.persistentVolumeClaims, { namespace: this.ns })).items;
      const volumes = (await this.admin.list<PersistentVolume>(Resources.persistentVolumes)).items.filter((v) => v.spec?.storageClassName?.startsWith(this.ns) || v.spec?.claimRef?.namespace === this.ns);
      const events = (await this.admin.list<Event>(Resources.events, { namespace: this.ns })).items;
      return [
        ...pods.map((p) => `pod ${p.metadata?.name}: node=${p.spec?.nodeName ?? '-'} phase=${p.status?.phase ?? '?'}${unschedulable(p) ? ` unschedulable: ${unschedulable(p)!.message}` : ''}`),
        ...claims.map((c) => `claim ${c.metadata?.name}: ${c.status?.phase ?? '?'} volume=${c.spec?.volumeName || '-'} selected-node=${c.metadata?.annotations?.[SELECTED_NODE] ?? '-'}`),
        ...volumes.map((v) => `volume ${v.metadata?.name}: ${v.status?.phase ?? '?'} claim=${v.spec?.claimRef ? `${v.spec.claimRef.namespace}/${v.spec.claimRef.name}` : '-'} node=${volumeTopology(v, HOSTNAME) ?? volumeTopology(v, NODE_KEY) ?? '-'}`),
        ...events.map((e) => `event ${e.involvedObject.kind}/${e.involvedObject.name} ${e.type} ${e.reason}: ${e.message ?? ''}`),
      ].join('\n');
    } catch (err) {
      return `(no picture: ${err instanceof Error ? err.message : String(err)})`;
    }
  }

  private async deletePods(): Promise<void> {
    for (const ss of (await this.admin.list<KubeObject>(STATEFUL_SETS, { namespace: this.ns })).items) await this.admin.delete(STATEFUL_SETS, ss.metadata!.name!, this.ns).catch(() => undefined);
    for (const p of (await this.admin.list<Pod>(Resources.pods, { namespace: this.ns })).items) await this.admin.delete(Resources.pods, p.metadata!.name!, this.ns, { gracePeriodSeconds: 0 }).catch(() => undefined);
  }
}

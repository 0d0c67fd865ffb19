import { expect } from 'chai';
import { Resources } from '../../src/index.js';
import type { KubeClient, Lease, PersistentVolume, PersistentVolumeClaim, Pod } from '../../src/index.js';
import { createTestNamespace, deleteNow, eventually, sharedControlPlane } from '@topovol/testing';
import type { ControlPlane } from '@topovol/testing';
import { startAllLoopsManager } from './all-loops-manager.js';
import type { AllLoopsManager } from './all-loops-manager.js';
import { httpGet, sample } from './manager-process.js';

// Two replicas of the real manager binary with every loop. A standby keeps its informers synced
// (so that it binds at once when it takes over), and their handlers keep running, for the loops'
// indexes and observations: they must not queue keys for a leader that may never come. Before, a
// standby's rollback queue held a key for every pod that ever changed, deleted ones included, and a
// new leader worked through that backlog first (controller-runtime starts a controller's event
// sources only in Controller.Start). Resyncs are off, so a claim the new leader binds was queued by
// its start-up keys: created while the standby's queue was held, its adds were dropped.
const LOOPS = ['pv-binder', 'zonal-pv-upgrade', 'rollback'];
// A lease long enough that a loaded machine's slow renewal through the churn does not hand the loops
// to the standby before the test freezes the leader (client-go's defaults are 15 s, 10 s and 2 s).
const ARGS = ['--leader-elect-lease-duration=15s', '--leader-elect-renew-deadline=10s', '--leader-elect-retry-period=2s', '--pvclaimbinder-sync-period=0'];

describe('a standby replica queues nothing; it starts from its caches when it leads', function () {
  this.timeout(300_000);
  let cp: ControlPlane;
  let admin: KubeClient;
  let ns: string;
  const replicas: AllLoopsManager[] = [];
  const volumes: string[] = [];

  before(async function () {
    cp = await sharedControlPlane();
    admin = cp.adminClient();
    ns = await createTestNamespace(admin, 'standby-');
  });
  after(async function () {
    for (const r of replicas.splice(0)) {
      if (r.manager.running && r.manager.pid) process.kill(r.manager.pid, 'SIGCONT');
      await r.stop();
    }
    for (const v of volumes) await admin.delete(Resources.persistentVolumes, v).catch(() => undefined);
  });

  /** A queue's series on a replica's /metrics (undefined if absent). */
  const queueMetric = async (r: AllLoopsManager, metric: string, queue: string): Promise<number | undefined> => sample((await httpGet(r.metricsPort, '/metrics')).body, metric, { name: queue });
  const holder = async (loop: string): Promise<string | undefined> =>
    (await admin.get<Lease>(Resources.leases, `topovol-${loop}`, ns).catch(() => undefined))?.spec?.holderIdentity;
  // Each pair is pre-bound on both sides: the volume names its claim (claimRef) and the claim its
  // volume. Other files leave claims and volumes in the shared control plane, and managers that bind
  // cluster-wide: a leftover Pending claim of class "" took v0 once, when only the claim named it.
  const pv = (name: string, claimName: string): PersistentVolume => {
    volumes.push(name);
    return {
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: { name },
      spec: { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], hostPath: { path: `/tmp/${name}` }, storageClassName: '', claimRef: { namespace: ns, name: claimName } },
    };
  };
  const claim = (name: string, volumeName?: string): PersistentVolumeClaim => ({
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name, namespace: ns },
    spec: { accessModes: ['ReadWriteOnce'], storageClassName: '', resources: { requests: { storage: '1Gi' } }, ...(volumeName ? { volumeName } : {}) },
  });
  /** Deletes a claim for good: no pvc-protection controller runs here to lift its finalizer. */
  const deleteClaim = (name: string): Promise<void> => deleteNow(admin, Resources.persistentVolumeClaims, name, ns);
  const boundTo = async (name: string): Promise<string | undefined> => {
    const c = await admin.get<PersistentVolumeClaim>(Resources.persistentVolumeClaims, name, ns);
    return c.status?.phase === 'Bound' ? c.spec?.volumeName : undefined;
  };

  it('the standby\'s queues stay empty through churn; once the leader stops, it binds a claim created while it stood by', async function () {
    const a = await startAllLoopsManager(cp, ns, { instance: 'a', args: ARGS });
    replicas.push(a);
    const leaderId = await eventually(async () => {
      const ids = await Promise.all(LOOPS.map(holder));
      expect(ids[0], a.manager.logTail(10)).to.be.a('string');
      expect(new Set(ids).size).to.equal(1);
      return ids[0]!;
    }, 60_000);
    const b = await startAllLoopsManager(cp, ns, { instance: 'b', args: ARGS });
    replicas.push(b);
    await eventually(async () => expect((await httpGet(b.probePort, '/readyz')).status, b.manager.logTail(10)).to.equal(200), 60_000);

    // Churn the standby watches: pods (the rollback loop's keys) created and deleted, pairs bound by
    // the leader, a claim deleted and its volume released.
    const pods = Array.from({ length: 20 }, (_, i) => `p${i}`);
    await Promise.all(
      pods.map((name) =>
        admin.create<Pod>(Resources.pods, { apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: ns }, spec: { containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10' }] } }),
      ),
    );
    for (let i = 0; i < 3; i++) {
      await admin.create(Resources.persistentVolumes, pv(`${ns}-v${i}`, `c${i}`));
      await admin.create(Resources.persistentVolumeClaims, claim(`c${i}`, `${ns}-v${i}`));
    }
    await eventually(async () => expect(await Promise.all([0, 1, 2].map((i) => boundTo(`c${i}`))), a.manager.logTail(40)).to.deep.equal([0, 1, 2].map((i) => `${ns}-v${i}`)), 60_000);
    await Promise.all(pods.map((name) => admin.delete(Resources.pods, name, ns, { gracePeriodSeconds: 0 })));
    await deleteClaim('c1');
    await eventually(async () => expect((await admin.get<PersistentVolume>(Resources.persistentVolumes, `${ns}-v1`)).status?.phase).to.equal('Released'), 30_000);

    await eventually(async () => expect(await queueMetric(a, 'workqueue_adds_total', 'rollback')).to.be.at.least(pods.length), 30_000);
    // The standby's pod cache has caught up with the churn (its count is the server's), so its
    // handlers have run for every event that would have queued a key.
    await eventually(async () => {
      const onServer = (await admin.list<Pod>(Resources.pods)).items.length;
      expect(sample((await httpGet(b.metricsPort, '/metrics')).body, 'topovol_informer_cached_objects', { resource: 'pods' }), 'pods in the standby\'s cache').to.equal(onServer);
    }, 30_000);
    expect(await holder('rollback'), 'the first replica still leads').to.equal(leaderId);
    for (const loop of LOOPS) {
      expect(await queueMetric(b, 'workqueue_adds_total', loop), `standby adds to ${loop}`).to.equal(0);
      expect(await queueMetric(b, 'workqueue_depth', loop), `standby depth of ${loop}`).to.equal(0);
    }

    // The leader freezes (its Lease expires, it cannot write); a pair created and a claim deleted now
    // reach the standby only as events while its queues are held.
    process.kill(a.manager.pid!, 'SIGSTOP');
    await admin.create(Resources.persistentVolumes, pv(`${ns}-late`, 'late'));
    // Pre-bound, as the others: a leftover Available volume of another test cannot take it.
    await admin.create(Resources.persistentVolumeClaims, claim('late', `${ns}-late`));
    await deleteClaim('c2');
    await eventually(async () => expect(await holder('pv-binder')).to.not.equal(leaderId), 60_000);
    await eventually(async () => expect(await boundTo('late'), b.manager.logTail(10)).to.equal(`${ns}-late`), 30_000);
    // It started from what its caches hold: the pair bound before stays bound, the volume of the
    // claim deleted while it stood by is released.
    expect(await boundTo('c0')).to.equal(`${ns}-v0`);
    await eventually(async () => expect((await admin.get<PersistentVolume>(Resources.persistentVolumes, `${ns}-v2`)).status?.phase).to.equal('Released'), 30_000);
  });
});

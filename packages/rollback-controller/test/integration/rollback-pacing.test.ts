import { expect } from 'chai';
import { isNotFound, metricsRegistry, projectEvent, PROVISIONING_FAILED_EVENTS, Resources, retryOnConflict } from '@topovol/shared';
import type { Event, KubeObject, PersistentVolume, PersistentVolumeClaim, Pod } from '@topovol/shared';
import { deleteNow, denyingPolicy, eventually, queueIdle, untilRefused } from '@topovol/testing';
import { bindPod, claim, claimReference, eventFor, failProvisioning, pod, provisioningFailed, recordsOf, RunningRollback, selectNode } from './rollback-harness.js';
import type { RunningRollback as Loop } from './rollback-harness.js';
import { RollbackFixture } from './rollback-fixture.js';
import { RECREATE_RETRY_MS } from '../../src/rollback/advance-rollback.js';
import { LABEL_USAGE } from '../../src/rollback/marks.js';

async function counter(result: string): Promise<number> {
  const all = (await metricsRegistry.getMetricsAsJSON()) as unknown as { name: string; values: { value: number; labels: Record<string, string | number> }[] }[];
  return all.find((m) => m.name === 'topovol_rollback_rollbacks_total')?.values.find((v) => v.labels.result === result)?.value ?? 0;
}

/**
 * Rollbacks that do not loop, pods that are replaced, generic ephemeral volumes, and a failed
 * re-create: the rollback loop with its default flags except a 1 s backoff, against the real API
 * server and kube-controller-manager's binder and protection controllers.
 */
describe('rollback pacing and reach: caps, backoff, fresh evidence, replaced pods, ephemeral volumes', function () {
  this.timeout(180_000);
  const f = new RollbackFixture();
  let loop: Loop;
  before(async () => {
    await f.startSuite();
    loop = await RunningRollback.start(['--rollback-backoff=1s']);
  });
  after(async () => {
    await loop?.stop();
    await f.stopSuite();
  });
  beforeEach(() => f.startTest('rbp-'));
  afterEach(() => f.stopTest());

  /** The scheduler picks node a again for both claims, c1 is provisioned there (a new volume), c2 fails there. */
  const stuckAgainOnA = async (round: number): Promise<void> => {
    await selectNode(f.admin, f.ns, 'c1', f.name('a'));
    await selectNode(f.admin, f.ns, 'c2', f.name('a'));
    await f.provisionC1OnA(loop, { pv: `v1-${round}` });
    await eventually(async () => expect(await f.usage(`v1-${round}`)).to.equal('unused'));
  };
  const rollbacksOf = async (p: Pod): Promise<number> => (await recordsOf(f.admin, p.metadata!.uid!)).length;
  /** Waits for the pod's n-th rollback to be done (its claim re-created), before the scheduler acts again. */
  const rolledBack = async (p: Pod, n: number): Promise<void> => {
    await eventually(async () => {
      const rs = await recordsOf(f.admin, p.metadata!.uid!);
      expect(rs.map((r) => r.status?.phase)).to.deep.equal(Array.from({ length: n }, () => 'Completed'));
    }, 60_000);
  };

  it('acts only on evidence newer than its last rollback, backs off, and stops at 3 with a Warning', async function () {
    const limited = await counter('limited');
    const p = await f.podWithClaims('p');
    await f.provisionC1OnA(loop);
    await eventually(async () => expect(await f.usage()).to.equal('unused'));
    await failProvisioning(f.admin, f.ns, 'c2', 'rpc error: code = ResourceExhausted desc = node a is full');
    await rolledBack(p, 1);
    // Stuck on a again, with only the old failure on record: no second rollback.
    await stuckAgainOnA(2);
    // Once the loop has its own mark in its cache and has decided on everything queued since.
    const volumes = loop.informers.forResource<PersistentVolume>(Resources.persistentVolumes);
    await eventually(() => expect(volumes.cache.get(f.name('v1-2'))?.metadata?.labels?.[LABEL_USAGE]).to.equal('unused'));
    await queueIdle('rollback');
    await new Promise((r) => setTimeout(r, 1_000));
    expect(await rollbacksOf(p), 'the old failure does not count again').to.equal(1);
    // A new failure: rollback 2, then 3; a fourth is refused with a Warning.
    for (const round of [2, 3]) {
      if (round === 3) await stuckAgainOnA(3);
      await failProvisioning(f.admin, f.ns, 'c2', `rpc error: code = ResourceExhausted desc = node a is full (${round})`);
      await rolledBack(p, round);
    }
    await stuckAgainOnA(4);
    await failProvisioning(f.admin, f.ns, 'c2', 'rpc error: code = ResourceExhausted desc = node a is full (4)');
    expect((await eventFor(f.admin, p, 'ProvisioningRollbackLimit')).message).to.match(/3 rollbacks \(the limit is 3\)/);
    expect(await rollbacksOf(p)).to.equal(3);
    expect(await counter('limited')).to.be.greaterThan(limited);
    // The backoff spaced them: 1 s after the first, 2 s after the second.
    const starts = (await recordsOf(f.admin, p.metadata!.uid!)).map((r) => Date.parse(r.metadata!.creationTimestamp!)).sort();
    expect(starts[2]! - starts[1]!).to.be.at.least(2_000 - 1_000);
  });

  it('helps a pod re-created by its controller (a new uid, the same workload) once the original is gone', async function () {
    const owner = { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web', uid: `${f.ns}-rs-uid`, controller: true };
    const p1 = await f.podWithClaims('web-1', { metadata: { ownerReferences: [owner] } });
    const c1 = await f.provisionC1OnA(loop);
    await eventually(async () => expect(await f.usage()).to.equal('unused'));
    expect((await f.volume('v1')).metadata?.annotations?.['rollback.topovol.io/provisioned-for-workload']).to.equal(owner.uid);
    // Evicted before it ran; its ReplicaSet makes another.
    await f.admin.delete(Resources.pods, 'web-1', f.ns, { gracePeriodSeconds: 0 });
    const p2 = await f.admin.create<Pod>(Resources.pods, { ...p1, metadata: { name: 'web-2', namespace: f.ns, ownerReferences: [owner] } });
    await failProvisioning(f.admin, f.ns, 'c2', 'rpc error: code = ResourceExhausted desc = node a is full');
    await eventually(async () => expect((await f.claim('c1')).metadata?.uid).to.not.equal(c1.metadata?.uid), 60_000);
    await eventFor(f.admin, p2, 'ProvisioningRollback');
  });

  /** Waits until the loop's own cache holds `n` ProvisioningFailed Events about the claim. */
  const loopHasFailures = async (claimName: string, n: number): Promise<void> => {
    const failures = loop.informers.forResource<Event>(Resources.events, { fieldSelector: PROVISIONING_FAILED_EVENTS, transform: projectEvent });
    await eventually(() => expect(failures.cache.list().filter((e) => e.involvedObject?.namespace === f.ns && e.involvedObject.name === claimName)).to.have.length(n));
  };
  /** The provisioner's n-th ResourceExhausted on the claim, recorded on `copy` (by default the claim as it is now). */
  const exhausted = async (claimName: string, n: number, copy?: PersistentVolumeClaim): Promise<void> => {
    const c = copy ?? (await f.claim(claimName));
    // Whole seconds apart, as failProvisioning keeps them.
    await new Promise((r) => setTimeout(r, 1_100));
    await f.admin.create<Event>(Resources.events, provisioningFailed(f.ns, `${claimName}.exhausted.${n}`, claimReference(c), 'rpc error: code = ResourceExhausted desc = out of space'));
    await loopHasFailures(claimName, n);
  };

  /** Pod p of claims c1 and c2 (c2 made first), with c1 provisioned on node a and marked unused. */
  const podPinnedToA = async (): Promise<{ p: Pod; c1: PersistentVolumeClaim }> => {
    await f.admin.create(Resources.persistentVolumeClaims, claim(f.ns, 'c1', f.cls));
    const p = await f.admin.create<Pod>(Resources.pods, pod(f.ns, 'p', ['c1', 'c2']));
    await selectNode(f.admin, f.ns, 'c1', f.name('a'));
    const c1 = await f.provisionC1OnA(loop);
    await eventually(async () => expect(await f.usage()).to.equal('unused'));
    return { p, c1 };
  };

  // A claim keeps the failures of its earlier attempts, and their messages do not name the node: one
  // recorded on a copy of the claim from before its current selected node is not about it
  // (selection-versions.ts).
  it("a sibling selected for the pinned node again: an earlier attempt's ResourceExhausted does not roll back, one since does", async function () {
    await f.admin.create(Resources.persistentVolumeClaims, claim(f.ns, 'c2', f.cls));
    await selectNode(f.admin, f.ns, 'c2', f.name('b'));
    await exhausted('c2', 1);
    // The scheduler chose again (node a), before the pod that pins c1 there is provisioned.
    await selectNode(f.admin, f.ns, 'c2', f.name('a'));
    const { p, c1 } = await podPinnedToA();
    await queueIdle('rollback');
    expect((await f.claim('c1')).metadata?.uid, 'c2 is being provisioned on a: nothing rolled back').to.equal(c1.metadata?.uid);
    expect(await rollbacksOf(p)).to.equal(0);
    // It fails there (its selected node not yet removed): that is evidence.
    await exhausted('c2', 2);
    await rolledBack(p, 1);
  });

  /** The pod's nominated node, as kube-scheduler writes it before PreBind (KEP-5278), or none (a failed binding cycle clears it). */
  const nominate = (to: string | undefined): Promise<void> =>
    retryOnConflict(async () => {
      const live = await f.admin.get<Pod>(Resources.pods, 'p', f.ns);
      live.status = { ...live.status, nominatedNodeName: to };
      await f.admin.replaceStatus(Resources.pods, live);
    });
  /** c2 fails on node a (the pinned one) while the scheduler has the pod nominated there: the rollback is recorded, and c1's delete waits. */
  const failsWhileNominated = async (): Promise<{ p: Pod; c1: PersistentVolumeClaim }> => {
    await f.admin.create(Resources.persistentVolumeClaims, claim(f.ns, 'c2', f.cls));
    await selectNode(f.admin, f.ns, 'c2', f.name('a'));
    const pinned = await podPinnedToA();
    await nominate(f.name('a'));
    await exhausted('c2', 1);
    await eventually(async () => {
      const [r] = await recordsOf(f.admin, pinned.p.metadata!.uid!);
      expect(r?.status?.claims?.find((x) => x.name === 'c1')?.message ?? '', "the record says what c1's delete waits for").to.contain(`has nominated node ${f.name('a')}`);
    });
    expect((await f.claim('c1')).metadata?.uid, 'c1 kept while the pod is nominated').to.equal(pinned.c1.metadata?.uid);
    return pinned;
  };

  // The VolumeBinding plugin's PreBind polls its claims, so the nomination outlives the provisioner's
  // failure by up to a second, and the pod may still be bound (a failure is not known to be final).
  it("a sibling fails on the pinned node while the pod is nominated there: c1's delete waits for the nomination to clear (the binding failed), then goes on", async function () {
    const { p } = await failsWhileNominated();
    await nominate(undefined);
    await rolledBack(p, 1);
  });

  it('a sibling fails on the pinned node while the pod is nominated there, and the pod is bound there meanwhile: c1 is kept, the rollback aborted', async function () {
    const { p, c1 } = await failsWhileNominated();
    await bindPod(f.admin, f.ns, 'p', f.name('a'));
    await eventually(async () => expect((await recordsOf(f.admin, p.metadata!.uid!)).map((r) => r.status?.phase)).to.deep.equal(['Aborted']));
    expect((await f.claim('c1')).metadata?.uid).to.equal(c1.metadata?.uid);
  });

  // A recorder writes its Events asynchronously (client-go's broadcaster, retried), so node b's
  // failure can reach the API server after the provisioner gave the claim back and the scheduler
  // chose node a. It arrives after that selection; it was recorded on the copy that had node b.
  it("an earlier attempt's ResourceExhausted written only after the scheduler chose again does not roll back; one recorded since does", async function () {
    await f.admin.create(Resources.persistentVolumeClaims, claim(f.ns, 'c2', f.cls));
    await selectNode(f.admin, f.ns, 'c2', f.name('b'));
    const onB = await f.claim('c2');
    await selectNode(f.admin, f.ns, 'c2', null);
    await selectNode(f.admin, f.ns, 'c2', f.name('a'));
    const { p, c1 } = await podPinnedToA();
    await exhausted('c2', 1, onB);
    await queueIdle('rollback');
    expect((await f.claim('c1')).metadata?.uid, 'node b\'s failure, written late: nothing rolled back').to.equal(c1.metadata?.uid);
    expect(await rollbacksOf(p)).to.equal(0);
    await exhausted('c2', 2);
    await rolledBack(p, 1);
  });

  // A removed selected node is the provisioner's reschedule signal only for a claim of a
  // WaitForFirstConsumer class (stuck-evidence.ts): a class the loop sees after the failure makes it
  // evidence then, and nothing but the class watch says so.
  it("a failed claim's class seen only after its failure: the class watch brings the pod back, and it is rolled back", async function () {
    const late = `${f.ns}-late`;
    await f.admin.create(Resources.persistentVolumeClaims, claim(f.ns, 'c1', f.cls));
    await f.admin.create<Pod>(Resources.pods, pod(f.ns, 'p', ['c1', 'c2']));
    await selectNode(f.admin, f.ns, 'c1', f.name('a'));
    const c1 = await f.provisionC1OnA(loop);
    await eventually(async () => expect(await f.usage()).to.equal('unused'));
    // No other writer from here on: kube-controller-manager's binder would record its own
    // ProvisioningFailed for a claim whose class is missing, and each such Event queues the pod.
    await f.holdDeletedClaims();
    await f.admin.create(Resources.persistentVolumeClaims, claim(f.ns, 'c2', late));
    await failProvisioning(f.admin, f.ns, 'c2', `csinode.storage.k8s.io "${f.name('a')}" not found`);
    await loopHasFailures('c2', 1);
    await queueIdle('rollback');
    expect((await f.claim('c1')).metadata?.deletionTimestamp, 'no class, no reschedule signal').to.equal(undefined);
    try {
      await f.admin.create(Resources.storageClasses, { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: late }, provisioner: 'rollback.test.topovol.io', volumeBindingMode: 'WaitForFirstConsumer' } as never);
      // Its pvc-protection finalizer stays (kube-controller-manager stopped): deleted is rolled back.
      await eventually(async () => expect((await f.claim('c1')).metadata?.deletionTimestamp).to.not.equal(undefined), 30_000);
      expect((await f.claim('c1')).metadata?.uid).to.equal(c1.metadata?.uid);
    } finally {
      await f.admin.delete(Resources.storageClasses, late).catch(() => undefined);
    }
  });

  it('rolls back the claim of a generic ephemeral volume, and re-creates it owned by its pod', async function () {
    const p = await f.admin.create<Pod>(Resources.pods, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'p', namespace: f.ns },
      spec: {
        schedulerName: 'nobody',
        containers: [{ name: 'c', image: 'busybox' }],
        volumes: [
          { name: 'scratch', ephemeral: { volumeClaimTemplate: { spec: { accessModes: ['ReadWriteOnce'], storageClassName: f.cls, resources: { requests: { storage: '1Gi' } } } } } },
          { name: 'c2', persistentVolumeClaim: { claimName: 'c2' } },
        ],
      },
    });
    // What the ephemeral volume controller creates: <pod>-<volume>, owned by the pod.
    const owned = { apiVersion: 'v1', kind: 'Pod', name: 'p', uid: p.metadata!.uid!, controller: true, blockOwnerDeletion: true };
    await f.admin.create(Resources.persistentVolumeClaims, { apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name: 'p-scratch', namespace: f.ns, ownerReferences: [owned] }, spec: { accessModes: ['ReadWriteOnce'], storageClassName: f.cls, resources: { requests: { storage: '1Gi' } } } });
    await f.admin.create(Resources.persistentVolumeClaims, { apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name: 'c2', namespace: f.ns }, spec: { accessModes: ['ReadWriteOnce'], storageClassName: f.cls, resources: { requests: { storage: '1Gi' } } } });
    for (const c of ['p-scratch', 'c2']) await selectNode(f.admin, f.ns, c, f.name('a'));
    const old = await f.provisionC1OnA(loop, { claimName: 'p-scratch' });
    await eventually(async () => expect(await f.usage()).to.equal('unused'));
    await failProvisioning(f.admin, f.ns, 'c2', 'rpc error: code = ResourceExhausted desc = node a is full');
    const back = await eventually(async () => {
      const c = await f.claim('p-scratch');
      expect(c.metadata?.uid).to.not.equal(old.metadata?.uid);
      return c;
    }, 60_000);
    expect(back.metadata?.ownerReferences).to.deep.equal([owned]);
  });

  /** Pod p with claims c1 and c2, c1 provisioned on node a (volume v1) and marked unused: a rollback waits for c2's failure. */
  async function provisionedUnused(): Promise<{ p: Pod; c1: PersistentVolumeClaim }> {
    const p = await f.podWithClaims('p');
    const c1 = await f.provisionC1OnA(loop);
    await eventually(async () => expect(await f.usage()).to.equal('unused'));
    return { p, c1 };
  }

  /** Claim c1 is the one decided on, not deleted, and carries the rollback's fence. */
  async function keptAndFenced(c1: PersistentVolumeClaim): Promise<void> {
    const now = await f.claim('c1');
    expect([now.metadata?.uid, now.metadata?.deletionTimestamp]).to.deep.equal([c1.metadata?.uid, undefined]);
    expect(now.metadata?.annotations?.['rollback.topovol.io/kept-by'], 'fenced').to.be.a('string');
  }

  /**
   * From now on the test namespace refuses new claims (a ValidatingAdmissionPolicy), as a webhook or
   * a quota can, or with `DELETE` the deletes of claims, as a policy guarding them would; returns the
   * function that lifts it. Waits until a claim is really refused. Dry runs pass: a refused create
   * comes after the rollback's check that its claims can be created again (a policy or webhook
   * added in between, a quota another claim filled), which a refused dry run would answer by
   * refusing the rollback instead (rollback.test.ts).
   */
  async function refuseClaims(operation: 'CREATE' | 'DELETE' | 'UPDATE,DELETE' = 'CREATE'): Promise<() => Promise<void>> {
    const policy = `${f.ns}-refuse-claims`;
    // Of a class nothing offers, so that no binder in the shared control plane (other files run
    // managers that bind cluster-wide) gives it a volume another test created for its own claim.
    const probe = { apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name: 'probe', namespace: f.ns }, spec: { accessModes: ['ReadWriteOnce'], storageClassName: `${f.ns}-probe-none`, resources: { requests: { storage: '1Gi' } } } } as KubeObject;
    if (operation !== 'CREATE') await f.admin.create(Resources.persistentVolumeClaims, probe);
    // UPDATE,DELETE refuses deletes and the rollback's fence (its kept-by annotation), not the
    // test's own claim patches (failProvisioning's, of another claim).
    const fence = "request.operation == 'UPDATE' && !(has(object.metadata.annotations) && 'rollback.topovol.io/kept-by' in object.metadata.annotations)";
    const validation = operation === 'CREATE' ? { expression: 'has(request.dryRun) && request.dryRun', message: 'this namespace takes no new claims for now' } : { expression: operation === 'DELETE' ? 'false' : fence, message: 'claims here are kept' };
    const liftPolicy = await denyingPolicy(f.admin, policy, { rule: { operations: operation.split(','), resources: ['persistentvolumeclaims'] }, validation, matchResources: { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': f.ns } } } });
    // Lifted, the probe goes too (its pvc-protection finalizer with it: no controller here lifts it).
    // A policy leaves as it comes, within a second or so: its delete is refused until then, so it is
    // tried until it goes (stopTest's delete, right after, would be refused and leave it Pending),
    // and the caller goes on once the policy is out of force.
    const lift = async (): Promise<void> => {
      await liftPolicy();
      if (operation === 'CREATE') return;
      await eventually(() =>
        f.admin.delete(Resources.persistentVolumeClaims, 'probe', f.ns).catch((err: unknown) => {
          if (!isNotFound(err)) throw err;
        }),
      );
      await f.admin.patch(Resources.persistentVolumeClaims, 'probe', f.ns, 'merge', { metadata: { finalizers: null } }).catch(() => undefined);
    };
    // Policies take effect within a second or so; refused with the policy's own message, not any error.
    try {
      if (operation !== 'CREATE') await untilRefused(() => f.admin.delete(Resources.persistentVolumeClaims, 'probe', f.ns, { dryRun: true }), validation.message, 'claim deletes refused');
      // A name of its own each time: a probe let through and not deleted yet cannot fail the next.
      else await untilRefused(async () => {
        const made = await f.admin.create<KubeObject>(Resources.persistentVolumeClaims, { ...probe, metadata: { generateName: 'probe-', namespace: f.ns } });
        await f.admin.delete(Resources.persistentVolumeClaims, made.metadata!.name!, f.ns).catch(() => undefined);
      }, validation.message, 'new claims refused');
    } catch (err) {
      await lift();
      throw err;
    }
    return lift;
  }

  /**
   * From now on the API server refuses to change volume v1's reclaim policy from `from` to `to`, as
   * a policy guarding volumes could; returns what lifts it. Waits until a probe volume's change is
   * really refused.
   */
  async function refuseReclaimChange(from: 'Delete' | 'Retain', to: 'Delete' | 'Retain'): Promise<() => Promise<void>> {
    const probe = f.name('probe');
    await f.admin.create<KubeObject>(Resources.persistentVolumes, {
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: { name: probe },
      // Of a class no claim asks for: no binder in the shared control plane gives it to a claim.
      spec: { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], storageClassName: `${f.ns}-probe-none`, persistentVolumeReclaimPolicy: from, csi: { driver: 'rollback.test.topovol.io', volumeHandle: probe } },
    } as KubeObject);
    const names = JSON.stringify([f.name('v1'), probe]);
    const expression = `!(object.metadata.name in ${names}) || !(oldObject.spec.persistentVolumeReclaimPolicy == '${from}' && object.spec.persistentVolumeReclaimPolicy == '${to}')`;
    const message = `volumes here stay ${from}`;
    const lift = await denyingPolicy(f.admin, `${f.ns}-guard-volumes`, { rule: { operations: ['UPDATE'], resources: ['persistentvolumes'] }, validation: { expression, message } });
    const liftAll = async (): Promise<void> => {
      await lift();
      await f.admin.delete(Resources.persistentVolumes, probe).catch(() => undefined);
    };
    try {
      await untilRefused(() => f.admin.patch(Resources.persistentVolumes, probe, undefined, 'merge', { spec: { persistentVolumeReclaimPolicy: to } }, { dryRun: true }), message, 'reclaim policy changes refused');
    } catch (err) {
      await liftAll();
      throw err;
    }
    return liftAll;
  }

  it("the volume's hold refused (a policy guarding volumes): nothing deleted, the claim kept and fenced, the volume untouched, the rollback aborted with the server's reason", async function () {
    const { p, c1 } = await provisionedUnused();
    const lift = await refuseReclaimChange('Delete', 'Retain');
    try {
      await failProvisioning(f.admin, f.ns, 'c2', 'rpc error: code = ResourceExhausted desc = node a is full');
      const done = await eventually(async () => {
        const [r] = await recordsOf(f.admin, p.metadata!.uid!);
        expect(r!.status?.phase).to.equal('Aborted');
        return r!;
      }, 60_000);
      const kept = done.status?.claims?.find((c) => c.name === 'c1');
      expect(kept?.state).to.equal('Kept');
      expect(kept?.message).to.match(/the API server refused holding volume .*-v1 Retain across the claim's delete: .*volumes here stay Delete/);
      await keptAndFenced(c1);
      const v = await f.volume('v1');
      expect([v.spec?.persistentVolumeReclaimPolicy, v.metadata?.annotations?.['rollback.topovol.io/reclaim-policy-held']]).to.deep.equal(['Delete', undefined]);
      const aborted = await eventFor(f.admin, p, 'ProvisioningRollbackAborted');
      expect({ type: aborted.type, says: /volumes here stay Delete/.test(aborted.message ?? '') }, 'a refusal is a Warning').to.deep.equal({ type: 'Warning', says: true });
    } finally {
      await lift();
    }
  });

  it("the volume's Delete refused when given back: the claim is re-created all the same, the volume left Retain with the server's reason and a Warning", async function () {
    const { p, c1 } = await provisionedUnused();
    const lift = await refuseReclaimChange('Retain', 'Delete');
    try {
      await failProvisioning(f.admin, f.ns, 'c2', 'rpc error: code = ResourceExhausted desc = node a is full');
      await rolledBack(p, 1);
      expect((await f.claim('c1')).metadata?.uid).to.not.equal(c1.metadata?.uid);
      const v = await f.volume('v1');
      expect(v.spec?.persistentVolumeReclaimPolicy).to.equal('Retain');
      expect(v.metadata?.annotations?.['rollback.topovol.io/reclaim-policy-held']).to.equal(undefined);
      expect(v.metadata?.annotations?.['rollback.topovol.io/retained-because']).to.match(/the API server refused giving its reclaim policy Delete back: .*volumes here stay Retain/);
      const warning = await eventFor(f.admin, v, 'ProvisioningRollbackVolumeRetained');
      expect([warning.type, warning.message]).to.satisfy(([type, message]: [string, string]) => type === 'Warning' && /volumes here stay Retain; no pod used it since the hold: give it its Delete back/.test(message));
    } finally {
      await lift();
    }
  });

  /** Pod p's c1 rolled back up to its delete: the re-create is refused, counted as an error, and the record says Deleted. */
  async function deletedNotRecreated(): Promise<{ p: Pod; c1: PersistentVolumeClaim; lift: () => Promise<void> }> {
    const errors = await counter('error');
    const { p, c1 } = await provisionedUnused();
    const lift = await refuseClaims();
    await failProvisioning(f.admin, f.ns, 'c2', 'rpc error: code = ResourceExhausted desc = node a is full');
    await eventually(async () => {
      expect(await counter('error')).to.be.greaterThan(errors);
      const [r] = await recordsOf(f.admin, p.metadata!.uid!);
      expect(r?.status?.claims?.find((c) => c.name === 'c1')?.state).to.equal('Deleted');
    }, 60_000);
    // Said where the claim's owner looks: on the pod, with the API server's reason.
    expect((await eventFor(f.admin, p, 'ClaimRecreateFailed')).message).to.match(/could not create claim c1 again; retrying: .*this namespace takes no new claims for now/);
    return { p, c1, lift };
  }

  /**
   * Long enough for the refused re-create's own next try (RECREATE_RETRY_MS after the last refusal,
   * which may come just before the test's change: nothing the test does wakes the loop earlier),
   * with a margin for the work after it.
   */
  const NEXT_RECREATE_TRY_MS = RECREATE_RETRY_MS + 60_000;

  it('a re-create that fails counts as an error (the alert\'s metric) and is retried until the claim is back', async function () {
    this.timeout(NEXT_RECREATE_TRY_MS + 120_000);
    const { c1, lift } = await deletedNotRecreated();
    await lift();
    await eventually(async () => expect((await f.claim('c1')).metadata?.uid).to.not.equal(c1.metadata?.uid), NEXT_RECREATE_TRY_MS);
  });

  it("a claim delete the API server refuses (a policy guarding claims): nothing deleted, the claim kept and fenced, its volume's Delete given back, the rollback aborted with the server's reason", async function () {
    const { p, c1 } = await provisionedUnused();
    const lift = await refuseClaims('DELETE');
    try {
      await failProvisioning(f.admin, f.ns, 'c2', 'rpc error: code = ResourceExhausted desc = node a is full');
      const done = await eventually(async () => {
        const [r] = await recordsOf(f.admin, p.metadata!.uid!);
        expect(r!.status?.phase).to.equal('Aborted');
        return r!;
      }, 60_000);
      const kept = done.status?.claims?.find((c) => c.name === 'c1');
      expect(kept?.state).to.equal('Kept');
      expect(kept?.message).to.match(/the API server refused the claim's delete: .*claims here are kept/);
      await keptAndFenced(c1);
      expect((await f.volume('v1')).spec?.persistentVolumeReclaimPolicy, "the volume's Delete given back").to.equal('Delete');
      const aborted = await eventFor(f.admin, p, 'ProvisioningRollbackAborted');
      expect({ type: aborted.type, says: /claims here are kept/.test(aborted.message ?? '') }, 'a refusal is a Warning').to.deep.equal({ type: 'Warning', says: true });
    } finally {
      await lift();
    }
  });

  it('a claim delete and the fence that would keep the claim both refused: nothing deleted, a Warning on the pod saying why, and the rollback goes on once the policy is lifted', async function () {
    this.timeout(NEXT_RECREATE_TRY_MS + 180_000);
    const { p, c1 } = await provisionedUnused();
    const lift = await refuseClaims('UPDATE,DELETE');
    let lifted = false;
    try {
      await failProvisioning(f.admin, f.ns, 'c2', 'rpc error: code = ResourceExhausted desc = node a is full');
      expect((await eventFor(f.admin, p, 'ProvisioningRollbackWriteRefused')).message).to.match(/provisioning rollback .* cannot go on: the API server refused one of its requests; trying again: .*claims here are kept/);
      const [r] = await recordsOf(f.admin, p.metadata!.uid!);
      expect(r!.status?.claims?.find((c) => c.name === 'c1')?.state, 'a delete of ours may still land: not recorded Kept').to.equal('Deleting');
      const now = await f.claim('c1');
      expect([now.metadata?.uid, now.metadata?.deletionTimestamp]).to.deep.equal([c1.metadata?.uid, undefined]);
      await lift();
      lifted = true;
      // Tried again a minute after the refusal: the delete goes through, and the claim is re-created.
      await eventually(async () => expect((await recordsOf(f.admin, p.metadata!.uid!)).map((x) => x.status?.phase)).to.deep.equal(['Completed']), NEXT_RECREATE_TRY_MS + 30_000);
      expect((await f.claim('c1')).metadata?.uid).to.not.equal(c1.metadata?.uid);
    } finally {
      if (!lifted) await lift();
    }
  });

  // A namespace deleted and made again under its name while the re-create was refused (namespaces
  // named after a branch or a job are) is someone else's: the record has the old one's uid. The loop
  // is stopped meanwhile, so that it does not see the old one terminating.
  it('the namespace deleted and made again under its name before the re-create: nothing is created in the new one, the claim Abandoned', async function () {
    const { p, lift } = await deletedNotRecreated();
    const oldUid = (await f.admin.get<KubeObject>(Resources.namespaces, f.ns)).metadata!.uid!;
    let newUid = '';
    await loop.stop();
    try {
      // As the namespace controller would: its contents go, then the namespace (no such controller runs here).
      await f.admin.delete(Resources.pods, 'p', f.ns, { gracePeriodSeconds: 0 });
      for (const c of (await f.admin.list<PersistentVolumeClaim>(Resources.persistentVolumeClaims, { namespace: f.ns })).items) await deleteNow(f.admin, Resources.persistentVolumeClaims, c.metadata!.name!, f.ns, { quiet: true });
      await f.admin.delete(Resources.namespaces, f.ns);
      const terminating = await f.admin.get<KubeObject>(Resources.namespaces, f.ns);
      await f.admin.request('PUT', `/api/v1/namespaces/${f.ns}/finalize`, { body: { ...terminating, spec: { finalizers: [] } } });
      await eventually(async () => expect(await f.admin.get<KubeObject>(Resources.namespaces, f.ns).then(() => 'present', () => 'gone')).to.equal('gone'));
      await lift();
      newUid = (await f.admin.create<KubeObject>(Resources.namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: f.ns } })).metadata!.uid!;
    } finally {
      loop = await RunningRollback.start(['--rollback-backoff=1s']);
    }
    const done = await eventually(async () => {
      const [r] = await recordsOf(f.admin, p.metadata!.uid!);
      expect(r!.status?.phase).to.equal('Aborted');
      return r!;
    }, 60_000);
    expect(done.status?.claims?.find((c) => c.name === 'c1')).to.include({
      state: 'Abandoned',
      message: `namespace ${f.ns} was deleted and made again since the rollback began: the claim was the deleted namespace's (uid ${oldUid} then, ${newUid} now)`,
    });
    expect(await f.claim('c1').then(() => 'created', () => 'absent'), 'nothing created in the new namespace').to.equal('absent');
  });

  // A namespace deleted in the middle of a rollback (its pods and claims go with it): the claim is
  // not re-created, and the record finishes rather than retrying until a namespace of the same name,
  // perhaps another tenant's, appears and gets the old tenant's claim.
  it('the namespace deleted after a claim was deleted: the record ends Aborted, the claim Abandoned, no retry', async function () {
    this.timeout(NEXT_RECREATE_TRY_MS + 120_000);
    const { p, lift } = await deletedNotRecreated();
    try {
      await f.admin.delete(Resources.namespaces, f.ns);
      const done = await eventually(async () => {
        const [r] = await recordsOf(f.admin, p.metadata!.uid!);
        expect(r!.status?.phase).to.equal('Aborted');
        return r!;
      }, NEXT_RECREATE_TRY_MS);
      expect(done.status?.claims?.find((c) => c.name === 'c1')).to.include({ state: 'Abandoned', message: `namespace ${f.ns} is being deleted` });
      expect(done.status?.message).to.equal(`claim(s) c1 not re-created: namespace ${f.ns} was deleted`);
    } finally {
      await lift();
    }
  });
});

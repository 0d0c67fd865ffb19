import { expect } from 'chai';
import { KubeApiError, logger } from '@topovol/shared';
import type { PersistentVolumeClaim, Pod } from '@topovol/shared';
import type { RollbackDecision } from '../../src/rollback/decide-rollback.js';
import { NODE_STATE_DWELL_MS } from '../../src/rollback/decide-rollback.js';
import { CLAIM_CHANGED_RETRY_MS, REFUSED_WRITE_RETRY_MS, RollbackReconciler } from '../../src/rollback/reconcile-rollback.js';
import type { RollbackGlueDeps } from '../../src/rollback/reconcile-rollback.js';
import { templatesTooLarge } from '../../src/rollback/intent/new-rollback.js';
import { claim, iso, node, NOW, pod, pv, seen, world } from './rollback-world-fixture.js';
import type { W } from './rollback-world-fixture.js';

// A rollback is recorded with the uid of its pod's namespace, read from the server, and only while
// the server still has the pod (read after the namespace): a cached pod whose namespace was deleted
// and made again is not rolled back into the new one.
describe('RollbackReconciler: the namespace a rollback is recorded in', function () {
  const P: Pod = pod('p', ['c1']);
  // Node a refuses the pod; its one claim's volume there is unused, and this process saw it provisioned.
  const w: W = { pvs: [pv('v1', 'c1', { usage: 'unused', forNode: 'a' })], claims: [claim('c1', { volume: 'v1' })], nodes: [node('a', { unschedulable: true }), node('b')], pods: [P], observed: { 'uid-c1': seen() } };

  /** `claims`: the claims as the server has them, by name (the cached ones when not given). */
  type Server = { namespace?: { uid: string; created: number; deleting?: boolean }; podExists: boolean; nominated?: string; bound?: string; fail?: Error; afterRead?: () => void; claims?: Record<string, PersistentVolumeClaim | undefined>; refusesCopy?: string; refusesRecord?: string; admits?: string[] };
  function reconciler(server: Server, dryRun = false, at: W = w, now: { t: number } = { t: NOW }) {
    const decided: { kind: string; namespaceUID?: string; pinned?: PersistentVolumeClaim[]; why?: string }[] = [];
    const reads: string[] = [];
    let dwelling = false;
    const deps = {
      world: { ...world(at), now: () => now.t },
      pod: () => at.pods![0],
      record: () => undefined,
      actuator: {
        decide: (_p: Pod, d: RollbackDecision, namespaceUID?: string) => {
          dwelling = d.kind === 'wait' && d.dwelling === true;
          decided.push({ kind: d.kind, namespaceUID, ...(d.kind === 'rollback' && server.claims ? { pinned: d.pinned.map((p) => p.claim) } : {}), ...(d.kind === 'refuse' ? { why: d.why } : {}) });
          if (d.kind === 'rollback' && server.refusesRecord) return Promise.reject(KubeApiError.fromResponse(403, JSON.stringify({ kind: 'Status', status: 'Failure', code: 403, reason: 'Forbidden', message: server.refusesRecord })));
          return Promise.resolve();
        },
        reportWriteRefused: (p: Pod, rollback: string | undefined, err: Error) => void decided.push({ kind: `write refused on ${p.metadata?.name}${rollback ? ` (${rollback})` : ''}`, why: err.message }),
        // Under --dry-run, a rollback decision the fake was handed counts as reported.
        reportedDryRun: () => decided.some((d) => d.kind === 'rollback'),
      },
      reads: {
        namespace: (ns: string) => {
          reads.push(`namespace ${ns}`);
          if (server.fail) return Promise.reject(server.fail);
          const answer = server.namespace;
          server.afterRead?.();
          return Promise.resolve(answer);
        },
        livePod: (ns: string, name: string, uid: string) => {
          reads.push(`pod ${ns}/${name} ${uid}`);
          const cached = at.pods![0]!;
          const answer = server.podExists ? { ...cached, spec: { ...cached.spec, nodeName: server.bound }, status: { ...cached.status, ...(server.nominated ? { nominatedNodeName: server.nominated } : {}) } } : undefined;
          server.afterRead?.();
          return Promise.resolve(answer);
        },
        claim: (ns: string, name: string) => {
          reads.push(`claim ${ns}/${name}`);
          return Promise.resolve(server.claims ? server.claims[name] : world(at).claim(ns, name));
        },
        recreateCheck: (c: PersistentVolumeClaim) => {
          reads.push(`dry run ${c.metadata?.name}`);
          return Promise.resolve(server.refusesCopy ? { refused: server.refusesCopy, finalizers: [] } : { finalizers: ['kubernetes.io/pvc-protection', ...(server.admits ?? [])] });
        },
      },
      log: logger(),
      dryRun,
      historyTtlMs: 0,
      observe: () => undefined,
      enqueueRecord: () => undefined,
    } as unknown as RollbackGlueDeps;
    const r = new RollbackReconciler(deps);
    // Node a's state alone rolls back once the pod has been seen ready for NODE_STATE_DWELL_MS
    // (decide-rollback.ts): a look that would wait for it is looked again past it, as the loop's
    // next look would (the dwell itself: decide-rollback.test.ts, rollback-glue-edges.test.ts).
    const look = r.pod.bind(r);
    r.pod = async (ns: string, name: string) => {
      const ms = await look(ns, name);
      if (!dwelling) return ms;
      decided.pop();
      now.t += NODE_STATE_DWELL_MS;
      return look(ns, name);
    };
    return { r, decided, reads };
  }

  it("a claim whose copy the server would refuse (the dry run before anything is recorded): refused with the server's reason, nothing recorded", async function () {
    const { r, decided, reads } = reconciler({ namespace: { uid: 'ns-uid', created: 0 }, podExists: true, refusesCopy: "cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't set finalizers on" });
    await r.pod('ns', 'p');
    expect(decided).to.have.length(1);
    expect(decided[0]!.kind).to.equal('refuse');
    expect(decided[0]!.why).to.match(/^claim c1 could not be created again once deleted: the API server refuses its copy \(dry run\): cannot set blockOwnerDeletion/);
    expect(reads).to.include('dry run c1');
  });

  it("the record's create refused (a policy on the records, a narrowed role): said on the pod, looked at again in a minute, not after a doubling backoff", async function () {
    const { r, decided } = reconciler({ namespace: { uid: 'ns-uid', created: 0 }, podExists: true, refusesRecord: 'provisioningrollbacks.topovol.io is forbidden: no records here' });
    expect(await r.pod('ns', 'p')).to.equal(REFUSED_WRITE_RETRY_MS);
    expect(decided).to.deep.equal([{ kind: 'rollback', namespaceUID: 'ns-uid' }, { kind: 'write refused on p', why: 'provisioningrollbacks.topovol.io is forbidden: no records here' }]);
  });

  it('records the namespace uid the server has', async function () {
    const { r, decided } = reconciler({ namespace: { uid: 'ns-uid', created: 0 }, podExists: true });
    await r.pod('ns', 'p');
    expect(decided).to.deep.equal([{ kind: 'rollback', namespaceUID: 'ns-uid' }]);
  });

  it('the namespace deleted and made again between its reads (its pods gone with it): never recorded with the new one\'s uid', async function () {
    const server: Server = { namespace: { uid: 'ns-uid', created: 0 }, podExists: true };
    // After the first read from the server, whichever it is, the namespace is replaced.
    server.afterRead = () => {
      Object.assign(server, { namespace: { uid: 'ns-uid-2', created: 1 }, podExists: false, afterRead: undefined });
    };
    const { r, decided } = reconciler(server);
    await r.pod('ns', 'p');
    expect(decided.filter((d) => d.namespaceUID === 'ns-uid-2')).to.deep.equal([]);
  });

  for (const [what, server] of [
    ['the server no longer has the pod (the cache lags its delete, or its namespace was made again)', { namespace: { uid: 'ns-uid-2', created: 0 }, podExists: false }],
    ['the namespace is gone', { namespace: undefined, podExists: false }],
    ['the namespace is being deleted (its claims go with it)', { namespace: { uid: 'ns-uid', created: 0, deleting: true }, podExists: true }],
  ] as const) {
    it(`records nothing when ${what}`, async function () {
      const { r, decided } = reconciler(server);
      await r.pod('ns', 'p');
      expect(decided).to.deep.equal([]);
    });
  }

  it('a namespace read that fails is retried with the grace already spent, not a new one', async function () {
    // Claim c2 is undecided (its node selected, nothing heard from the provisioner): the rollback
    // waits the grace (60 s) from when the pod was first seen so.
    const waiting: W = { ...w, pods: [pod('p', ['c1', 'c2'])], claims: [...w.claims!, claim('c2', { selected: 'b' })] };
    const now = { t: NOW };
    const server: Server = { namespace: { uid: 'ns-uid', created: 0 }, podExists: true, fail: new KubeApiError(503, { message: 'etcd leader changed' }) };
    const { r, decided } = reconciler(server, false, waiting, now);
    expect(await r.pod('ns', 'p'), 'the grace').to.equal(60_000);
    now.t += 60_001;
    expect(await r.pod('ns', 'p').then(() => 'done', (e: unknown) => e), 'the read failed: retried').to.equal(server.fail);
    server.fail = undefined;
    await r.pod('ns', 'p');
    expect(decided, 'the first look waited; the retry after the failed read rolls back').to.deep.equal([{ kind: 'wait', namespaceUID: undefined }, { kind: 'rollback', namespaceUID: 'ns-uid' }]);
  });

  // The claim cache holds a projection (projectClaim: no labels, owners or other annotations), so
  // the record's templates come from the claims as the server has them, at the version decided on.
  it('records the claims as the server has them, labels and owners included, not as cached', async function () {
    const cached = world(w).claim('ns', 'c1')!;
    const live: PersistentVolumeClaim = { ...cached, metadata: { ...cached.metadata, labels: { app: 'db' }, ownerReferences: [{ apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'db', uid: 'sts-uid', controller: true }] } };
    const { r, decided } = reconciler({ namespace: { uid: 'ns-uid', created: 0 }, podExists: true, claims: { c1: live } });
    await r.pod('ns', 'p');
    expect(decided).to.deep.equal([{ kind: 'rollback', namespaceUID: 'ns-uid', pinned: [live] }]);
  });

  it('a claim written since in what the cache does not keep (labels): recorded, with the live resourceVersion and template', async function () {
    const cached = world(w).claim('ns', 'c1')!;
    const live: PersistentVolumeClaim = { ...cached, metadata: { ...cached.metadata, resourceVersion: '99', labels: { rewritten: 'by-gitops' } } };
    const { r, decided } = reconciler({ namespace: { uid: 'ns-uid', created: 0 }, podExists: true, claims: { c1: live } });
    await r.pod('ns', 'p');
    expect(decided).to.deep.equal([{ kind: 'rollback', namespaceUID: 'ns-uid', pinned: [live] }]);
  });

  // A claim's labels are bounded only by the object's size in etcd: copied whole into a record
  // (several claims' at once) they could make one that cannot be stored, or whose status writes fail
  // after its claims were deleted.
  it('claims whose labels and annotations would make the record too large: refused, nothing recorded', async function () {
    const cached = world(w).claim('ns', 'c1')!;
    const labels = Object.fromEntries(Array.from({ length: 9_000 }, (_, i) => [`k${i}.example.com/x`, 'v'.repeat(63)]));
    const live: PersistentVolumeClaim = { ...cached, metadata: { ...cached.metadata, labels } };
    expect(templatesTooLarge([{ claim: live, volume: {}, node: 'a' }])).to.match(/more than the 262144 a ProvisioningRollback keeps/);
    const { r, decided, reads } = reconciler({ namespace: { uid: 'ns-uid', created: 0 }, podExists: true, claims: { c1: live } });
    await r.pod('ns', 'p');
    expect(decided.map((d) => [d.kind, d.namespaceUID])).to.deep.equal([['refuse', 'ns-uid']]);
    expect(decided[0]!.why).to.match(/more than the 262144/);
    expect(reads, 'refused before any dry run').to.not.include('dry run c1');
  });

  // A backup or protection operator's hold on the claim: deleted, the claim would wait for that
  // operator with its pod unschedulable; re-created, it would not carry the finalizer.
  it("a claim with someone else's finalizer (the cache does not keep finalizers: read live), one its copy does not get: refused, nothing recorded or deleted", async function () {
    const cached = world(w).claim('ns', 'c1')!;
    const held: PersistentVolumeClaim = { ...cached, metadata: { ...cached.metadata, finalizers: ['kubernetes.io/pvc-protection', 'backup.example.com/hold'] } };
    const { r, decided, reads } = reconciler({ namespace: { uid: 'ns-uid', created: 0 }, podExists: true, claims: { c1: held } });
    await r.pod('ns', 'p');
    expect(decided.map((d) => [d.kind, d.namespaceUID])).to.deep.equal([['refuse', 'ns-uid']]);
    expect(decided[0]!.why).to.equal('claim c1 carries finalizer(s) backup.example.com/hold, which a re-created claim would not have');
    expect(reads, "the copy's finalizers asked of the server").to.include('dry run c1');
  });

  // A driver's mutating webhook that adds its finalizer to every claim of its classes (TopoLVM's pvc
  // hook adds topolvm.io/pvc): the re-created claim gets it back, so it is no one's hold on this one.
  it('a finalizer admission gives every copy of the claim (the dry run answers with it): rolled back', async function () {
    const cached = world(w).claim('ns', 'c1')!;
    const held: PersistentVolumeClaim = { ...cached, metadata: { ...cached.metadata, finalizers: ['kubernetes.io/pvc-protection', 'topolvm.io/pvc'] } };
    const { r, decided } = reconciler({ namespace: { uid: 'ns-uid', created: 0 }, podExists: true, claims: { c1: held }, admits: ['topolvm.io/pvc'] });
    await r.pod('ns', 'p');
    expect(decided.map((d) => d.kind)).to.deep.equal(['rollback']);
  });

  it('a claim with only the protection finalizer is rolled back', async function () {
    const cached = world(w).claim('ns', 'c1')!;
    const held: PersistentVolumeClaim = { ...cached, metadata: { ...cached.metadata, finalizers: ['kubernetes.io/pvc-protection'] } };
    const { r, decided } = reconciler({ namespace: { uid: 'ns-uid', created: 0 }, podExists: true, claims: { c1: held } });
    await r.pod('ns', 'p');
    expect(decided.map((d) => d.kind)).to.deep.equal(['rollback']);
  });

  for (const [what, change] of [
    ['changed in what the decision read (a newer version with a selected node)', (c: PersistentVolumeClaim) => ({ ...c, metadata: { ...c.metadata, resourceVersion: '99', annotations: { ...c.metadata?.annotations, 'volume.kubernetes.io/selected-node': 'b' } } })],
    ['re-created (another uid)', (c: PersistentVolumeClaim) => ({ ...c, metadata: { ...c.metadata, uid: 'uid-c1-new' } })],
    ['gone', () => undefined],
  ] as const) {
    it(`a claim the server has ${what}: nothing recorded yet, looked at again soon with the grace kept`, async function () {
      // Claim c2 is undecided at first (its node selected, nothing heard from the provisioner):
      // the rollback waits the grace (60 s) from when the pod was first seen so.
      const waiting: W = { ...w, pods: [pod('p', ['c1', 'c2'])], claims: [...w.claims!, claim('c2', { selected: 'b' })] };
      const cached = world(waiting).claim('ns', 'c1')!;
      const c2 = world(waiting).claim('ns', 'c2')!;
      const now = { t: NOW };
      const server: Server = { namespace: { uid: 'ns-uid', created: 0 }, podExists: true, claims: { c1: change(cached), c2 } };
      const { r, decided } = reconciler(server, false, waiting, now);
      expect(await r.pod('ns', 'p'), 'the grace').to.equal(60_000);
      now.t += 60_001;
      expect(await r.pod('ns', 'p')).to.equal(CLAIM_CHANGED_RETRY_MS);
      expect(decided.filter((d) => d.kind === 'rollback')).to.deep.equal([]);
      // The server is back at the decided version: recorded at once, the grace not begun again.
      server.claims = { c1: cached, c2 };
      await r.pod('ns', 'p');
      expect(decided.filter((d) => d.kind === 'rollback').map((d) => d.pinned?.find((c) => c.metadata?.name === 'c1'))).to.deep.equal([cached]);
    });
  }

  // kube-scheduler nominates the node it binds the pod to as its binding cycle begins (KEP-5278); the
  // cache that decided may not show that yet, while its Unschedulable condition is stale.
  const reported: Pod = { ...P, status: { phase: 'Pending', conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable', lastTransitionTime: iso(NOW - 5_000), message: "0/2 nodes are available: 2 node(s) didn't match PersistentVolume's node affinity." }] } };
  const onReport: W = { ...w, nodes: [node('a'), node('b')], pods: [reported] };

  it("the server's pod nominated since the cache showed it, on the scheduler's condition alone: nothing recorded", async function () {
    const { r, decided, reads } = reconciler({ namespace: { uid: 'ns-uid', created: 0 }, podExists: true, nominated: 'a' }, false, onReport);
    await r.pod('ns', 'p');
    expect(reads).to.include('pod ns/p uid-p');
    expect(decided).to.deep.equal([]);
    // Not nominated: recorded, on the same cache.
    const again = reconciler({ namespace: { uid: 'ns-uid', created: 0 }, podExists: true }, false, onReport);
    await again.r.pod('ns', 'p');
    expect(again.decided.map((d) => d.kind)).to.deep.equal(['rollback']);
  });

  // The API server clears the nomination at the binding: a pod bound since shows none.
  it("the server's pod bound since the cache showed it unscheduled: nothing recorded", async function () {
    for (const at of [onReport, w]) {
      const { r, decided } = reconciler({ namespace: { uid: 'ns-uid', created: 0 }, podExists: true, bound: 'a' }, false, at);
      await r.pod('ns', 'p');
      expect(decided).to.deep.equal([]);
    }
  });

  it("the server's pod nominated, with the node's own state as evidence: recorded all the same", async function () {
    const { r, decided } = reconciler({ namespace: { uid: 'ns-uid', created: 0 }, podExists: true, nominated: 'a' });
    await r.pod('ns', 'p');
    expect(decided.map((d) => d.kind)).to.deep.equal(['rollback']);
  });

  // A dry run previews what a real run would do: the same reads, and the copy's server-side dry run.
  it('--dry-run makes the same checks: the server refusing a copy is reported refused, not as a rollback', async function () {
    const { r, decided, reads } = reconciler({ namespace: { uid: 'ns-uid', created: 0 }, podExists: true, refusesCopy: 'denied by a policy' }, true);
    await r.pod('ns', 'p');
    expect(decided.map((d) => d.kind)).to.deep.equal(['refuse']);
    expect(reads).to.include('dry run c1');
  });

  it('--dry-run: a pod the server no longer has is not reported; a decision reported already is not checked again', async function () {
    const gone = reconciler({ namespace: { uid: 'ns-uid', created: 0 }, podExists: false }, true);
    await gone.r.pod('ns', 'p');
    expect(gone.decided).to.deep.equal([]);
    const { r, decided, reads } = reconciler({ namespace: { uid: 'ns-uid', created: 0 }, podExists: true }, true);
    await r.pod('ns', 'p');
    expect(decided).to.deep.equal([{ kind: 'rollback', namespaceUID: 'ns-uid' }]);
    const before = reads.length;
    await r.pod('ns', 'p');
    expect(reads.length, 'no reads for a decision reported').to.equal(before);
  });
});

import { expect } from 'chai';
import { KubeApiError, logger, Resources } from '@topovol/shared';
import type { KubeObject, PersistentVolumeClaim, Pod, ResourceType } from '@topovol/shared';
import { FakeEvents, FakeWrites } from '@topovol/testing';
import { isFinished, ProvisioningRollbacks } from '../../src/rollback/intent/provisioning-rollback.js';
import type { ProvisioningRollback } from '../../src/rollback/intent/provisioning-rollback.js';
import { DeletedClaimWatch } from '../../src/rollback/deleted-claim-watch.js';
import { RollbackActuator } from '../../src/rollback/rollback-actuator.js';
import { REFUSED_WRITE_RETRY_MS, RollbackReconciler, UNFINISHED_RECORD_RESYNC_MS } from '../../src/rollback/reconcile-rollback.js';
import type { RollbackGlueDeps } from '../../src/rollback/reconcile-rollback.js';
import { decidedClaim, rollbackRecord, thePod } from './rollback-record-fixture.js';

// A rollback's record moves on by the watch event its own status write causes. Level-triggered, a
// look at an unfinished record must also say when to look again: with the event lost (a handler that
// threw, a write that changed nothing), the rollback would otherwise sit half done until a restart.
/** The glue over `store`, with the server reads answered from it. */
function reconcilerOver(store: FakeWrites, events = new FakeEvents()): RollbackReconciler {
  const claimOnServer = (ns: string, n: string) => store.stored<PersistentVolumeClaim>(Resources.persistentVolumeClaims, n, ns);
  const deps = {
    world: { claim: claimOnServer },
    pod: () => undefined,
    record: (n: string) => store.stored<ProvisioningRollback>(ProvisioningRollbacks, n),
    client: store,
    log: logger(),
    dryRun: false,
    historyTtlMs: 3_600_000,
    observe: () => undefined,
    enqueueRecord: () => undefined,
    actuator: new RollbackActuator({ client: store, events, log: logger(), dryRun: false }),
    reads: {
      claim: (ns: string, n: string) => Promise.resolve(claimOnServer(ns, n)),
      volumeUse: () => Promise.resolve(undefined),
      namespace: () => Promise.resolve({ uid: 'ns-uid', created: 0 }),
      livePod(_ns: string, name: string, uid: string) {
    // The server's pod of that name and uid: one of the pods listed.
    return this.pods().then((ps: Pod[]) => ps.find((p) => p.metadata?.name === name && p.metadata?.uid === uid));
  },
      pods: () => Promise.resolve([thePod]),
      volume: () => Promise.resolve(undefined),
      attached: () => Promise.resolve(undefined),
      undeliveredPodUse: () => Promise.resolve(undefined),
      recreateCheck: () => Promise.resolve({ finalizers: [] }),
    },
    claimWatch: new DeletedClaimWatch(),
  } as unknown as RollbackGlueDeps;
  return new RollbackReconciler(deps);
}

describe('RollbackReconciler: an unfinished record is looked at again without an event', function () {
  it('every look at an unfinished record asks for another; the finished record waits out its history', async function () {
    const store = new FakeWrites();
    store.seed(Resources.persistentVolumeClaims, decidedClaim());
    const name = store.seed(ProvisioningRollbacks, rollbackRecord()).metadata!.name!;
    const reconciler = reconcilerOver(store);
    const answers: (number | void)[] = [];
    for (let look = 0; look < 5; look++) {
      const before = store.stored<ProvisioningRollback>(ProvisioningRollbacks, name)!;
      const answer = await reconciler.record(name);
      if (isFinished(before)) {
        expect(answer, 'a finished record is looked at when its history runs out').to.be.within(1, 3_600_000);
        break;
      }
      answers.push(answer);
    }
    // Deleted, then re-created, then finished: three looks at an unfinished record, each asking for another.
    expect(store.stored<ProvisioningRollback>(ProvisioningRollbacks, name)?.status?.phase).to.equal('Completed');
    expect(answers).to.deep.equal([UNFINISHED_RECORD_RESYNC_MS, UNFINISHED_RECORD_RESYNC_MS, UNFINISHED_RECORD_RESYNC_MS]);
  });
});

const forbidden = (message: string): KubeApiError => KubeApiError.fromResponse(403, JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', code: 403, reason: 'Forbidden', message }));

// A write with no refusal of its own to fall back on (the record's status, the claim's fence): before,
// thrown to the queue's backoff (doubling to 1000 s) with nothing said where the tenant looks, while
// the claim could be deleted and not yet back.
describe('RollbackReconciler: a write the API server refuses is said on the pod and tried a minute apart', function () {
  it("the record's status refused once the claim is deleted: a Warning on the pod, a minute's wait, the claim back once the write is allowed", async function () {
    const store = new FakeWrites();
    const events = new FakeEvents();
    store.seed(Resources.persistentVolumeClaims, decidedClaim());
    const name = store.seed(ProvisioningRollbacks, rollbackRecord()).metadata!.name!;
    const replaceStatus = store.replaceStatus.bind(store);
    let refusing = false;
    store.replaceStatus = (<T extends KubeObject>(r: ResourceType, obj: T): Promise<T> => (refusing ? Promise.reject(forbidden('provisioningrollbacks.topovol.io "rb" is forbidden: the role lost update on the status')) : replaceStatus<T>(r, obj)));
    store.delete = ((del) => async (...args: Parameters<FakeWrites['delete']>) => {
      await del(...args);
      if (args[0] === Resources.persistentVolumeClaims) refusing = true;
    })(store.delete.bind(store));
    const reconciler = reconcilerOver(store, events);
    const answers: (number | void)[] = [];
    for (let look = 0; look < 3; look++) answers.push(await reconciler.record(name));
    expect(answers.slice(-2)).to.deep.equal([REFUSED_WRITE_RETRY_MS, REFUSED_WRITE_RETRY_MS]);
    expect(store.stored(Resources.persistentVolumeClaims, 'c', 'ns'), 'deleted, not yet back').to.equal(undefined);
    const warned = events.recorded.filter((e) => e.reason === 'ProvisioningRollbackWriteRefused');
    // Refused at two looks, said once (the same refusal is said again only after 5 minutes).
    expect(warned.map((e) => [e.kind, e.name, e.type])).to.deep.equal([['Pod', 'p', 'Warning']]);
    expect(warned[0]!.message).to.match(/provisioning rollback .* cannot go on: the API server refused one of its requests; trying again: .*the role lost update on the status/);
    refusing = false;
    for (let look = 0; look < 4 && !isFinished(store.stored<ProvisioningRollback>(ProvisioningRollbacks, name)!); look++) await reconciler.record(name);
    expect(store.stored<ProvisioningRollback>(ProvisioningRollbacks, name)?.status?.phase).to.equal('Completed');
    expect(store.stored<PersistentVolumeClaim>(Resources.persistentVolumeClaims, 'c', 'ns')?.metadata?.uid).to.not.equal('uid-c');
  });

  it("the claim's delete and its fence both refused (a policy guarding claims): nothing deleted, the record still Deleting, a Warning on the pod, a minute's wait", async function () {
    const store = new FakeWrites();
    const events = new FakeEvents();
    store.seed(Resources.persistentVolumeClaims, decidedClaim());
    const name = store.seed(ProvisioningRollbacks, rollbackRecord()).metadata!.name!;
    store.delete = () => Promise.reject(forbidden('persistentvolumeclaims "c" is forbidden: claims here are kept'));
    const patch = store.patch.bind(store);
    store.patch = ((...args: Parameters<FakeWrites['patch']>) => (args[0] === Resources.persistentVolumeClaims ? Promise.reject(forbidden('persistentvolumeclaims "c" is forbidden: claims here are kept')) : patch(...args)));
    const reconciler = reconcilerOver(store, events);
    const answers: (number | void)[] = [];
    for (let look = 0; look < 3; look++) answers.push(await reconciler.record(name));
    expect(answers.slice(-1)).to.deep.equal([REFUSED_WRITE_RETRY_MS]);
    expect(store.stored<PersistentVolumeClaim>(Resources.persistentVolumeClaims, 'c', 'ns')?.metadata?.uid).to.equal('uid-c');
    expect(store.stored<ProvisioningRollback>(ProvisioningRollbacks, name)?.status?.claims?.[0]?.state).to.equal('Deleting');
    expect(events.recorded.filter((e) => e.reason === 'ProvisioningRollbackWriteRefused').map((e) => e.message)[0]).to.match(/claims here are kept/);
  });
});

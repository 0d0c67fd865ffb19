import { expect } from 'chai';
import { logger, Resources } from '@topovol/shared';
import type { PersistentVolumeClaim } from '@topovol/shared';
import { FakeEvents, FakeWrites } from '@topovol/testing';
import { isFinished, ProvisioningRollbacks } from '../../src/rollback/intent/provisioning-rollback.js';
import type { ProvisioningRollback } from '../../src/rollback/intent/provisioning-rollback.js';
import { DeletedClaimWatch } from '../../src/rollback/deleted-claim-watch.js';
import { RollbackActuator } from '../../src/rollback/rollback-actuator.js';
import { RollbackReconciler, UNFINISHED_RECORD_RESYNC_MS } from '../../src/rollback/reconcile-rollback.js';
import type { RollbackGlueDeps } from '../../src/rollback/reconcile-rollback.js';
import { decidedClaim, rollbackRecord, thePod } from './rollback-record-fixture.js';

// A rollback's record moves on by the watch event its own status write causes. Level-triggered, a
// look at an unfinished record must also say when to look again: with the event lost (a handler that
// threw, a write that changed nothing), the rollback would otherwise sit half done until a restart.
describe('RollbackReconciler: an unfinished record is looked at again without an event', function () {
  it('every look at an unfinished record asks for another; the finished record waits out its history', async function () {
    const store = new FakeWrites();
    store.seed(Resources.persistentVolumeClaims, decidedClaim());
    const name = store.seed(ProvisioningRollbacks, rollbackRecord()).metadata!.name!;
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
      actuator: new RollbackActuator({ client: store, events: new FakeEvents(), log: logger(), dryRun: false }),
      reads: {
        claim: (ns: string, n: string) => Promise.resolve(claimOnServer(ns, n)),
        volumeUse: () => Promise.resolve(undefined),
        namespace: () => Promise.resolve({ uid: 'ns-uid', created: 0 }),
        podExists: () => Promise.resolve(true),
        pods: () => Promise.resolve([thePod]),
        volume: () => Promise.resolve(undefined),
        undeliveredPodUse: () => Promise.resolve(undefined),
        recreateRefusal: () => Promise.resolve(undefined),
      },
      claimWatch: new DeletedClaimWatch(),
    } as unknown as RollbackGlueDeps;
    const reconciler = new RollbackReconciler(deps);
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

import { expect } from 'chai';
import fc from 'fast-check';
import { isConflict, logger, Resources } from '@topovol/shared';
import type { PersistentVolumeClaim, Pod } from '@topovol/shared';
import { FakeEvents, FakeWrites } from '@topovol/testing';
import { advanceRollback } from '../../src/rollback/advance-rollback.js';
import { decideIntent } from '../../src/rollback/intent/decide-intent.js';
import { ProvisioningRollbacks } from '../../src/rollback/intent/provisioning-rollback.js';
import type { ProvisioningRollback } from '../../src/rollback/intent/provisioning-rollback.js';
import { RollbackActuator } from '../../src/rollback/rollback-actuator.js';
import { decidedClaim, rollbackRecord, thePod } from './rollback-record-fixture.js';

// A rollback advanced look by look, as the loop does, over an in-memory store that enforces
// preconditions like the API server, with writes landing between the last re-read and the claim's
// delete: the window kube-controller-manager's status write after a bind falls into (it writes the
// claim's spec, then its status). The real server: test/integration/rollback-safety.test.ts.
/**
 * What lands in the window, each with a write of the claim (so the delete's precondition fails):
 * a status write alone (a binder's Bound); a label the re-created claim would carry; the pod
 * scheduled; the volume seen used.
 */
type Gap = 'status' | 'label' | 'scheduled' | 'used';

interface World {
  store: FakeWrites;
  scheduled: boolean;
  used: boolean;
  /** What held when the claim was deleted, if it was. */
  deletedWhen?: { scheduled: boolean; used: boolean; labels: Record<string, string> | undefined };
}

async function land(w: World, gap: Gap, n: number): Promise<void> {
  const cur = w.store.stored<PersistentVolumeClaim>(Resources.persistentVolumeClaims, 'c', 'ns')!;
  if (gap === 'label') {
    await w.store.patch(Resources.persistentVolumeClaims, 'c', 'ns', 'merge', { metadata: { labels: { touched: String(n) } } });
    return;
  }
  if (gap === 'scheduled') w.scheduled = true;
  if (gap === 'used') w.used = true;
  await w.store.replaceStatus(Resources.persistentVolumeClaims, { ...cur, status: { phase: 'Bound', conditions: [{ type: 'Written', status: String(n) }] } });
}

/**
 * Looks at the record `looks` times (or until it finishes), as the loop's queue does: a look that
 * fails with Conflict is retried (with backoff there). `gaps[i]` lands before the i-th delete.
 */
async function advanceLooks(gaps: Gap[], looks = 10): Promise<{ w: World; record: ProvisioningRollback; conflicts: number }> {
  const w: World = { store: new FakeWrites(), scheduled: false, used: false };
  w.store.seed(Resources.persistentVolumeClaims, decidedClaim());
  const name = w.store.seed(ProvisioningRollbacks, rollbackRecord()).metadata!.name!;
  // The delete as the API server does it, noting what held at that moment.
  const del = w.store.delete.bind(w.store);
  w.store.delete = async (...args: Parameters<FakeWrites['delete']>) => {
    const labels = w.store.stored<PersistentVolumeClaim>(Resources.persistentVolumeClaims, 'c', 'ns')?.metadata?.labels;
    await del(...args);
    if (args[0] === Resources.persistentVolumeClaims) w.deletedWhen = { scheduled: w.scheduled, used: w.used, labels };
  };
  let attempt = 0;
  const deps = {
    actuator: new RollbackActuator({ client: w.store, events: new FakeEvents(), log: logger(), dryRun: false }),
    reads: {
      claim: (ns: string, n: string) => Promise.resolve(w.store.stored<PersistentVolumeClaim>(Resources.persistentVolumeClaims, n, ns)),
      pod: () => Promise.resolve<Pod>({ ...thePod, spec: { ...thePod.spec!, nodeName: w.scheduled ? 'a' : undefined } }),
      volumeUse: () => Promise.resolve(w.used ? 'its mark is used' : undefined),
    },
    beforeClaimDelete: async () => {
      const gap = gaps[attempt];
      if (gap) await land(w, gap, attempt);
      attempt++;
    },
  };
  let conflicts = 0;
  for (let look = 0; look < looks; look++) {
    const r = w.store.stored<ProvisioningRollback>(ProvisioningRollbacks, name)!;
    if (r.status?.phase === 'Completed' || r.status?.phase === 'Aborted') break;
    try {
      await advanceRollback(deps, r, decideIntent(r, (ns, n) => w.store.stored(Resources.persistentVolumeClaims, n, ns)));
    } catch (err) {
      if (!isConflict(err)) throw err;
      conflicts++;
    }
  }
  return { w, record: w.store.stored<ProvisioningRollback>(ProvisioningRollbacks, name)!, conflicts };
}

describe('advancing a rollback when the claim is written between the last re-read and its delete', function () {
  const cases: { name: string; gaps: Gap[]; phase: string; message?: RegExp }[] = [
    { name: 'nothing in between: deleted and re-created', gaps: [], phase: 'Completed' },
    { name: "a binder's status write: the Conflict is thrown, the next look decides afresh, deletes and re-creates", gaps: ['status'], phase: 'Completed' },
    { name: 'two status writes: two more looks, then deleted and re-created', gaps: ['status', 'status'], phase: 'Completed' },
    { name: 'a label the re-created claim would carry: kept, the rollback aborted', gaps: ['label'], phase: 'Aborted', message: /changed since the rollback was decided \(its labels/ },
    { name: 'the pod scheduled (with a claim write): kept on the next look', gaps: ['scheduled'], phase: 'Aborted', message: /was scheduled to node a/ },
    { name: 'the volume seen used (with a claim write): kept on the next look', gaps: ['used'], phase: 'Aborted', message: /may hold data/ },
    { name: 'a status write, then a label: kept on the second look', gaps: ['status', 'label'], phase: 'Aborted', message: /its labels/ },
    { name: 'written before every delete: nothing deleted, the claim stays Deleting, every look ends in Conflict', gaps: Array<Gap>(10).fill('status'), phase: 'Deleting' },
  ];
  for (const c of cases) {
    it(c.name, async function () {
      const { w, record, conflicts } = await advanceLooks(c.gaps);
      expect(record.status?.phase).to.equal(c.phase);
      const after = w.store.stored<PersistentVolumeClaim>(Resources.persistentVolumeClaims, 'c', 'ns');
      // Each write in the gap fails that look's delete, and only that.
      expect(conflicts).to.equal(c.gaps.length);
      if (c.phase === 'Completed') {
        expect(after?.metadata?.uid).to.not.equal('uid-c');
        expect(after?.metadata?.labels).to.deep.equal({ app: 'db' });
        return;
      }
      expect(after?.metadata?.uid, 'the claim decided on is still there').to.equal('uid-c');
      expect(after?.metadata?.deletionTimestamp).to.equal(undefined);
      if (c.phase === 'Deleting') return expect(record.status?.claims?.[0]).to.include({ name: 'c', state: 'Deleting' });
      expect(record.status?.claims?.[0]).to.include({ name: 'c', state: 'Kept' });
      expect(record.status?.claims?.[0]?.message).to.match(c.message!);
    });
  }

  it('property: the claim is deleted only while the pod is unscheduled, the volume unused and the claim as decided; it completes once nothing lands', async function () {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.constantFrom<Gap>('status', 'label', 'scheduled', 'used'), { maxLength: 6 }), async (gaps) => {
        const { w, record } = await advanceLooks(gaps, 8);
        if (w.deletedWhen) expect(w.deletedWhen).to.deep.equal({ scheduled: false, used: false, labels: { app: 'db' } });
        const onlyStatus = gaps.every((g) => g === 'status');
        // Each status write costs one look; the ones after it re-create the claim and finish.
        if (onlyStatus && gaps.length <= 5) expect(record.status?.phase).to.equal('Completed');
        if (!onlyStatus) expect(record.status?.phase).to.not.equal('Completed');
      }),
      { numRuns: 80 },
    );
  });
});

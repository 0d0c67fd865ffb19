import { expect } from 'chai';
import fc from 'fast-check';
import { logger, Resources } from '@topovol/shared';
import type { PersistentVolumeClaim, Pod } from '@topovol/shared';
import { FakeEvents, FakeWrites } from '@topovol/testing';
import { advanceRollback, DELETE_ATTEMPTS } from '../../src/rollback/advance-rollback.js';
import { decideIntent } from '../../src/rollback/intent/decide-intent.js';
import { newRollback } from '../../src/rollback/intent/new-rollback.js';
import { ProvisioningRollbacks } from '../../src/rollback/intent/provisioning-rollback.js';
import type { ProvisioningRollback } from '../../src/rollback/intent/provisioning-rollback.js';
import { RollbackActuator } from '../../src/rollback/rollback-actuator.js';
import { claim, NOW, pod, pv } from './rollback-world-fixture.js';

// A rollback advanced to its end over an in-memory store that enforces preconditions like the API
// server, with a writer that touches the claim between the last re-check and the delete: the window
// kube-controller-manager's status write after a bind falls into (it writes the claim's spec, then
// its status). The real server: test/integration/rollback-safety.test.ts and rollback-tenant.test.ts.
const thePod: Pod = pod('p', ['c'], { nodeName: undefined });
const decidedClaim = (): PersistentVolumeClaim => ({ ...claim('c', { volume: 'v' }), metadata: { ...claim('c').metadata, labels: { app: 'db' } }, spec: { volumeName: 'v', storageClassName: 'late', resources: { requests: { storage: '1Gi' } } } });
const pinned = [{ claim: decidedClaim(), volume: pv('v', 'c', { usage: 'unused', forNode: 'a' }), node: 'a' }];

type Write = 'status' | 'binder annotation' | 'label';

/** A write to the stored claim: what a binder does after a bind, or a change the re-created claim would carry. */
async function write(store: FakeWrites, kind: Write): Promise<void> {
  const cur = store.stored<PersistentVolumeClaim>(Resources.persistentVolumeClaims, 'c', 'ns')!;
  if (kind === 'status') await store.replaceStatus(Resources.persistentVolumeClaims, { ...cur, status: { phase: 'Bound' } });
  else if (kind === 'binder annotation') await store.patch(Resources.persistentVolumeClaims, 'c', 'ns', 'merge', { metadata: { annotations: { 'pv.kubernetes.io/bind-completed': 'yes' } } });
  else await store.patch(Resources.persistentVolumeClaims, 'c', 'ns', 'merge', { metadata: { labels: { app: 'db', touched: String(Math.random()) } } });
}

/** Advances the record as the loop would on each change, until it finishes; writes `writes[i]` before the i-th delete attempt. */
async function runToEnd(writes: Write[]): Promise<{ record: ProvisioningRollback; claim: PersistentVolumeClaim | undefined }> {
  const store = new FakeWrites();
  store.seed(Resources.persistentVolumeClaims, decidedClaim());
  const r0 = store.seed(ProvisioningRollbacks, newRollback(thePod, pinned, 'node a rejects the pod', 1, NOW));
  const actuator = new RollbackActuator({ client: store, events: new FakeEvents(), log: logger(), dryRun: false });
  let attempt = 0;
  const deps = {
    actuator,
    reads: {
      claim: (ns: string, name: string) => Promise.resolve(store.stored<PersistentVolumeClaim>(Resources.persistentVolumeClaims, name, ns)),
      pod: () => Promise.resolve(thePod),
      volumeUse: () => Promise.resolve(undefined),
    },
    beforeClaimDelete: async () => {
      const w = writes[attempt++];
      if (w) await write(store, w);
    },
  };
  const name = r0.metadata!.name!;
  for (let round = 0; round < 10; round++) {
    const r = store.stored<ProvisioningRollback>(ProvisioningRollbacks, name)!;
    if (r.status?.phase === 'Completed' || r.status?.phase === 'Aborted') break;
    await advanceRollback(deps, r, decideIntent(r, (ns, n) => store.stored(Resources.persistentVolumeClaims, n, ns)));
  }
  return { record: store.stored<ProvisioningRollback>(ProvisioningRollbacks, name)!, claim: store.stored<PersistentVolumeClaim>(Resources.persistentVolumeClaims, 'c', 'ns') };
}

describe('advancing a rollback when the claim is written between the re-check and the delete', function () {
  const cases: { name: string; writes: Write[]; phase: 'Completed' | 'Aborted'; message?: RegExp }[] = [
    { name: 'no write: deleted and re-created', writes: [], phase: 'Completed' },
    { name: "a binder's status write (kube-controller-manager after a bind): decided again, deleted and re-created", writes: ['status'], phase: 'Completed' },
    { name: "a binder's annotation, then its status write: decided again twice, deleted and re-created", writes: ['binder annotation', 'status'], phase: 'Completed' },
    { name: 'a label the re-created claim would carry: kept, the rollback aborted', writes: ['label'], phase: 'Aborted', message: /changed since the rollback was decided \(its labels/ },
    { name: 'a status write, then a label: kept on the second look', writes: ['status', 'label'], phase: 'Aborted', message: /its labels/ },
    { name: `written before each of the ${DELETE_ATTEMPTS} attempts: kept rather than race the writer`, writes: Array<Write>(DELETE_ATTEMPTS).fill('status'), phase: 'Aborted', message: /written again each of the 3 times/ },
  ];
  for (const c of cases) {
    it(c.name, async function () {
      const { record, claim: after } = await runToEnd(c.writes);
      expect(record.status?.phase).to.equal(c.phase);
      if (c.phase === 'Completed') {
        expect(after?.metadata?.uid).to.not.equal('uid-c');
        expect(after?.metadata?.labels).to.deep.equal({ app: 'db' });
        return;
      }
      expect(after?.metadata?.uid, 'the claim decided on is still there').to.equal('uid-c');
      expect(record.status?.claims?.[0]).to.include({ name: 'c', state: 'Kept' });
      expect(record.status?.claims?.[0]?.message).to.match(c.message!);
    });
  }

  it('property: the claim decided on survives unless deleted at a version that differs from it in nothing it re-creates', async function () {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.constantFrom<Write>('status', 'binder annotation', 'label'), { maxLength: DELETE_ATTEMPTS + 1 }), async (writes) => {
        const { record, claim: after } = await runToEnd(writes);
        const tried = writes.slice(0, DELETE_ATTEMPTS);
        const firstLabel = tried.indexOf('label');
        const completes = firstLabel < 0 ? tried.length < DELETE_ATTEMPTS : false;
        expect(record.status?.phase).to.equal(completes ? 'Completed' : 'Aborted');
        expect(after?.metadata?.uid === 'uid-c').to.equal(!completes);
      }),
      { numRuns: 60 },
    );
  });
});

import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { Resources } from '@topovol/shared';
import type { Event, PersistentVolumeClaim, Pod } from '@topovol/shared';
import { AuditLogTail, controllerKubeconfig, controllerUser, eventually, INSTALL_NAMESPACE, isDryRun, sharedControlPlane, startManagerBinary } from '@topovol/testing';
import type { AuditEvent, ManagedProcess } from '@topovol/testing';
import { eventFor, failProvisioning, recordsOf, SEL } from './rollback-harness.js';
import type { ProvisioningRollback } from '../../src/rollback/intent/provisioning-rollback.js';
import { RollbackFixture } from './rollback-fixture.js';

/**
 * The writes of a rollback after the claim's delete, after which the process can die
 * (packages/shared/src/testing-hooks/failpoint.ts): the restarted loop finishes the rollback.
 */
const FAILPOINTS = ['rollback-claim-deleted', 'rollback-volume-settled', 'rollback-claim-recreated'] as const;

/**
 * The rollback loop as an operator runs it: the real manager binary, as the loop's own
 * ServiceAccount with only the generated RBAC. With `failpoint`, it SIGKILLs itself right after
 * that write.
 */
async function startManager(name: string, failpoint?: string, election: string[] = ['--leader-elect=false'], waitUntilReady = true): Promise<ManagedProcess> {
  return startManagerBinary({
    name,
    kubeconfig: await controllerKubeconfig('rollback'),
    args: ['--controllers=rollback', ...election, '--log-level=debug', '--log-format=json'],
    logFile: path.join((await sharedControlPlane()).dir, `${name}.log`),
    env: { ...process.env, TOPOVOL_FAILPOINTS: failpoint ?? '' },
    readyTimeoutMs: 60_000,
    waitUntilReady,
  });
}

/**
 * Leader election in the install namespace, with timings shorter than the defaults but with room
 * to renew (8 s): a leader that missed its renewals on a loaded machine would exit 1 before its
 * failpoint. Only the standby's wait after the SIGKILL (up to the 10 s lease) pays for that room.
 */
const ELECTION = ['--leader-elect=true', `--leader-elect-namespace=${INSTALL_NAMESPACE}`, '--leader-elect-lease-duration=10s', '--leader-elect-renew-deadline=8s', '--leader-elect-retry-period=2s'];

/** Waits for a line of the manager's JSON log with this message (and, if given, this text). */
async function logged(proc: ManagedProcess, message: string, text = '', timeoutMs?: number): Promise<void> {
  await eventually(() => {
    const seen = readFileSync(proc.logFile, 'utf8')
      .split('\n')
      .some((l) => l.includes(`"message":"${message}"`) && l.includes(text));
    if (!seen) throw new Error(`${proc.name} has not logged "${message}" ${text}`);
  }, timeoutMs);
}

/** The process's exit code, or a failure naming the failpoint it never reached. */
async function exitWithin(proc: ManagedProcess, ms: number, failpoint: string): Promise<number | null> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${proc.name} did not reach failpoint ${failpoint} within ${ms / 1000} s`)), ms);
  });
  try {
    return await Promise.race([proc.waitForExit(), late]);
  } finally {
    clearTimeout(timer);
  }
}

/** The manager's own word that it saw the claim being provisioned for the pod (it marks nothing unused otherwise). */
async function observed(proc: ManagedProcess, claimKey: string): Promise<void> {
  await logged(proc, 'provisioning observed', `"claim":"${claimKey}"`);
}

/** Successful requests of the rollback loop's ServiceAccount on claims in the namespace, from the API server's audit log. */
function claimWrites(audit: AuditLogTail, ns: string, verb: 'create' | 'delete'): AuditEvent[] {
  return audit.events().filter(
    (e) =>
      e.stage === 'ResponseComplete' &&
      e.user.username === controllerUser('rollback') &&
      e.verb === verb &&
      e.objectRef?.resource === 'persistentvolumeclaims' &&
      e.objectRef.namespace === ns &&
      (e.responseStatus?.code ?? 0) < 300 &&
      !isDryRun(e),
  );
}
let auditLog = '';
const HELD = 'rollback.topovol.io/reclaim-policy-held';
const RETAINED = 'rollback.topovol.io/retained-because';

/**
 * The process killed right after each write of a rollback (the intent recorded, the claim deleted,
 * the claim re-created), then started again: the rollback finishes, and the claim is deleted once
 * and re-created once, as the API server's audit log shows (docs/rollback.md, invariant 3).
 */
describe('rollback crash safety: killed after each write, the restarted loop finishes exactly once', function () {
  this.timeout(180_000);
  const f = new RollbackFixture();
  before(async () => {
    await f.startSuite();
    auditLog = (await sharedControlPlane()).auditLogPath;
  });
  after(() => f.stopSuite());
  beforeEach(() => f.startTest('rbc-'));
  afterEach(() => f.stopTest());

  /**
   * Pod p's claim c1 rolled back by a manager killed right after write `fp`, then by a second one
   * started afresh; `check` runs once the record is `phase`, with both managers still up.
   */
  async function acrossACrash(fp: string | string[], phase: 'Completed' | 'Aborted', check: (r: { audit: AuditLogTail; p: Pod; c1: PersistentVolumeClaim; done: ProvisioningRollback }) => Promise<void>): Promise<void> {
    const audit = new AuditLogTail(auditLog);
    // Each failpoint kills one process in turn (a restarted process can die too, at a later write).
    const [firstFp, ...laterFps] = typeof fp === 'string' ? [fp] : fp;
    const first = await startManager(`${f.ns}-first`, firstFp);
    const later: ManagedProcess[] = [];
    let second: ManagedProcess | undefined;
    try {
      const p: Pod = await f.podWithClaims('p');
      await observed(first, `${f.ns}/c1`);
      const c1 = await f.provisionC1OnA();
      await eventually(async () => expect(await f.usage()).to.equal('unused'));
      await failProvisioning(f.admin, f.ns, 'c2', 'rpc error: code = ResourceExhausted desc = node a is full');
      expect(await exitWithin(first, 60_000, firstFp!), 'killed by its failpoint').to.equal(-1);
      for (const [i, laterFp] of laterFps.entries()) {
        // Not waited on for readiness: its start-up walk may reach the failpoint before /readyz is probed.
        const proc = await startManager(`${f.ns}-restart-${i + 1}`, laterFp, undefined, false);
        later.push(proc);
        expect(await exitWithin(proc, 60_000, laterFp), `restart ${i + 1} killed at ${laterFp}`).to.equal(-1);
      }

      second = await startManager(`${f.ns}-second`);
      const done = await oneRecordEnded(p, phase);
      await check({ audit, p, c1, done });
    } finally {
      await first.stop();
      for (const proc of later) await proc.stop();
      await second?.stop();
    }
  }

  /** Pod p's one rollback record, once it has ended in `phase`. */
  function oneRecordEnded(p: Pod, phase: 'Completed' | 'Aborted'): Promise<ProvisioningRollback> {
    return eventually(async () => {
      const records = await recordsOf(f.admin, p.metadata!.uid!);
      expect(records, 'one rollback recorded').to.have.length(1);
      expect(records[0]!.status?.phase).to.equal(phase);
      return records[0]!;
    }, 90_000);
  }

  /** Claim c1 deleted once and created once, whichever process did it (the API server's audit log). */
  async function c1DeletedAndCreatedOnce(audit: AuditLogTail): Promise<void> {
    await eventually(() => {
      expect(claimWrites(audit, f.ns, 'delete').map((e) => e.objectRef?.name)).to.deep.equal(['c1']);
      expect(claimWrites(audit, f.ns, 'create').map((e) => e.objectRef?.name)).to.deep.equal(['c1']);
    });
  }

  // Before the delete, the restarted process cannot vouch for the volume: while nobody watched, a
  // pod could have been scheduled with the claim, written to the volume and been deleted, and a
  // driver without attach leaves no trace of that. It stops the rollback and keeps the claim.
  it('killed at rollback-intent-recorded: the restarted loop, which did not watch the claim since its provisioning, keeps the claim', async function () {
    await acrossACrash('rollback-intent-recorded', 'Aborted', async ({ audit, p, c1, done }) => {
      expect(done.status?.claims?.find((c) => c.name === 'c1')?.state).to.equal('Kept');
      expect((await f.claim('c1')).metadata?.uid, 'the claim is the one it was').to.equal(c1.metadata?.uid);
      await eventually(async () => expect(await f.usage(), 'marked used by the process that cannot vouch for it').to.equal('used'));
      expect((await f.volume('v1')).metadata?.annotations?.['rollback.topovol.io/used-because']).to.match(/not watched without a gap/);
      // Whichever came first: the mark written used, or the delete's own check.
      expect((await eventFor(f.admin, p, 'ProvisioningRollbackAborted')).message).to.match(/not watched without a gap|its mark is used/);
      expect(claimWrites(audit, f.ns, 'delete'), 'no claim deleted').to.deep.equal([]);
      expect(claimWrites(audit, f.ns, 'create'), 'no claim created').to.deep.equal([]);
    });
  });

  // The same for a process killed after the Started condition, or after the record says the claim
  // is about to be deleted (its successor cannot tell whether the delete was sent): the claim is
  // fenced against a delete still on its way, kept, and never deleted; and once more with the
  // successor itself killed right after the fence, before it recorded the claim Kept.
  const keptAcross = async (fps: string[]): Promise<void> => {
    await acrossACrash(fps, 'Aborted', async ({ audit, c1, done }) => {
      expect(done.status?.claims?.find((c) => c.name === 'c1')?.state).to.equal('Kept');
      expect((await f.claim('c1')).metadata?.uid, 'the claim is the one it was').to.equal(c1.metadata?.uid);
      expect(claimWrites(audit, f.ns, 'delete'), 'no claim deleted').to.deep.equal([]);
      expect(claimWrites(audit, f.ns, 'create'), 'no claim created').to.deep.equal([]);
    });
  };
  it('killed at rollback-announced: the restarted loop keeps the claim', () => keptAcross(['rollback-announced']));
  it('killed at rollback-claim-deleting: the restarted loop fences the claim and keeps it', async function () {
    await keptAcross(['rollback-claim-deleting']);
    expect((await f.claim('c1')).metadata?.annotations?.['rollback.topovol.io/kept-by'], 'fenced against a delete still on its way').to.match(/./);
  });
  it('killed at rollback-claim-deleting, then the restarted loop killed at rollback-claim-fenced: the third keeps the claim', () => keptAcross(['rollback-claim-deleting', 'rollback-claim-fenced']));
  it('killed at rollback-volume-held (the volume Retain, its claim not deleted yet): the restarted loop keeps the claim and gives the volume its Delete back', async function () {
    await keptAcross(['rollback-volume-held']);
    const v1 = await f.volume('v1');
    expect(v1.spec?.persistentVolumeReclaimPolicy).to.equal('Delete');
    expect(v1.metadata?.annotations ?? {}).to.not.have.any.keys(HELD, RETAINED);
  });

  // A warm standby, unlike a restarted process, watched the claim since its provisioning and can
  // vouch for the volume: when the leader dies between recording the claim Deleting and sending
  // the delete, the standby takes the Lease and deletes it itself. The preconditions (uid +
  // resourceVersion) and the record make that the only delete.
  it('the leader killed at rollback-claim-deleting, a standby that watched takes over: the claim is deleted and re-created exactly once', async function () {
    const audit = new AuditLogTail(auditLog);
    const leader = await startManager(`${f.ns}-leader`, 'rollback-claim-deleting', ELECTION);
    let standby: ManagedProcess | undefined;
    try {
      await logged(leader, 'became leader', '', 30_000);
      standby = await startManager(`${f.ns}-standby`, undefined, ELECTION);
      const p: Pod = await f.podWithClaims('p');
      await observed(leader, `${f.ns}/c1`);
      await observed(standby, `${f.ns}/c1`);
      const c1 = await f.provisionC1OnA();
      await eventually(async () => expect(await f.usage()).to.equal('unused'));
      await failProvisioning(f.admin, f.ns, 'c2', 'rpc error: code = ResourceExhausted desc = node a is full');
      expect(await exitWithin(leader, 60_000, 'rollback-claim-deleting'), 'killed by its failpoint').to.equal(-1);
      const done = await oneRecordEnded(p, 'Completed');
      const now = await f.claim('c1');
      expect(now.metadata?.uid).to.not.equal(c1.metadata?.uid);
      expect(done.status?.claims?.find((c) => c.name === 'c1')).to.include({ state: 'Recreated', uid: now.metadata?.uid });
      // The standby held the volume, deleted the claim and watched its pods until it was gone.
      expect((await f.volume('v1')).spec?.persistentVolumeReclaimPolicy).to.equal('Delete');
      await logged(standby, 'became leader');
      await c1DeletedAndCreatedOnce(audit);
    } finally {
      await leader.stop();
      await standby?.stop();
    }
  });

  // Two claims to roll back (c1 and c3 provisioned on node a, c2 failing there), the process killed
  // right after c1's delete: its successor did not watch c3's volume since its provisioning, cannot
  // vouch for it and keeps c3, and re-creates c1. The record ends Completed in part, said as a
  // Warning: c3's volume may still hold the pod to node a. It used to say "the pod can be scheduled
  // on another node".
  it('two claims, killed at rollback-claim-deleted: c1 re-created, c3 kept, the record and a Warning say the rollback is partial', async function () {
    const audit = new AuditLogTail(auditLog);
    const first = await startManager(`${f.ns}-first`, 'rollback-claim-deleted');
    let second: ManagedProcess | undefined;
    try {
      const p: Pod = await f.podWithClaims('p', {}, ['c1', 'c3', 'c2']);
      await observed(first, `${f.ns}/c1`);
      await observed(first, `${f.ns}/c3`);
      const c1 = await f.provisionC1OnA();
      const c3 = await f.provisionC1OnA(undefined, { claimName: 'c3', pv: 'v3' });
      await eventually(async () => expect([await f.usage(), await f.usage('v3')]).to.deep.equal(['unused', 'unused']));
      await failProvisioning(f.admin, f.ns, 'c2', 'rpc error: code = ResourceExhausted desc = node a is full');
      expect(await exitWithin(first, 60_000, 'rollback-claim-deleted'), 'killed by its failpoint').to.equal(-1);
      second = await startManager(`${f.ns}-second`);
      const done = await oneRecordEnded(p, 'Completed');
      expect(Object.fromEntries((done.status?.claims ?? []).map((c) => [c.name, c.state]))).to.deep.equal({ c1: 'Recreated', c3: 'Kept' });
      expect(done.status?.message).to.match(/claim\(s\) c1 re-created; claim\(s\) c3 kept .*may still hold the pod to node \S+ topology/);
      const completed = await eventFor(f.admin, p, 'ProvisioningRollbackCompleted');
      expect({ type: completed.type, kept: /c3 kept/.test(completed.message ?? '') }).to.deep.equal({ type: 'Warning', kept: true });
      expect((await f.claim('c1')).metadata?.uid, 'c1 re-created').to.not.equal(c1.metadata?.uid);
      expect((await f.claim('c3')).metadata?.uid, 'c3 is the one it was').to.equal(c3.metadata?.uid);
      await c1DeletedAndCreatedOnce(audit);
    } finally {
      await first.stop();
      await second?.stop();
    }
  });

  for (const fp of FAILPOINTS) {
    it(`killed at ${fp}`, async function () {
      await acrossACrash(fp, 'Completed', async ({ audit, p, c1, done }) => {
        const now = await f.claim('c1');
        expect(now.metadata?.uid).to.not.equal(c1.metadata?.uid);
        expect(done.status?.claims?.find((c) => c.name === 'c1')).to.include({ state: 'Recreated', uid: now.metadata?.uid });
        expect(now.metadata?.annotations?.['example.com/keep'], 'from the recorded template').to.equal('me');
        expect(now.metadata?.annotations?.[SEL]).to.equal(undefined);
        // Announced even when the process died right after recording it.
        expect((await eventFor(f.admin, p, 'ProvisioningRollback')).message).to.match(/rolling back unused volume\(s\) of claim\(s\) c1/);
        // Exactly once, whichever process did it.
        await c1DeletedAndCreatedOnce(audit);
        const claims = (await f.admin.list<PersistentVolumeClaim>(Resources.persistentVolumeClaims, { namespace: f.ns })).items.map((c) => c.metadata?.name).sort();
        expect(claims).to.deep.equal(['c1', 'c2']);
        const v1 = await f.volume('v1');
        if (fp === 'rollback-claim-deleted') {
          // Its successor did not watch the claim's pods from its delete until it was gone: a pod
          // may have started on it meanwhile, so the volume stays Retain, and says why.
          expect(v1.spec?.persistentVolumeReclaimPolicy).to.equal('Retain');
          expect(v1.metadata?.annotations?.[RETAINED]).to.match(/did not watch the pods of claim c1 since its delete|deleted before this process watched its pods/);
          expect((await eventFor(f.admin, v1, 'ProvisioningRollbackVolumeRetained')).type).to.equal('Warning');
        } else {
          // Settled by the first process before it re-created the claim (or before it died, at
          // rollback-volume-settled: its Delete given back, the hold's mark gone, as asserted below).
          expect(v1.spec?.persistentVolumeReclaimPolicy).to.equal('Delete');
        }
        expect(v1.metadata?.annotations ?? {}).to.not.have.any.keys(HELD);
        // The claim the first process created before it died is found, not created again; the claim says so.
        if (fp === 'rollback-claim-recreated') {
          const adopted = await eventFor(f.admin, { ...now, kind: 'PersistentVolumeClaim' }, 'ClaimAdopted');
          expect(adopted.involvedObject.uid, 'on the claim found').to.equal(now.metadata?.uid);
          expect(adopted.message).to.match(/already existed/);
        } else {
          const adopted = await f.admin.list<Event>(Resources.events, { namespace: f.ns, fieldSelector: 'reason=ClaimAdopted' });
          expect(adopted.items, 'the claim it created itself is not said to be found').to.deep.equal([]);
        }
      });
    });
  }
});

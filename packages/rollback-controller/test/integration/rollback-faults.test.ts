import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { Resources } from '@topovol/shared';
import type { PersistentVolume, PersistentVolumeClaim, Pod } from '@topovol/shared';
import { AuditLogTail, controllerKubeconfig, controllerUser, eventually, FaultProxy, isDryRun, INSTALL_NAMESPACE, recordChaosResult, sharedControlPlane } from '@topovol/testing';
import type { AuditEvent } from '@topovol/testing';
import { failProvisioning, provision, recordsOf, RunningRollback, seenByLoop } from './rollback-harness.js';
import { RollbackFixture } from './rollback-fixture.js';

/** Successful claim writes of the rollback loop's ServiceAccount in the namespace (audit log). */
const claimWrites = (audit: AuditLogTail, ns: string, verb: 'create' | 'delete'): string[] =>
  audit
    .events()
    .filter((e: AuditEvent) => e.stage === 'ResponseComplete' && e.user.username === controllerUser('rollback') && e.verb === verb && e.objectRef?.resource === 'persistentvolumeclaims' && e.objectRef.namespace === ns && (e.responseStatus?.code ?? 0) < 300 && !isDryRun(e))
    .map((e) => e.objectRef?.name ?? '');

// The rollback loop (the kubernetes #94217 story) behind the fault proxy: throttling, server
// errors, resets (before a request, or after a write: its answer lost), delays and watch cuts while it decides and performs two rollbacks, one of which
// it must refuse because the volume was attached (used). Afterwards (docs/rollback.md's
// invariants): the used volume was never touched, and the unused one was rolled back exactly once
// (one claim delete and one create, as the API server's audit log shows), however many of the
// loop's requests failed or were repeated.
describe('reliability: rollback under API faults', function () {
  this.timeout(600_000);
  const f = new RollbackFixture();
  let proxy: FaultProxy;
  let loop: RunningRollback | undefined;

  before(async function () {
    await f.startSuite();
    const cp = await sharedControlPlane();
    proxy = await FaultProxy.start(cp.url, readFileSync(cp.caFile), 11);
  });
  after(async function () {
    await loop?.stop(2_000);
    await proxy?.stop();
    await f.stopSuite();
  });
  beforeEach(() => f.startTest('rbf-'));
  afterEach(() => f.stopTest());

  it('the unused volume is rolled back exactly once and the used one never, though requests fail, repeat and watches break', async function () {
    const cp = await sharedControlPlane();
    await controllerKubeconfig('rollback'); // its ServiceAccount and generated RBAC
    const token = await cp.serviceAccountToken(INSTALL_NAMESPACE, 'topovol-rollback');
    const audit = new AuditLogTail(cp.auditLogPath);
    loop = await RunningRollback.start([], { client: proxy.client(token) });

    // p: c1 provisioned on node a, c2 fails there. q: the same, but its volume gets attached.
    const p: Pod = await f.podWithClaims('p', {}, ['c1', 'c2']);
    const q: Pod = await f.podWithClaims('q', {}, ['d1', 'd2']);
    await seenByLoop(loop, f.ns, 'c1');
    await seenByLoop(loop, f.ns, 'd1');
    await provision(f.admin, f.ns, 'c1', f.name('a'), f.name('v1'));
    await provision(f.admin, f.ns, 'd1', f.name('a'), f.name('w1'));
    await eventually(async () => {
      expect(await f.usage('v1')).to.equal('unused');
      expect(await f.usage('w1')).to.equal('unused');
    }, 60_000);
    await f.admin.create(Resources.volumeAttachments, {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'VolumeAttachment',
      metadata: { name: f.name('w1') },
      spec: { attacher: 'rollback.test.topovol.io', nodeName: f.name('a'), source: { persistentVolumeName: f.name('w1') } },
    } as never);
    const c1 = await f.claim('c1');
    const d1 = await f.claim('d1');

    const faultsStarted = proxy.now();
    proxy.set({ throttle: 0.15, serverError: 0.15, reset: 0.05, lostAnswer: 0.05, delay: 0.15, delayMs: 400, cutWatch: 0.3, atLeast: 3 });
    await failProvisioning(f.admin, f.ns, 'c2', 'rpc error: code = ResourceExhausted desc = node a is full');
    await failProvisioning(f.admin, f.ns, 'd2', 'rpc error: code = ResourceExhausted desc = node a is full');
    // The loop asks little once it has decided: atLeast gives each kind of fault its first three
    // requests, and touching q keeps it re-deciding (and re-recording its refusal) so that those
    // requests come.
    let touches = 0;
    const touching = setInterval(() => void f.admin.patch(Resources.pods, 'q', f.ns, 'merge', { metadata: { labels: { touched: String(++touches) } } }).catch(() => undefined), 300);
    try {
      await eventually(() => {
        for (const kind of ['throttle', 'serverError', 'reset', 'lostAnswer', 'delay'] as const) expect(proxy.counts[kind], kind).to.be.at.least(3);
        expect(proxy.counts.cutWatch, 'cutWatch').to.be.at.least(1);
      }, 180_000, 250);
    } catch (e) {
      // What the loop asked while the faults were on says whether it stalled or had nothing to write.
      // A new Error: mocha shows only the text before ": expected" of an assertion with a diff.
      throw new Error(`${e instanceof Error ? e.message : String(e)}\nfault counts: ${JSON.stringify(proxy.counts)}\nrequests through the proxy since the faults began:\n${proxy.journalText(faultsStarted)}`);
    } finally {
      clearInterval(touching);
    }
    proxy.set({});
    const faultsEnded = Date.now();

    // Liveness once the faults stop: p's rollback completes.
    await eventually(async () => {
      const records = await recordsOf(f.admin, p.metadata!.uid!);
      expect(records).to.have.length(1);
      expect(records[0]!.status?.phase).to.equal('Completed');
    }, 120_000);
    expect((await f.claim('c1')).metadata?.uid).to.not.equal(c1.metadata?.uid);
    // Safety: q's volume was used, so nothing of q was touched. A failure says what the loop
    // recorded for q and what it asked while the faults were on.
    try {
      const d1Now = await f.admin.get<PersistentVolumeClaim>(Resources.persistentVolumeClaims, 'd1', f.ns).catch((e: unknown) => ({ metadata: { uid: `none: ${String(e)}` } }));
      expect(d1Now.metadata?.uid, 'd1 is the claim it was').to.equal(d1.metadata?.uid);
      expect((await f.admin.get<PersistentVolume>(Resources.persistentVolumes, f.name('w1'))).metadata?.deletionTimestamp).to.equal(undefined);
      expect((await recordsOf(f.admin, q.metadata!.uid!)).filter((r) => r.status?.phase === 'Completed')).to.deep.equal([]);
    } catch (e) {
      const records = JSON.stringify((await recordsOf(f.admin, q.metadata!.uid!)).map((r) => r.status), null, 1);
      throw new Error(`${e instanceof Error ? e.message : String(e)}\nq's rollback records: ${records}\nrequests through the proxy since the faults began:\n${proxy.journalText(faultsStarted)}`);
    }
    // Exactly once, whatever was retried.
    await eventually(() => {
      expect(claimWrites(audit, f.ns, 'delete')).to.deep.equal(['c1']);
      expect(claimWrites(audit, f.ns, 'create')).to.deep.equal(['c1']);
    });
    recordChaosResult({
      scenario: 'rollback under API faults',
      fault: '429, 500/503, resets, lost answers, delays, watch cuts during two rollbacks (one refused: attached volume)',
      intensity: '15% / 15% / 5% / 5% of writes / 15% (400 ms) / 30% of watches',
      operations: proxy.counts.forwarded + proxy.injected,
      violations: 0,
      convergeSeconds: (Date.now() - faultsEnded) / 1000,
    });
  });
});

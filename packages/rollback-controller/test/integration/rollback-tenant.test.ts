import { expect } from 'chai';
import { classifyError, PROVISIONING_FAILED_EVENTS, projectEvent, projectPod, Resources } from '@topovol/shared';
import type { Event, KubeClient, PersistentVolume, PersistentVolumeClaim, Pod } from '@topovol/shared';
import { eventually, namespaceTenant } from '@topovol/testing';
import { ProvisioningRollbacks } from '../../src/rollback/intent/provisioning-rollback.js';
import { EVIDENCE_CLOCK_SKEW_MS } from '../../src/rollback/stuck-evidence.js';
import type { ProvisioningRollback } from '../../src/rollback/intent/provisioning-rollback.js';
import { claim, failProvisioning, pod, provision, provisioningFailed, recordsOf, RunningRollback, seenByLoop, selectNode } from './rollback-harness.js';
import { RollbackFixture } from './rollback-fixture.js';

/** What the API server answered: 'ok', or the error kind (Forbidden, Invalid, ...). */
async function outcome(write: () => Promise<unknown>): Promise<string> {
  try {
    await write();
    return 'ok';
  } catch (err) {
    return classifyError(err).kind;
  }
}

/** The rollback marks and records of a volume: every key of ours on it. */
const marksOf = (v: PersistentVolume): Record<string, string> =>
  Object.fromEntries(Object.entries({ ...v.metadata?.labels, ...v.metadata?.annotations }).filter(([k]) => k.startsWith('rollback.topovol.io/')));

/**
 * A tenant who can do anything a namespace's edit role allows (pods, claims, Events in its own
 * namespace) tries every way it has to make the rollback loop's cluster-wide ServiceAccount act for
 * it elsewhere: the pod annotation older versions trusted, a ProvisioningRollback of its own, the
 * marks on volumes, failure Events about another namespace's claim. A victim namespace next door
 * has a pod stuck exactly as a rollback needs. Nothing is created outside the tenant's namespace,
 * no mark changes, and the victim is not rolled back (docs/rollback.md, invariant 5).
 */
describe('rollback and a forging tenant: nothing outside its namespace, no mark changed', function () {
  this.timeout(180_000);
  const f = new RollbackFixture();
  before(() => f.startSuite());
  after(() => f.stopSuite());
  beforeEach(() => f.startTest('rbv-'));
  afterEach(() => f.stopTest());

  const tenant = (ns: string): Promise<KubeClient> => namespaceTenant(f.admin, ns);

  it('every forgery is refused by the API server or ignored by the loop', async function () {
    const { admin } = f;
    const victim = f.ns;
    // One worker: the loop handles keys in the order it sees their changes (see the touch below).
    const loop = await RunningRollback.start(['--concurrent-workers=1', '--rollback-grace-period=10m']);
    try {
      // The victim: c1 provisioned on node a and unused, c2 still provisioning there.
      const vPod = await f.podWithClaims('p');
      await f.provisionC1OnA(loop);
      await eventually(async () => expect(await f.usage()).to.equal('unused'));
      const victimVolume = await f.volume('v1');
      const victimClaims = (await admin.list<PersistentVolumeClaim>(Resources.persistentVolumeClaims, { namespace: victim })).items;
      const victimC2 = victimClaims.find((c) => c.metadata?.name === 'c2')!;

      // The tenant, with its own pod in the same situation.
      const tenantNs = await f.otherNamespace('rbt-');
      const t = await tenant(tenantNs);
      await eventually(() => t.create(Resources.persistentVolumeClaims, claim(tenantNs, 'c1', f.cls)));
      await t.create(Resources.persistentVolumeClaims, claim(tenantNs, 'c2', f.cls));
      const forged = JSON.stringify([{ namespace: victim, name: 'stolen', spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Ti' } }, storageClassName: f.cls } }]);
      const base = pod(tenantNs, 'p', ['c1', 'c2']);
      const tPod = await t.create<Pod>(Resources.pods, { ...base, metadata: { ...base.metadata, annotations: { 'rollback.topovol.io/recreate-claims': forged } } });
      for (const c of ['c1', 'c2']) await selectNode(admin, tenantNs, c, f.name('a'));
      await seenByLoop(loop, tenantNs, 'c1');
      await provision(admin, tenantNs, 'c1', f.name('a'), `${tenantNs}-v1`);
      await eventually(async () => expect(marksOf(await admin.get<PersistentVolume>(Resources.persistentVolumes, `${tenantNs}-v1`))['rollback.topovol.io/usage']).to.equal('unused'));

      // Refused by the API server: a rollback record, the marks, Events about another namespace.
      const record: ProvisioningRollback = {
        apiVersion: 'topovol.io/v1alpha1',
        kind: 'ProvisioningRollback',
        metadata: { name: 'forged' },
        spec: {
          pod: { namespace: victim, name: 'p', uid: vPod.metadata!.uid! },
          workload: { kind: 'Pod', name: 'p', uid: vPod.metadata!.uid! },
          node: f.name('a'),
          reason: 'forged',
          attempt: 1,
          evidenceTime: new Date().toISOString(),
          claims: [{ name: 'c1', uid: victimClaims[0]!.metadata!.uid!, resourceVersion: '1', volume: f.name('v1'), template: { metadata: {}, spec: {} } }],
        },
      };
      expect(await outcome(() => t.create(ProvisioningRollbacks, record)), 'a ProvisioningRollback').to.equal('Forbidden');
      for (const v of [`${tenantNs}-v1`, f.name('v1')]) {
        expect(await outcome(() => t.patch(Resources.persistentVolumes, v, undefined, 'merge', { metadata: { labels: { 'rollback.topovol.io/usage': 'unused' } } })), `a mark on ${v}`).to.equal('Forbidden');
      }
      const failure = (involved: Event['involvedObject'], name: string): Event => provisioningFailed(tenantNs, name, involved, 'rpc error: code = ResourceExhausted desc = forged', new Date(), 'forger');
      expect(await outcome(() => t.create(Resources.events, failure({ kind: 'PersistentVolumeClaim', apiVersion: 'v1', namespace: victim, name: 'c2', uid: victimC2.metadata?.uid }, 'cross'))), 'an Event about another namespace').to.equal('Invalid');
      // Accepted by the API server (its own namespace), but about no claim of the victim: ignored.
      expect(await outcome(() => t.create(Resources.events, failure({ kind: 'PersistentVolumeClaim', apiVersion: 'v1', namespace: tenantNs, name: 'c2', uid: victimC2.metadata?.uid }, 'uid')))).to.equal('ok');

      // The victim's pod is looked at again after the loop has the forged Event; then the tenant's
      // own, legitimate failure. With one worker, the victim's decision is made before the tenant's.
      const events = loop.informers.forResource<Event>(Resources.events, { fieldSelector: PROVISIONING_FAILED_EVENTS, transform: projectEvent });
      await eventually(() => expect(events.cache.list().some((e) => e.metadata?.name === 'uid' && e.metadata.namespace === tenantNs)).to.equal(true));
      const touched = await admin.patch<Pod>(Resources.pods, 'p', victim, 'merge', { metadata: { annotations: { 'topovol.dev/touched': 'after-forgery' } } });
      const pods = loop.informers.forResource<Pod>(Resources.pods, { transform: projectPod });
      // The cache keeps no annotations: the pod's resourceVersion shows the loop has the change.
      await eventually(() => expect(pods.cache.get(`${victim}/p`)?.metadata?.resourceVersion).to.equal(touched.metadata?.resourceVersion));
      await new Promise((r) => setImmediate(r));
      await failProvisioning(admin, tenantNs, 'c2', 'rpc error: code = ResourceExhausted desc = node a is full');
      const [done] = await eventually(async () => {
        const rs = await recordsOf(admin, tPod.metadata!.uid!);
        expect(rs.map((r) => r.status?.phase), JSON.stringify(rs.map((r) => r.status))).to.deep.equal(['Completed']);
        return rs;
      }, 60_000);

      // The tenant's rollback touched its own claim c1, from the loop's own record of it.
      expect(done!.spec.claims.map((c) => c.name)).to.deep.equal(['c1']);
      const tenantClaims = (await admin.list<PersistentVolumeClaim>(Resources.persistentVolumeClaims, { namespace: tenantNs })).items;
      expect(tenantClaims.map((c) => c.metadata?.name).sort()).to.deep.equal(['c1', 'c2']);
      // Nothing outside: no claim "stolen" anywhere, the victim's claims and marks as they were.
      const everywhere = (await admin.list<PersistentVolumeClaim>(Resources.persistentVolumeClaims)).items;
      expect(everywhere.filter((c) => c.metadata?.name === 'stolen')).to.deep.equal([]);
      const victimNow = (await admin.list<PersistentVolumeClaim>(Resources.persistentVolumeClaims, { namespace: victim })).items;
      expect(victimNow.map((c) => `${c.metadata?.name}/${c.metadata?.uid}`).sort()).to.deep.equal(victimClaims.map((c) => `${c.metadata?.name}/${c.metadata?.uid}`).sort());
      expect(marksOf(await f.volume('v1'))).to.deep.equal(marksOf(victimVolume));
      expect(await recordsOf(admin, vPod.metadata!.uid!), 'no rollback of the victim').to.deep.equal([]);
      const all = (await admin.list<ProvisioningRollback>(ProvisioningRollbacks)).items;
      expect(all.filter((r) => r.spec.pod.namespace === victim || r.metadata?.name === 'forged')).to.deep.equal([]);
    } finally {
      await loop.stop();
    }
  });

  // docs/rollback.md "Residual risk": an Event stamped far ahead would otherwise become the
  // workload's evidence time, and no genuine failure before that date could roll it back again.
  it("a failure Event the tenant stamps a year ahead never becomes its workload's evidence time", async function () {
    const { admin } = f;
    const loop = await RunningRollback.start(['--concurrent-workers=1']);
    try {
      const p = await f.podWithClaims('p');
      await f.provisionC1OnA(loop);
      await eventually(async () => expect(await f.usage()).to.equal('unused'));
      const c2 = await f.claim('c2');
      const t = await tenant(f.ns);
      const involved: Event['involvedObject'] = { kind: 'PersistentVolumeClaim', apiVersion: 'v1', namespace: f.ns, name: 'c2', uid: c2.metadata?.uid };
      const failure = (client: KubeClient, name: string, at: Date, message: string): Promise<Event> => client.create<Event>(Resources.events, provisioningFailed(f.ns, name, involved, message, at, name));
      await eventually(() => failure(t, 'c2.ahead', new Date(Date.now() + 365 * 24 * 3_600_000), 'rpc error: code = ResourceExhausted desc = stamped a year ahead'));
      const events = loop.informers.forResource<Event>(Resources.events, { fieldSelector: PROVISIONING_FAILED_EVENTS, transform: projectEvent });
      await eventually(() => expect(events.cache.list().some((e) => e.metadata?.name === 'c2.ahead' && e.metadata.namespace === f.ns)).to.equal(true));
      // Then the provisioner's genuine failure, and its reschedule signal (failProvisioning would
      // wait for a second past the newest failure, a year): the rollback rests on it alone.
      await failure(admin, 'c2.failed', new Date(), 'rpc error: code = ResourceExhausted desc = node a is full');
      await selectNode(admin, f.ns, 'c2', null);
      const [done] = await eventually(async () => {
        const rs = await recordsOf(admin, p.metadata!.uid!);
        expect(rs.map((r) => r.status?.phase), JSON.stringify(rs.map((r) => r.status))).to.deep.equal(['Completed']);
        return rs;
      }, 60_000);
      const evidence = Date.parse(done!.spec.evidenceTime ?? '');
      expect(evidence, done!.spec.evidenceTime).to.be.at.most(Date.now() + EVIDENCE_CLOCK_SKEW_MS);
      expect(done!.spec.reason).to.match(/node a is full/).and.not.match(/a year ahead/);
    } finally {
      await loop.stop();
    }
  });
});

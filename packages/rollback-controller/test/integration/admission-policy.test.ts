import path from 'node:path';
import { expect } from 'chai';
import { classifyError, logger, Resources } from '@topovol/shared';
import type { KubeClient, KubeObject, PersistentVolume } from '@topovol/shared';
import { applyManifests, createTestNamespace, eventually, FakeEvents, repoRoot, sharedControlPlane } from '@topovol/testing';
import { writeMark } from '../../src/rollback/mark-actuator.js';
import { ANN_PROVISIONED_FOR_NODE, ANN_PROVISIONED_FOR_WORKLOAD, LABEL_USAGE, Reasons } from '../../src/rollback/marks.js';

const CONTROLLER = 'system:serviceaccount:topovol-system:topovol-rollback';

// config/admission/rollback-marks-policy.yaml on the real API server.
describe('admission policy protecting the rollback marks', function () {
  this.timeout(90_000);
  let admin: KubeClient;
  let alice: KubeClient;
  let controller: KubeClient;
  let ns: string;
  const name = (s: string): string => `${ns}-${s}`;
  const pv = (n: string, labels?: Record<string, string>, annotations?: Record<string, string>): PersistentVolume => ({
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name: name(n), labels, annotations },
    spec: { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], hostPath: { path: '/tmp/x' }, persistentVolumeReclaimPolicy: 'Retain' },
  });
  const rejection = async (p: Promise<unknown>): Promise<string> => {
    try {
      await p;
    } catch (err) {
      const e = classifyError(err);
      return `${e.kind}: ${err instanceof Error ? err.message : String(err)}`;
    }
    return 'accepted';
  };

  before(async function () {
    admin = (await sharedControlPlane()).adminClient();
    ns = await createTestNamespace(admin, 'vap-');
    // Both identities may write PVs as far as RBAC goes: only the policy tells them apart.
    await admin.create<KubeObject>(Resources.clusterRoles, { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: name('pv-writer') }, rules: [{ apiGroups: [''], resources: ['persistentvolumes', 'persistentvolumes/status'], verbs: ['get', 'create', 'update', 'patch'] }] } as KubeObject);
    await admin.create<KubeObject>(Resources.clusterRoleBindings, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: name('pv-writer') },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: name('pv-writer') },
      subjects: [
        { kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: 'alice' },
        { kind: 'ServiceAccount', name: 'topovol-rollback', namespace: 'topovol-system' },
        { kind: 'ServiceAccount', name: 'topovol-controller-manager', namespace: 'topovol-system' },
      ],
    } as KubeObject);
    alice = admin.forUser('alice', ['system:authenticated']);
    controller = admin.forUser(CONTROLLER, ['system:serviceaccounts', 'system:serviceaccounts:topovol-system', 'system:authenticated']);
    await applyManifests(admin, [path.join(repoRoot(), 'config', 'admission', 'rollback-marks-policy.yaml')]);
  });
  after(async function () {
    // The policy is cluster-wide: remove it so that other suites (running as admin) are unaffected.
    await admin.delete(Resources.validatingAdmissionPolicyBindings, 'topovol-rollback-marks').catch(() => undefined);
    await admin.delete(Resources.validatingAdmissionPolicies, 'topovol-rollback-marks').catch(() => undefined);
    // Deletion also reaches the API server's policy cache asynchronously: wait until it is lifted.
    let probe = 0;
    await eventually(async () => {
      const n = `lifted-${probe++}`;
      await admin.create(Resources.persistentVolumes, pv(n, { [LABEL_USAGE]: 'unused' }));
      await admin.delete(Resources.persistentVolumes, name(n));
    });
    await admin.delete(Resources.clusterRoleBindings, name('pv-writer')).catch(() => undefined);
    await admin.delete(Resources.clusterRoles, name('pv-writer')).catch(() => undefined);
    for (const n of ['alice', 'ctl', 'aio', 'plain', 'used', 'st-used', 'st-plain']) await admin.delete(Resources.persistentVolumes, name(n)).catch(() => undefined);
  });

  it('rejects another user setting the unused label, accepts the controller\'s ServiceAccount', async function () {
    // The API server loads new policies asynchronously: wait until it enforces this one.
    let attempt = 0;
    const denied = await eventually(async () => {
      const probe = `alice-${attempt++}`;
      const why = await rejection(alice.create(Resources.persistentVolumes, pv(probe, { [LABEL_USAGE]: 'unused' })));
      if (why === 'accepted') await admin.delete(Resources.persistentVolumes, name(probe)).catch(() => undefined);
      expect(why).to.not.equal('accepted');
      return why;
    });
    expect(denied).to.match(/only the Topovol rollback controller may mark a volume unused/);
    expect(await rejection(controller.create(Resources.persistentVolumes, pv('ctl', { [LABEL_USAGE]: 'unused' }, { [ANN_PROVISIONED_FOR_NODE]: 'n1' })))).to.equal('accepted');
    // The all-in-one manager (config/default/all-in-one) runs the rollback loop as its own ServiceAccount.
    const allInOne = admin.forUser('system:serviceaccount:topovol-system:topovol-controller-manager', ['system:serviceaccounts', 'system:serviceaccounts:topovol-system', 'system:authenticated']);
    expect(await rejection(allInOne.create(Resources.persistentVolumes, pv('aio', { [LABEL_USAGE]: 'unused' }, { [ANN_PROVISIONED_FOR_NODE]: 'n1' })))).to.equal('accepted');
  });

  it('rejects removing a used mark and changing provisioned-for; ordinary updates pass', async function () {
    await controller.create(Resources.persistentVolumes, pv('used', { [LABEL_USAGE]: 'used' }, { [ANN_PROVISIONED_FOR_NODE]: 'n1' }));
    expect(await rejection(alice.patch(Resources.persistentVolumes, name('used'), undefined, 'merge', { metadata: { labels: { [LABEL_USAGE]: null } } }))).to.match(/permanent/);
    expect(await rejection(alice.patch(Resources.persistentVolumes, name('used'), undefined, 'merge', { metadata: { annotations: { [ANN_PROVISIONED_FOR_NODE]: 'n2' } } }))).to.match(/provisioned-for/);
    // The workload a volume was provisioned for decides which replacement pod a rollback may help.
    expect(await rejection(alice.patch(Resources.persistentVolumes, name('used'), undefined, 'merge', { metadata: { annotations: { [ANN_PROVISIONED_FOR_WORKLOAD]: 'someone-else' } } }))).to.match(/provisioned-for/);
    expect(await rejection(alice.patch(Resources.persistentVolumes, name('used'), undefined, 'merge', { metadata: { labels: { team: 'storage' } } }))).to.equal('accepted');
    expect(await rejection(alice.create(Resources.persistentVolumes, pv('plain')))).to.equal('accepted');
  });

  it('holds writes through persistentvolumes/status to the same rules (the status strategy lets them change labels and annotations)', async function () {
    await controller.create(Resources.persistentVolumes, pv('st-used', { [LABEL_USAGE]: 'used' }, { [ANN_PROVISIONED_FOR_NODE]: 'n1' }));
    await admin.create(Resources.persistentVolumes, pv('st-plain'));
    const viaStatus = (n: string, metadata: object): Promise<unknown> => alice.patch(Resources.persistentVolumes, name(n), undefined, 'merge', { metadata }, { subresource: 'status' });
    expect(await rejection(viaStatus('st-plain', { labels: { [LABEL_USAGE]: 'unused' } }))).to.match(/only the Topovol rollback controller may mark a volume unused/);
    expect(await rejection(viaStatus('st-used', { labels: { [LABEL_USAGE]: null } }))).to.match(/permanent/);
    expect(await rejection(viaStatus('st-used', { annotations: { [ANN_PROVISIONED_FOR_NODE]: 'n2' } }))).to.match(/provisioned-for/);
    // What the refusals protect: through /status, the API server does keep a label change.
    expect(await rejection(viaStatus('st-plain', { labels: { team: 'storage' } }))).to.equal('accepted');
    expect((await admin.get<PersistentVolume>(Resources.persistentVolumes, name('st-plain'))).metadata?.labels?.team).to.equal('storage');
    expect((await admin.get<PersistentVolume>(Resources.persistentVolumes, name('st-used'))).metadata?.labels?.[LABEL_USAGE]).to.equal('used');
  });

  // The loop's own mark writer as an identity the policy does not exempt (an install moved to another
  // namespace without patching the policy): the refusal is said on the volume, nothing is written.
  it("the mark actuator refused by the policy (the loop running as an identity it does not exempt): a VolumeMarkRefused Warning, the volume unchanged", async function () {
    const v = await admin.create<PersistentVolume>(Resources.persistentVolumes, pv('refused'));
    const events = new FakeEvents();
    const mark = { kind: 'markUnused' as const, volume: { ...v, kind: 'PersistentVolume' }, node: 'n1', podUid: 'uid-p', workloadUid: 'uid-w', podName: 'p' };
    expect(await writeMark({ client: alice, events, log: logger(), dryRun: false }, mark)).to.equal('refused');
    expect(events.recorded.map((e) => [e.type, e.reason, /only the Topovol rollback controller may mark a volume unused/.test(e.message)])).to.deep.equal([['Warning', Reasons.MarkRefused, true]]);
    expect((await admin.get<PersistentVolume>(Resources.persistentVolumes, name('refused'))).metadata?.labels?.[LABEL_USAGE]).to.equal(undefined);
    await admin.delete(Resources.persistentVolumes, name('refused'));
  });
});

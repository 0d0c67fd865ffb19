import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { EventRecorder, KubeApiError, logger, Resources } from '@topovol/shared';
import type { KubeClient, Node, PersistentVolume, PersistentVolumeClaim, Pod } from '@topovol/shared';
import { controllerClient, createTestNamespace, FaultProxy, sharedControlPlane } from '@topovol/testing';
import type { ControlPlane } from '@topovol/testing';
import type { BinderAction } from '../../src/binder/actions.js';
import { BinderActuator } from '../../src/binder/actuator.js';
import { AssumeCache } from '../../src/binder/assume-cache.js';
import { verifyOnServer } from '../../src/binder/verify-on-server.js';
import { deleteNow, getPV, getPVC, pv, pvc } from './binder-harness.js';

const SEL = 'volume.kubernetes.io/selected-node';

/**
 * The binder's actuator against the real API server, as the loop's ServiceAccount, behind the live
 * reads that guard its two dangerous writes (verify-on-server.ts, in the loop's glue). A decision
 * made on a cache that lags (a node not seen yet, labels or pods not updated, a claim not yet seen)
 * is refused by the server's view, whatever the decision says.
 */
describe('pv-binder actuator: live preconditions on the real API server', function () {
  this.timeout(60_000);
  let cp: ControlPlane;
  let admin: KubeClient;
  let client: KubeClient;
  let actuator: BinderActuator;
  let ns: string;
  const nodeName = (s: string): string => `${ns}-${s}`;

  before(async function () {
    cp = await sharedControlPlane();
    admin = cp.adminClient();
    client = await controllerClient('pv-binder');
    const events = new EventRecorder(client, 'persistentvolume-controller', 'test');
    actuator = new BinderActuator({ client, events, volumes: new AssumeCache(), claims: new AssumeCache(), log: logger(), dryRun: false });
  });
  beforeEach(async function () {
    ns = await createTestNamespace(admin, 'actuator-');
  });
  afterEach(async function () {
    for (const p of (await admin.list<Pod>(Resources.pods, { namespace: ns })).items) await admin.delete(Resources.pods, p.metadata!.name!, ns, { gracePeriodSeconds: 0 }).catch(() => undefined);
    for (const c of (await admin.list<PersistentVolumeClaim>(Resources.persistentVolumeClaims, { namespace: ns })).items) await deleteNow(admin, Resources.persistentVolumeClaims, c.metadata!.name!, ns);
    for (const n of ['here', 'zoned']) await admin.delete(Resources.nodes, nodeName(n)).catch(() => undefined);
    for (const v of (await admin.list<PersistentVolume>(Resources.persistentVolumes)).items) if (v.metadata!.name!.startsWith(`${ns}-`)) await deleteNow(admin, Resources.persistentVolumes, v.metadata!.name!);
  });

  const selectedClaim = async (node: string): Promise<PersistentVolumeClaim> =>
    admin.create<PersistentVolumeClaim>(Resources.persistentVolumeClaims, pvc(ns, 'c', '1Gi', { class: 'late', annotations: { [SEL]: node } }));
  const strip = (claim: PersistentVolumeClaim, confirm: NonNullable<Extract<BinderAction, { kind: 'annotateClaim' }>['confirm']>): BinderAction[] => [{ kind: 'annotateClaim', claim, remove: [SEL], confirm }];
  /** As the glue does: confirm on the server, then write. Why the server refused, if it did. */
  const apply = async (actions: BinderAction[]): Promise<string | undefined> => {
    const refuted = await verifyOnServer(client, actions);
    await actuator.run(refuted ? actions.slice(0, refuted.index) : actions);
    return refuted?.why;
  };
  const refused = async (actions: BinderAction[]): Promise<string> => {
    const why = await apply(actions);
    expect(why, 'the write should have been refused').to.not.equal(undefined);
    return why!;
  };

  it('keeps a selected node that the cache does not know but the server has', async function () {
    await admin.create<Node>(Resources.nodes, { apiVersion: 'v1', kind: 'Node', metadata: { name: nodeName('here') } });
    const claim = await selectedClaim(nodeName('here'));
    expect(await refused(strip(claim, { issue: 'gone', node: nodeName('here'), quietSince: -Infinity }))).to.match(/exists after all/);
    expect((await getPVC(admin, ns, 'c')).metadata?.annotations?.[SEL]).to.equal(nodeName('here'));
  });

  it('removes a selected node the server does not have either', async function () {
    const claim = await selectedClaim(nodeName('nowhere'));
    expect(await apply(strip(claim, { issue: 'gone', node: nodeName('nowhere'), quietSince: -Infinity }))).to.equal(undefined);
    expect((await getPVC(admin, ns, 'c')).metadata?.annotations?.[SEL]).to.equal(undefined);
  });

  it('keeps a selected node when the server has the volume provisioned for the claim (the cache had not seen it)', async function () {
    const claim = await selectedClaim(nodeName('nowhere'));
    const ref = { apiVersion: 'v1', kind: 'PersistentVolumeClaim', namespace: ns, name: 'c', uid: claim.metadata!.uid! };
    // As external-provisioner names it with its default flags.
    const made = `pvc-${claim.metadata!.uid!}`;
    await admin.create<PersistentVolume>(Resources.persistentVolumes, pv(made, '1Gi', { class: 'late', claimRef: ref, policy: 'Delete' }));
    try {
      expect(await refused(strip(claim, { issue: 'gone', node: nodeName('nowhere'), quietSince: -Infinity }))).to.match(/provisioned for the claim is on the server/);
      expect(await refused(strip(claim, { issue: 'noConsumer', node: nodeName('nowhere'), quietSince: -Infinity }))).to.match(/provisioned for the claim is on the server/);
      expect((await getPVC(admin, ns, 'c')).metadata?.annotations?.[SEL]).to.equal(nodeName('nowhere'));
    } finally {
      await deleteNow(admin, Resources.persistentVolumes, made);
    }
  });

  it('keeps a selected node whose labels on the server satisfy allowedTopologies (the cache had old labels)', async function () {
    await admin.create<Node>(Resources.nodes, { apiVersion: 'v1', kind: 'Node', metadata: { name: nodeName('zoned'), labels: { zone: 'a' } } });
    const claim = await selectedClaim(nodeName('zoned'));
    const allowedTopologies = [{ matchLabelExpressions: [{ key: 'zone', values: ['a'] }] }];
    expect(await refused(strip(claim, { issue: 'notAllowed', node: nodeName('zoned'), allowedTopologies, quietSince: -Infinity }))).to.match(/allowed after all/);
    expect((await getPVC(admin, ns, 'c')).metadata?.annotations?.[SEL]).to.equal(nodeName('zoned'));
    // Not allowed on the server too: removed.
    expect(await apply(strip(claim, { issue: 'notAllowed', node: nodeName('zoned'), allowedTopologies: [{ matchLabelExpressions: [{ key: 'zone', values: ['b'] }] }], quietSince: -Infinity }))).to.equal(undefined);
    expect((await getPVC(admin, ns, 'c')).metadata?.annotations?.[SEL]).to.equal(undefined);
  });

  it('keeps a selected node a pod on the server may still use (the cache had not seen the pod)', async function () {
    const claim = await selectedClaim(nodeName('here'));
    await admin.create(Resources.pods, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'p', namespace: ns },
      spec: { nodeSelector: { 'topovol.dev/nowhere': 'true' }, containers: [{ name: 'c', image: 'busybox' }], volumes: [{ name: 'v', persistentVolumeClaim: { claimName: 'c' } }] },
    });
    expect(await refused(strip(claim, { issue: 'noConsumer', node: nodeName('here'), quietSince: -Infinity }))).to.match(/may use it after all/);
    expect((await getPVC(admin, ns, 'c')).metadata?.annotations?.[SEL]).to.equal(nodeName('here'));
  });

  /** A pod placed on node `here` with spec.nodeName, using claim c; returns what the cache would hold of it. */
  const placedPod = async (): Promise<Pod> =>
    admin.create<Pod>(Resources.pods, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'placed', namespace: ns },
      spec: { nodeName: nodeName('here'), containers: [{ name: 'c', image: 'busybox' }], volumes: [{ name: 'v', persistentVolumeClaim: { claimName: 'c' } }] },
    });
  const forPlaced = (p: Pod): { namespace: string; name: string; uid: string; nodeName: string } => ({ namespace: ns, name: p.metadata!.name!, uid: p.metadata!.uid!, nodeName: nodeName('here') });

  it('never selects the node of a pod placed with spec.nodeName that the server no longer has (the cache still had it)', async function () {
    const claim = await admin.create<PersistentVolumeClaim>(Resources.persistentVolumeClaims, pvc(ns, 'c', '1Gi', { class: 'late' }));
    const p = await placedPod();
    await admin.delete(Resources.pods, 'placed', ns, { gracePeriodSeconds: 0 });
    expect(await refused([{ kind: 'annotateClaim', claim, set: { [SEL]: nodeName('here') }, forPlacedPod: forPlaced(p) }])).to.match(/is not on the server/);
    expect((await getPVC(admin, ns, 'c')).metadata?.annotations?.[SEL]).to.equal(undefined);
  });

  it('never binds a volume for a placed pod the server no longer has; binds it while the pod is there', async function () {
    const claim = await admin.create<PersistentVolumeClaim>(Resources.persistentVolumeClaims, pvc(ns, 'c', '1Gi', { class: 'late' }));
    const volume = await admin.create<PersistentVolume>(Resources.persistentVolumes, pv(`${ns}-v`, '1Gi', { class: 'late' }));
    const p = await placedPod();
    const plan = (pod: Pod): BinderAction[] => [{ kind: 'bindVolume', volume, claim, boundByController: true, forPlacedPod: forPlaced(pod) }];
    // Re-created under the same name, with another uid: not the pod the decision was made for.
    await admin.delete(Resources.pods, 'placed', ns, { gracePeriodSeconds: 0 });
    const again = await placedPod();
    expect(await refused(plan(p))).to.match(/is not on the server/);
    expect((await getPV(admin, `${ns}-v`)).spec?.claimRef).to.equal(undefined);
    expect(await apply(plan(again))).to.equal(undefined);
    expect((await getPV(admin, `${ns}-v`)).spec?.claimRef?.uid).to.equal(claim.metadata?.uid);
  });

  it('never binds a volume for a placed pod whose claim is being deleted on the server (the cache had not seen the delete)', async function () {
    const claim = await admin.create<PersistentVolumeClaim>(Resources.persistentVolumeClaims, pvc(ns, 'c', '1Gi', { class: 'late' }));
    const volume = await admin.create<PersistentVolume>(Resources.persistentVolumes, pv(`${ns}-v`, '1Gi', { class: 'late' }));
    const p = await placedPod();
    // The StorageObjectInUseProtection admission plugin gave the claim its finalizer: it stays, Terminating.
    await admin.delete(Resources.persistentVolumeClaims, 'c', ns);
    expect((await getPVC(admin, ns, 'c')).metadata?.deletionTimestamp).to.be.a('string');
    expect(await refused([{ kind: 'bindVolume', volume, claim, boundByController: true, forPlacedPod: forPlaced(p) }])).to.match(/is being deleted on the server/);
    expect((await getPV(admin, `${ns}-v`)).spec?.claimRef).to.equal(undefined);
  });

  it('never binds a volume for a placed pod while another pod of the claim waits for the scheduler on the server (the cache had not seen it)', async function () {
    const claim = await admin.create<PersistentVolumeClaim>(Resources.persistentVolumeClaims, pvc(ns, 'c', '1Gi', { class: 'late' }));
    const volume = await admin.create<PersistentVolume>(Resources.persistentVolumes, pv(`${ns}-v`, '1Gi', { class: 'late' }));
    const p = await placedPod();
    // Pod q of the same claim, not placed: kube-scheduler may be pre-binding a volume for it now.
    await admin.create(Resources.pods, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'q', namespace: ns },
      spec: { containers: [{ name: 'c', image: 'busybox' }], volumes: [{ name: 'v', persistentVolumeClaim: { claimName: 'c' } }] },
    });
    const plan: BinderAction[] = [{ kind: 'bindVolume', volume, claim, boundByController: true, forPlacedPod: forPlaced(p) }];
    expect(await refused(plan)).to.match(new RegExp(`pod ${ns}/q of claim ${ns}/c waits for the scheduler on the server`));
    expect((await getPV(admin, `${ns}-v`)).spec?.claimRef).to.equal(undefined);
    // Once q is gone, the binding for the placed pod goes ahead.
    await admin.delete(Resources.pods, 'q', ns, { gracePeriodSeconds: 0 });
    expect(await apply(plan)).to.equal(undefined);
    expect((await getPV(admin, `${ns}-v`)).spec?.claimRef?.uid).to.equal(claim.metadata?.uid);
  });

  it('never releases a volume whose claim the server still has, bound to it', async function () {
    const claim = await admin.create<PersistentVolumeClaim>(Resources.persistentVolumeClaims, pvc(ns, 'c', '1Gi', { volumeName: `${ns}-v` }));
    const volume = await admin.create<PersistentVolume>(
      Resources.persistentVolumes,
      pv(`${ns}-v`, '1Gi', { claimRef: { kind: 'PersistentVolumeClaim', apiVersion: 'v1', namespace: ns, name: 'c', uid: claim.metadata?.uid } }),
    );
    expect(await refused([{ kind: 'volumePhase', volume, phase: 'Released' }])).to.match(/still exists/);
    expect((await getPV(admin, `${ns}-v`)).status?.phase).to.not.equal('Released');
  });

  it("releases on the server's own NotFound for the claim, never on a 404 naming nothing (a proxy's)", async function () {
    const proxy = await FaultProxy.start(cp.url, readFileSync(cp.caFile), 7);
    try {
      const viaProxy = proxy.client(cp.adminToken);
      const volume = await admin.create<PersistentVolume>(
        Resources.persistentVolumes,
        pv(`${ns}-v`, '1Gi', { claimRef: { kind: 'PersistentVolumeClaim', apiVersion: 'v1', namespace: ns, name: 'c', uid: 'uid-of-a-deleted-claim' } }),
      );
      const release: BinderAction[] = [{ kind: 'volumePhase', volume, phase: 'Released' }];
      proxy.answerBareNotFound((r) => r.method === 'GET' && r.path === `/api/v1/namespaces/${ns}/persistentvolumeclaims/c`);
      const err = await verifyOnServer(viaProxy, release).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err, 'a bare 404 confirmed the claim gone').to.be.instanceOf(KubeApiError);
      expect((await getPV(admin, `${ns}-v`)).status?.phase).to.not.equal('Released');
      // The real kube-apiserver's answer names the claim: that one is "gone".
      proxy.answerBareNotFound(undefined);
      expect(await verifyOnServer(viaProxy, release)).to.equal(undefined);
      await actuator.run(release);
      expect((await getPV(admin, `${ns}-v`)).status?.phase).to.equal('Released');
    } finally {
      await proxy.stop();
    }
  });

  it('never mutates the objects it is given: informer caches share them (writes send copies)', async function () {
    const deepFreeze = <T>(o: T): T => {
      if (o && typeof o === 'object' && !Object.isFrozen(o)) {
        Object.freeze(o);
        for (const v of Object.values(o)) deepFreeze(v);
      }
      return o;
    };
    const claim = deepFreeze(await admin.create<PersistentVolumeClaim>(Resources.persistentVolumeClaims, pvc(ns, 'c', '1Gi')));
    await admin.create<PersistentVolume>(Resources.persistentVolumes, pv(`${ns}-v`, '1Gi'));
    // One action per run, each on frozen objects as read from the server (within a run, later
    // actions build on the server's answers, which are not frozen). ES modules run in strict mode:
    // writing to a frozen object throws instead of passing silently.
    const volume = async (): Promise<PersistentVolume> => deepFreeze(await getPV(admin, `${ns}-v`));
    await actuator.run([{ kind: 'volumePhase', volume: await volume(), phase: 'Available' }]);
    await actuator.run([{ kind: 'bindVolume', volume: await volume(), claim, boundByController: true }]);
    await actuator.run([{ kind: 'bindClaim', volume: await volume(), claim, boundByController: true }]);
    expect((await getPVC(admin, ns, 'c')).status?.phase).to.equal('Bound');
    const bound = await volume();
    expect([bound.status?.phase, bound.spec?.claimRef?.uid]).to.deep.equal(['Bound', claim.metadata?.uid]);
    await actuator.run([{ kind: 'claimPhase', claim: deepFreeze(await getPVC(admin, ns, 'c')), phase: 'Lost' }]);
    expect((await getPVC(admin, ns, 'c')).status?.phase).to.equal('Lost');
    await actuator.run([{ kind: 'unbindVolume', volume: bound, keepClaimRef: false }]);
    expect((await getPV(admin, `${ns}-v`)).spec?.claimRef).to.equal(undefined);
  });
});

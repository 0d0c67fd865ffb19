import { expect } from 'chai';
import { PROVISIONING_EVENTS, Resources, slimEvent } from '@topovol/shared';
import type { Event, KubeClient, Node, PersistentVolume, PersistentVolumeClaim, Pod, StorageClass } from '@topovol/shared';
import { AuditLogTail, controllerUser, createTestNamespace, eventually, namespaceTenant, sharedControlPlane } from '@topovol/testing';
import type { AuditEvent, ControlPlane, InProcessLoop } from '@topovol/testing';
import { deleteNow, eventFor, forgedProvisioningEvent, getPV, getPVC, heldVolume, pv, pvc, RunningBinder } from './binder-harness.js';

const SEL = 'volume.kubernetes.io/selected-node';
const BIND_COMPLETED = 'pv.kubernetes.io/bind-completed';
const BOUND_BY_CONTROLLER = 'pv.kubernetes.io/bound-by-controller';
const GRACE_S = 3;

/**
 * A tenant who may write claims, pods and Events in its own namespace (a namespace's edit role,
 * plus Events; nothing cluster-scoped) against the cluster-wide binder, with another namespace's
 * volumes and a fenced node's free volume in reach by name. Every forgery is judged as upstream
 * judges it (kube-controller-manager's syncUnboundClaim, syncBoundClaim) or refused (a pod placed
 * on a node the kubelet would refuse it on), and the API server's audit log shows no binder write
 * to the other namespace's claims or to any volume not the tenant's.
 */
describe('pv-binder and a forging tenant: nothing of another namespace taken, changed or released', function () {
  this.timeout(120_000);
  let cp: ControlPlane;
  let admin: KubeClient;
  let binder: InProcessLoop | undefined;
  let victim = '';
  let tenantNs = '';
  const pvs: string[] = [];
  const nodes: string[] = [];
  const classes: string[] = [];
  const namespaces: string[] = [];

  before(async function () {
    cp = await sharedControlPlane();
    admin = cp.adminClient();
    binder = await RunningBinder.start([`--stale-selected-node-grace=${GRACE_S}s`]);
  });
  after(async function () {
    await binder?.stop();
    for (const ns of [tenantNs, victim, ...namespaces]) {
      if (!ns) continue;
      for (const p of (await admin.list<Pod>(Resources.pods, { namespace: ns })).items) await admin.delete(Resources.pods, p.metadata!.name!, ns, { gracePeriodSeconds: 0 }).catch(() => undefined);
      for (const c of (await admin.list<PersistentVolumeClaim>(Resources.persistentVolumeClaims, { namespace: ns })).items) await deleteNow(admin, Resources.persistentVolumeClaims, c.metadata!.name!, ns);
    }
    for (const v of pvs) await deleteNow(admin, Resources.persistentVolumes, v).catch(() => undefined);
    for (const n of nodes) await admin.delete(Resources.nodes, n).catch(() => undefined);
    for (const c of classes) await admin.delete(Resources.storageClasses, c).catch(() => undefined);
  });


  const volume = async (v: PersistentVolume): Promise<PersistentVolume> => {
    pvs.push(v.metadata!.name!);
    return admin.create<PersistentVolume>(Resources.persistentVolumes, v);
  };
  const phaseOf = async (name: string): Promise<string | undefined> => (await getPV(admin, name)).status?.phase;

  it('every forgery is refused by the API server or ignored by the binder', async function () {
    victim = await createTestNamespace(admin, 'victim-');
    tenantNs = await createTestNamespace(admin, 'tenant-');
    const v = (s: string): string => `${victim}-${s}`;

    // The victim's volumes: one bound to its claim, one Released by its claim's deletion, one
    // pre-bound by an administrator to a claim the victim has not created yet.
    await admin.create(Resources.persistentVolumeClaims, pvc(victim, 'data', '1Gi', { volumeName: v('bound') }));
    await volume(pv(v('bound'), '1Gi'));
    await volume(pv(v('released'), '1Gi', { claimRef: { kind: 'PersistentVolumeClaim', apiVersion: 'v1', namespace: victim, name: 'old', uid: 'uid-of-a-deleted-claim' } }));
    await volume(pv(v('prebound'), '1Gi', { claimRef: { kind: 'PersistentVolumeClaim', apiVersion: 'v1', namespace: victim, name: 'later' } }));
    // A node fenced off from the tenant (a NoExecute taint only the victim's pods tolerate), with a free local volume.
    const fenced = v('fenced');
    nodes.push(fenced);
    await admin.create<Node>(Resources.nodes, { apiVersion: 'v1', kind: 'Node', metadata: { name: fenced, labels: { 'kubernetes.io/hostname': fenced } }, spec: { taints: [{ key: 'dedicated', value: 'victim', effect: 'NoExecute' }] } });
    const local = v('local');
    classes.push(local);
    await admin.create<StorageClass>(Resources.storageClasses, { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: local }, provisioner: 'kubernetes.io/no-provisioner', volumeBindingMode: 'WaitForFirstConsumer' });
    await volume(pv(v('local-pv'), '1Gi', { class: local, nodeAffinity: { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: [fenced] }] }] } } }));
    // A victim claim whose selected node is gone: its removal after the grace must not be held off.
    const late = v('late');
    classes.push(late);
    await admin.create<StorageClass>(Resources.storageClasses, { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: late }, provisioner: 'example.com/csi', volumeBindingMode: 'WaitForFirstConsumer' });

    await eventually(async () => {
      expect((await getPVC(admin, victim, 'data')).status?.phase).to.equal('Bound');
      expect(await phaseOf(v('released'))).to.equal('Released');
      expect(await phaseOf(v('prebound'))).to.equal('Available');
      expect(await phaseOf(v('local-pv'))).to.equal('Available');
    });
    const before = new Map(await Promise.all([v('bound'), v('released'), v('prebound'), v('local-pv')].map(async (n) => [n, await getPV(admin, n)] as const)));
    const audit = new AuditLogTail(cp.auditLogPath);
    const tenant = await namespaceTenant(admin, tenantNs);
    // The victim's claim, with a selected node that is gone, waits for its grace until the
    // binder's cache holds the tenant's forged Events about it (below): only then is it made
    // stale, so the removal is decided with the forgeries in view.
    nodes.push(v('gone-node'));
    await admin.create<Node>(Resources.nodes, { apiVersion: 'v1', kind: 'Node', metadata: { name: v('gone-node') } });
    const stale = await admin.create<PersistentVolumeClaim>(Resources.persistentVolumeClaims, pvc(victim, 'stale', '1Gi', { class: late, annotations: { [SEL]: v('gone-node') } }));
    // Cluster-scoped objects are out of its reach.
    await tenant.create(Resources.persistentVolumes, pv(`${tenantNs}-mine`, '1Gi')).then(
      () => expect.fail('a tenant created a volume'),
      (err: unknown) => expect(String(err)).to.match(/forbidden/i),
    );
    await tenant.patch(Resources.persistentVolumes, v('bound'), undefined, 'merge', { spec: { claimRef: null } }).then(
      () => expect.fail('a tenant changed a volume'),
      (err: unknown) => expect(String(err)).to.match(/forbidden/i),
    );
    // Claims naming the victim's volumes: bound elsewhere, Released, pre-bound to another claim;
    // and one marked bound by hand (bind-completed), as if the binder had bound it there.
    await tenant.create(Resources.persistentVolumeClaims, pvc(tenantNs, 'take-bound', '1Gi', { volumeName: v('bound') }));
    await tenant.create(Resources.persistentVolumeClaims, pvc(tenantNs, 'take-released', '1Gi', { volumeName: v('released') }));
    await tenant.create(Resources.persistentVolumeClaims, pvc(tenantNs, 'take-prebound', '1Gi', { volumeName: v('prebound') }));
    await tenant.create(Resources.persistentVolumeClaims, pvc(tenantNs, 'forged-bound', '1Gi', { volumeName: v('prebound'), annotations: { [BIND_COMPLETED]: 'yes', [BOUND_BY_CONTROLLER]: 'yes' } }));
    // A claim of the local class and a pod placed by name on the fenced node, where the kubelet would refuse it.
    await tenant.create(Resources.persistentVolumeClaims, pvc(tenantNs, 'fenced-data', '1Gi', { class: local }));
    await tenant.create<Pod>(Resources.pods, { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'placed', namespace: tenantNs }, spec: { nodeName: fenced, containers: [{ name: 'c', image: 'example.invalid/app' }], volumes: [{ name: 'd', persistentVolumeClaim: { claimName: 'fenced-data' } }] } });
    // "The provisioner is working on the victim's claim", a year ahead, in the tenant's namespace:
    // naming a claim of the tenant's namespace with the victim's uid (a legacy Event must name its
    // own namespace), and naming the victim's namespace itself (an events.k8s.io-style Event, with
    // eventTime, may).
    const forged = [forgedProvisioningEvent(tenantNs, 'stale', stale.metadata!.uid!)];
    const ahead = new Date(Date.now() + 365 * 24 * 3_600_000).toISOString().replace('Z', '000Z'); // MicroTime
    forged.push({
      ...forged[0]!,
      metadata: { name: 'forged-new-style', namespace: tenantNs },
      involvedObject: { ...forged[0]!.involvedObject, namespace: victim },
      firstTimestamp: undefined,
      lastTimestamp: undefined,
      count: undefined,
      eventTime: ahead,
      action: 'Provisioning',
      reportingComponent: 'example.com/csi',
      reportingInstance: 'example.com/csi-0',
    });
    for (const e of forged) await tenant.create<Event>(Resources.events, e);
    const cached = binder!.informers.forResource<Event>(Resources.events, { fieldSelector: PROVISIONING_EVENTS, transform: slimEvent });
    await eventually(() => expect(cached.cache.list().filter((e) => e.involvedObject?.uid === stale.metadata?.uid).map((e) => e.metadata?.name).sort()).to.deep.equal(['forged', 'forged-new-style']));
    // Until now the selected node existed; its deletion starts the grace with the forgeries in view.
    await admin.delete(Resources.nodes, v('gone-node'));

    // The binder answered each: the victim's stale selected node is let go after its grace (the
    // forged Event held nothing off), the claim naming a volume bound elsewhere is told so, and
    // the placed pod is refused.
    await eventually(async () => expect((await getPVC(admin, victim, 'stale')).metadata?.annotations?.[SEL]).to.equal(undefined), 60_000);
    // Each forgery answered before anything is compared: a FailedBinding on each claim naming a
    // volume that is not for it, the hand-marked claim Lost, the placed pod refused.
    await eventually(async () => {
      const events = (await admin.list<Event>(Resources.events, { namespace: tenantNs })).items;
      const about = (reason: string): string[] => events.filter((e) => e.reason === reason).map((e) => e.involvedObject.name ?? '');
      expect(about('FailedBinding')).to.include.members(['take-bound', 'take-released', 'take-prebound']);
      expect(about('PlacedPodRefusedByNode')).to.include('fenced-data');
      expect((await getPVC(admin, tenantNs, 'forged-bound')).status?.phase).to.equal('Lost');
    }, 60_000);
    // Nothing of the victim's moved: each volume as it was (status and binding), the victim's claim Bound.
    for (const [n, was] of before) {
      const now = await getPV(admin, n);
      expect(now.spec?.claimRef, `${n}: claimRef`).to.deep.equal(was.spec?.claimRef);
      expect(now.status?.phase, `${n}: phase`).to.equal(was.status?.phase);
      expect(now.metadata?.resourceVersion, `${n}: not written`).to.equal(was.metadata?.resourceVersion);
    }
    expect((await getPVC(admin, victim, 'data')).status?.phase).to.equal('Bound');
    // The tenant's claims got nothing: Pending, and the one marked bound by hand Lost, as upstream
    // (syncBoundClaim: its volume is bound to another claim).
    const phases = Object.fromEntries((await admin.list<PersistentVolumeClaim>(Resources.persistentVolumeClaims, { namespace: tenantNs })).items.map((c) => [c.metadata!.name!, c.status?.phase]));
    expect(phases).to.deep.equal({ 'take-bound': 'Pending', 'take-released': 'Pending', 'take-prebound': 'Pending', 'forged-bound': 'Lost', 'fenced-data': 'Pending' });
    // The audit log: the binder wrote no volume, and in the victim's namespace only the stale claim.
    const writes = audit.events().filter(
      (e: AuditEvent) => e.stage === 'ResponseComplete' && e.user.username === controllerUser('pv-binder') && ['create', 'update', 'patch', 'delete'].includes(e.verb) && (e.responseStatus?.code ?? 0) < 300,
    );
    expect(writes.filter((e) => e.objectRef?.resource === 'persistentvolumes').map((e) => e.objectRef?.name), 'volume writes').to.deep.equal([]);
    const inVictim = writes.filter((e) => e.objectRef?.namespace === victim && e.objectRef.resource === 'persistentvolumeclaims');
    // (its storage-provisioner annotation, as upstream writes it, and the selected node's removal)
    expect([...new Set(inVictim.map((e) => e.objectRef?.name))], "the victim's claims written").to.deep.equal(['stale']);
  });

  // Naming a volume is open to a claim in any namespace. A volume that another namespace's claim is
  // Bound to and names, its claimRef gone missing (removed by hand, or a re-binding stopped between
  // its writes), may hold that claim's data: it is bound to no other claim (volume-hold.ts), where
  // upstream binds it to whichever claim's sync comes first.
  it("a tenant's claims naming another namespace's held volume, with or without bind-completed, are not bound to it; the volume goes back to its claim", async function () {
    const owner = await createTestNamespace(admin, 'owner-');
    const namer = await createTestNamespace(admin, 'namer-');
    namespaces.push(owner, namer);
    const held = `${owner}-held`;
    pvs.push(held);
    classes.push(held);
    const { lift } = await heldVolume(admin, binder!, owner, held);
    let lifted = false;
    try {
      const tenant = await namespaceTenant(admin, namer);
      const named = await tenant.create<PersistentVolumeClaim>(Resources.persistentVolumeClaims, pvc(namer, 'named', '1Gi', { class: held, volumeName: held }));
      const forged = await tenant.create<PersistentVolumeClaim>(Resources.persistentVolumeClaims, pvc(namer, 'forged', '1Gi', { class: held, volumeName: held, annotations: { [BIND_COMPLETED]: 'yes' } }));
      for (const c of [named, forged]) expect((await eventFor(admin, c, 'FailedBinding')).message, c.metadata?.name).to.contain('is held for another claim');
      expect((await getPV(admin, held)).spec?.claimRef, 'the held volume').to.equal(undefined);
      await lift();
      lifted = true;
      await eventually(async () => {
        const v = await getPV(admin, held);
        expect([v.spec?.claimRef?.namespace, v.spec?.claimRef?.name, v.status?.phase]).to.deep.equal([owner, 'holder', 'Bound']);
      }, 60_000);
      for (const n of ['named', 'forged']) expect((await getPVC(admin, namer, n)).status?.phase, n).to.not.equal('Bound');
    } finally {
      if (!lifted) await lift();
    }
  });
});

import { expect } from 'chai';
import { metricsRegistry, Resources } from '@topovol/shared';
import type { Event, KubeClient, KubeObject, Node, PersistentVolume, PersistentVolumeClaim, Pod } from '@topovol/shared';
import { bindingViolations, createTestNamespace, denyingPolicy, eventually, sharedControlPlane, untilRefused } from '@topovol/testing';
import { deleteNow, eventFor, forgedProvisioningEvent, getPV, getPVC, pv, pvc, RunningBinder } from '../binder-harness.js';

const SEL = 'volume.kubernetes.io/selected-node';
const ZONE = 'topology.kubernetes.io/zone';

/** topovol_events_total summed over components, for one type and reason. */
async function eventsCounted(type: string, reason: string): Promise<number> {
  const all = (await metricsRegistry.getMetricsAsJSON()) as unknown as { name: string; values: { value: number; labels: Record<string, string | number> }[] }[];
  const family = all.find((m) => m.name === 'topovol_events_total');
  return (family?.values ?? []).filter((v) => v.labels.type === type && v.labels.reason === reason).reduce((a, v) => a + v.value, 0);
}

/** The API server's answer to a create: the error text, or undefined when it was accepted. */
async function refusal(create: () => Promise<unknown>): Promise<string | undefined> {
  try {
    await create();
    return undefined;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}

// The bad-input corpus of docs/reliability.md, for the binder: objects a user or another controller
// can write, each of which must be answered (an Event, which topovol_events_total counts) and must
// not cause a wrong action or stop the loop (a canary pair created afterwards is still bound).
// What the API server refuses is shown refused here; the decisions' handling of those values (which
// only a forged cache entry or an older server could deliver) is in the unit tests.
describe('reliability: bad input to the binder (real API server)', function () {
  this.timeout(120_000);
  let admin: KubeClient;
  let binder: RunningBinder;
  let ns: string;
  const name = (s: string): string => `${ns}-${s}`;
  const created: { kind: 'pv' | 'node' | 'class'; name: string }[] = [];

  before(async function () {
    admin = (await sharedControlPlane()).adminClient();
    binder = await RunningBinder.start(['--stale-selected-node-grace=1s']);
  });
  after(async function () {
    await binder?.stop();
  });
  beforeEach(async function () {
    ns = await createTestNamespace(admin, 'bad-');
  });
  afterEach(async function () {
    // The loop still reconciles: a canary pair made after the bad input binds.
    await admin.create(Resources.persistentVolumes, pv(name('canary'), '1Gi', { class: name('canary') }));
    created.push({ kind: 'pv', name: name('canary') });
    await admin.create(Resources.persistentVolumeClaims, pvc(ns, 'canary', '1Gi', { class: name('canary') }));
    await eventually(async () => expect((await getPVC(admin, ns, 'canary')).spec?.volumeName).to.equal(name('canary')), 60_000);
    for (const c of created.splice(0)) {
      if (c.kind === 'pv') await deleteNow(admin, Resources.persistentVolumes, c.name).catch(() => undefined);
      if (c.kind === 'node') await admin.delete(Resources.nodes, c.name).catch(() => undefined);
      if (c.kind === 'class') await admin.delete(Resources.storageClasses, c.name).catch(() => undefined);
    }
  });

  async function volume(v: PersistentVolume): Promise<PersistentVolume> {
    created.push({ kind: 'pv', name: v.metadata!.name! });
    return admin.create(Resources.persistentVolumes, v);
  }
  async function available(v: string): Promise<void> {
    await eventually(async () => expect((await getPV(admin, name(v))).status?.phase).to.equal('Available'));
  }
  async function answered(obj: KubeObject, type: string, reason: string, before: number): Promise<void> {
    await eventFor(admin, obj, reason);
    expect(await eventsCounted(type, reason), `topovol_events_total{type="${type}",reason="${reason}"}`).to.be.above(before);
  }

  it('what the API server refuses never reaches a loop: negative, zero and malformed sizes, unknown binding modes, empty values, 64-character labels', async function () {
    const refused: [string, () => Promise<unknown>, RegExp][] = [
      ['claim of -1Gi', () => admin.create(Resources.persistentVolumeClaims, pvc(ns, 'neg', '-1Gi')), /must be greater than zero/],
      ['claim of 0', () => admin.create(Resources.persistentVolumeClaims, pvc(ns, 'zero', '0')), /must be greater than zero/],
      ['claim of 1Qi', () => admin.create(Resources.persistentVolumeClaims, pvc(ns, 'qi', '1Qi')), /quantities must match/],
      ['volume of -1', () => volume(pv(name('neg'), '-1')), /must be greater than zero/],
      ['class with volumeBindingMode Sometimes', () => admin.create(Resources.storageClasses, { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: name('sometimes') }, provisioner: 'x', volumeBindingMode: 'Sometimes' }), /Unsupported value: "Sometimes"/],
      ['allowedTopologies with no values', () => admin.create(Resources.storageClasses, { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: name('novalues') }, provisioner: 'x', allowedTopologies: [{ matchLabelExpressions: [{ key: ZONE, values: [] }] }] }), /Required value/],
      ['node affinity In with no values', () => volume(pv(name('in-none'), '1Gi', { nodeAffinity: { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: ZONE, operator: 'In', values: [] }] }] } } })), /must be specified when `operator` is 'In'/],
      ['node affinity without terms', () => volume(pv(name('no-terms'), '1Gi', { nodeAffinity: { required: { nodeSelectorTerms: [] } } })), /at least one node selector term/],
      ['a 64-character label value', () => volume(pv(name('long-label'), '1Gi', { labels: { [ZONE]: 'z'.repeat(64) } })), /must be no more than 63/],
    ];
    for (const [what, create, why] of refused) expect(await refusal(create), what).to.match(why);
  });

  it('absurd sizes the API server accepts: compared exactly, never bound to a volume that is too small', async function () {
    // A class of its own (no StorageClass object): class-less claims of other suites would fit these volumes.
    const cls = name('absurd');
    const before = await eventsCounted('Warning', 'ProvisioningFailed');
    await volume(pv(name('short'), '9223372036854775807', { class: cls }));
    await volume(pv(name('one-byte'), '1', { class: cls }));
    await available('short');
    await available('one-byte');
    const huge = await admin.create<PersistentVolumeClaim>(Resources.persistentVolumeClaims, pvc(ns, 'huge', '1e30', { class: cls }));
    const twoTo63 = await admin.create<PersistentVolumeClaim>(Resources.persistentVolumeClaims, pvc(ns, 'two-to-63', '9223372036854775808', { class: cls }));
    await admin.create(Resources.persistentVolumeClaims, pvc(ns, 'sub-byte', '0.5m', { class: cls }));
    // No volume fits: the binder asks for provisioning, and says the class does not exist.
    await answered(huge, 'Warning', 'ProvisioningFailed', before);
    await eventFor(admin, twoTo63, 'ProvisioningFailed');
    // 0.5m is one byte, as resource.Quantity.Value() rounds: the one-byte volume, not a larger one.
    await eventually(async () => expect((await getPVC(admin, ns, 'sub-byte')).spec?.volumeName).to.equal(name('one-byte')));
    expect((await getPV(admin, name('short'))).spec?.claimRef, 'a 2^63-byte claim took a volume one byte smaller').to.equal(undefined);
    expect((await getPVC(admin, ns, 'huge')).spec?.volumeName).to.equal(undefined);
  });

  it('a claim naming a class that does not exist: ProvisioningFailed, nothing bound', async function () {
    const before = await eventsCounted('Warning', 'ProvisioningFailed');
    const c = await admin.create<PersistentVolumeClaim>(Resources.persistentVolumeClaims, pvc(ns, 'c', '1Gi', { class: name('missing') }));
    await answered(c, 'Warning', 'ProvisioningFailed', before);
    expect((await eventFor(admin, c, 'ProvisioningFailed')).message).to.contain(`"${name('missing')}" not found`);
    expect((await getPVC(admin, ns, 'c')).status?.phase).to.equal('Pending');
  });

  it('volumes whose node affinity matches no node: a Warning each, and a pod placed on a node gets the volume that can reach it', async function () {
    const cls = name('local');
    await admin.create(Resources.storageClasses, { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: cls }, provisioner: 'kubernetes.io/no-provisioner', volumeBindingMode: 'WaitForFirstConsumer' });
    created.push({ kind: 'class', name: cls });
    const node = name('n');
    await admin.create<Node>(Resources.nodes, { apiVersion: 'v1', kind: 'Node', metadata: { name: node, labels: { [ZONE]: 'z1', 'kubernetes.io/hostname': node } } });
    created.push({ kind: 'node', name: node });
    const before = await eventsCounted('Warning', 'UnusableVolume');
    // Smaller than the good one, so a matcher that let them through would pick them first.
    const emptyTerm = await volume(pv(name('empty-term'), '1Gi', { class: cls, nodeAffinity: { required: { nodeSelectorTerms: [{}] } } }));
    const gtText = await volume(pv(name('gt-text'), '1Gi', { class: cls, nodeAffinity: { required: { nodeSelectorTerms: [{ matchExpressions: [{ key: ZONE, operator: 'Gt', values: ['z0'] }] }] } } }));
    await volume(pv(name('good'), '2Gi', { class: cls, nodeAffinity: { required: { nodeSelectorTerms: [{ matchFields: [{ key: 'metadata.name', operator: 'In', values: [node] }] }] } } }));
    await answered(emptyTerm, 'Warning', 'UnusableVolume', before);
    expect((await eventFor(admin, gtText, 'UnusableVolume')).message).to.contain('needs exactly one integer value');
    await available('good');
    await admin.create(Resources.persistentVolumeClaims, pvc(ns, 'data', '1Gi', { class: cls }));
    await admin.create<Pod>(Resources.pods, { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', namespace: ns }, spec: { nodeName: node, containers: [{ name: 'c', image: 'example.invalid/app' }], volumes: [{ name: 'd', persistentVolumeClaim: { claimName: 'data' } }] } });
    await eventually(async () => expect((await getPVC(admin, ns, 'data')).spec?.volumeName).to.equal(name('good')));
    for (const v of ['empty-term', 'gt-text']) expect((await getPV(admin, name(v))).spec?.claimRef, v).to.equal(undefined);
  });

  it('volumes whose claimRef has a uid but no namespace or no name: accepted by the API server, a Warning each, never released', async function () {
    const before = await eventsCounted('Warning', 'InvalidClaimRef');
    const noNs = await volume(pv(name('no-ns'), '1Gi', { policy: 'Delete', claimRef: { name: 'c', uid: 'uid-c' } }));
    const noName = await volume(pv(name('no-name'), '1Gi', { policy: 'Delete', claimRef: { namespace: ns, uid: 'uid-c' } }));
    await answered(noNs, 'Warning', 'InvalidClaimRef', before);
    expect((await eventFor(admin, noNs, 'InvalidClaimRef')).message).to.contain('but no namespace');
    expect((await eventFor(admin, noName, 'InvalidClaimRef')).message).to.contain('but no name');
    for (const v of ['no-ns', 'no-name']) expect((await getPV(admin, name(v))).status?.phase, v).to.equal('Pending');
  });

  it('volumes whose claimRef names a claim or namespace no object can have (`%`, `/`, capitals): a Warning each, never released, though the server would answer a read of those names with another object', async function () {
    // A provisioned volume with Delete: Released hands it to its deleter. kube-apiserver answers a
    // read of claims/x%2Fstatus with claim x (another uid than the claimRef's: "re-created"), which
    // used to release it; claims/data%251 with a 400, a reconcile failing for ever without an Event.
    await admin.create(Resources.persistentVolumeClaims, pvc(ns, 'x', '1Gi', { class: name('none') }));
    const deleter = { 'pv.kubernetes.io/provisioned-by': 'example.com/deleter' };
    const before = await eventsCounted('Warning', 'InvalidClaimRef');
    const refs = { escaped: { namespace: ns, name: 'data%1' }, path: { namespace: ns, name: 'x/status' }, upper: { namespace: ns, name: 'X' }, namespace: { namespace: 'Bad_NS', name: 'x' } };
    const made = [];
    for (const [k, ref] of Object.entries(refs)) made.push(await volume(pv(name(k), '1Gi', { policy: 'Delete', annotations: deleter, claimRef: { ...ref, uid: `uid-${k}` } })));
    await answered(made[0]!, 'Warning', 'InvalidClaimRef', before);
    for (const v of made) expect((await eventFor(admin, v, 'InvalidClaimRef')).message, v.metadata!.name).to.match(/which no (claim|namespace) can have/);
    for (const k of Object.keys(refs)) expect((await getPV(admin, name(k))).status?.phase, k).to.equal('Pending');
  });

  it('a selected node without the topology labels its class allows: the annotation goes, with a Warning', async function () {
    const cls = name('zonal');
    await admin.create(Resources.storageClasses, { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: cls }, provisioner: 'example.com/none', volumeBindingMode: 'WaitForFirstConsumer', allowedTopologies: [{ matchLabelExpressions: [{ key: ZONE, values: ['z1'] }] }] });
    created.push({ kind: 'class', name: cls });
    const bare = name('bare');
    await admin.create<Node>(Resources.nodes, { apiVersion: 'v1', kind: 'Node', metadata: { name: bare } });
    created.push({ kind: 'node', name: bare });
    const before = await eventsCounted('Warning', 'SelectedNodeNotAllowed');
    const c = await admin.create<PersistentVolumeClaim>(Resources.persistentVolumeClaims, pvc(ns, 'c', '1Gi', { class: cls, annotations: { [SEL]: bare } }));
    await answered(c, 'Warning', 'SelectedNodeNotAllowed', before);
    await eventually(async () => expect((await getPVC(admin, ns, 'c')).metadata?.annotations?.[SEL]).to.equal(undefined));
  });

  it("another namespace's forged Provisioning Event (the claim's uid, a time far ahead) does not hold off the removal of a stale selected node", async function () {
    const cls = name('wffc-forged');
    await admin.create(Resources.storageClasses, { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: cls }, provisioner: 'example.com/none', volumeBindingMode: 'WaitForFirstConsumer' });
    created.push({ kind: 'class', name: cls });
    const victim = await admin.create<PersistentVolumeClaim>(Resources.persistentVolumeClaims, pvc(ns, 'c', '1Gi', { class: cls, annotations: { [SEL]: name('ghost') } }));
    // The tenant's own namespace, the victim's uid copied, a year ahead: "the provisioner is working on it".
    const tenant = await createTestNamespace(admin, 'tenant-');
    await admin.create<Event>(Resources.events, forgedProvisioningEvent(tenant, 'c', victim.metadata!.uid!));
    await eventually(async () => expect((await getPVC(admin, ns, 'c')).metadata?.annotations?.[SEL]).to.equal(undefined), 60_000);
    await admin.delete(Resources.namespaces, tenant).catch(() => undefined);
  });

  it('a selected node no node can have (empty, or a path under a real node): removed as gone, with a Warning, never read as the node list or that node', async function () {
    // GET nodes/ answers the node list and nodes/<n>%2Fstatus node n's status: each used to keep the
    // stale annotation for ever (the removal refuted at every try).
    const cls = name('wffc-paths');
    await admin.create(Resources.storageClasses, { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: cls }, provisioner: 'example.com/none', volumeBindingMode: 'WaitForFirstConsumer' });
    created.push({ kind: 'class', name: cls });
    const real = name('real');
    await admin.create<Node>(Resources.nodes, { apiVersion: 'v1', kind: 'Node', metadata: { name: real } });
    created.push({ kind: 'node', name: real });
    const before = await eventsCounted('Warning', 'SelectedNodeGone');
    const claims = { empty: '', status: `${real}/status` };
    for (const [c, node] of Object.entries(claims)) await admin.create<PersistentVolumeClaim>(Resources.persistentVolumeClaims, pvc(ns, c, '1Gi', { class: cls, annotations: { [SEL]: node } }));
    for (const c of Object.keys(claims)) await eventually(async () => expect((await getPVC(admin, ns, c)).metadata?.annotations?.[SEL], c).to.equal(undefined), 60_000);
    expect(await eventsCounted('Warning', 'SelectedNodeGone')).to.be.at.least(before + 2);
  });

  it('huge values: a 100,000-character selected node is answered with a bounded Event; a claim carrying 200 kB of annotations still binds', async function () {
    const cls = name('wffc');
    await admin.create(Resources.storageClasses, { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: cls }, provisioner: 'example.com/none', volumeBindingMode: 'WaitForFirstConsumer' });
    created.push({ kind: 'class', name: cls });
    const before = await eventsCounted('Warning', 'SelectedNodeGone');
    const c = await admin.create<PersistentVolumeClaim>(Resources.persistentVolumeClaims, pvc(ns, 'far', '1Gi', { class: cls, annotations: { [SEL]: 'n'.repeat(100_000) } }));
    await answered(c, 'Warning', 'SelectedNodeGone', before);
    expect((await eventFor(admin, c, 'SelectedNodeGone')).message?.length).to.be.at.most(1024);
    await eventually(async () => expect((await getPVC(admin, ns, 'far')).metadata?.annotations?.[SEL]).to.equal(undefined));

    await volume(pv(name('plain'), '1Gi', { class: name('plain') }));
    await admin.create(Resources.persistentVolumeClaims, pvc(ns, 'heavy', '1Gi', { class: name('plain'), annotations: { 'example.com/blob': 'x'.repeat(200_000) } }));
    await eventually(async () => expect((await getPVC(admin, ns, 'heavy')).status?.phase).to.equal('Bound'));
  });

  it('a bind the API server refuses (a ValidatingAdmissionPolicy on claim updates): the claim stays Pending with a FailedBinding Warning naming the refusal, the volume waits pre-bound; once allowed, bound', async function () {
    const lift = await denyingPolicy(admin, `${ns}-no-claim-updates`, {
      rule: { operations: ['UPDATE'], resources: ['persistentvolumeclaims'] },
      validation: { expression: 'false', message: 'claims here are frozen' },
      matchResources: { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns } } },
    });
    try {
      // Policies take effect within a second or so: a claim update refused shows it.
      await admin.create(Resources.persistentVolumeClaims, pvc(ns, 'probe', '1Gi', { class: name('none') }));
      await untilRefused(() => admin.patch(Resources.persistentVolumeClaims, 'probe', ns, 'merge', { metadata: { labels: { probe: 'x' } } }, { dryRun: true }), 'claims here are frozen', 'claim updates refused');
      const before = await eventsCounted('Warning', 'FailedBinding');
      await volume(pv(name('frozen'), '1Gi', { class: name('frozen') }));
      const c = await admin.create<PersistentVolumeClaim>(Resources.persistentVolumeClaims, pvc(ns, 'c', '1Gi', { class: name('frozen') }));
      await answered(c, 'Warning', 'FailedBinding', before);
      expect((await eventFor(admin, c, 'FailedBinding')).message).to.match(new RegExp(`binding to volume ${name('frozen')} was refused by the API server; retrying: .*claims here are frozen`));
      const now = await getPVC(admin, ns, 'c');
      expect([now.status?.phase, now.spec?.volumeName]).to.deep.equal(['Pending', undefined]);
      expect((await getPV(admin, name('frozen'))).spec?.claimRef?.uid, 'the volume waits for the claim it was given').to.equal(c.metadata?.uid);
    } finally {
      await lift();
    }
    await eventually(async () => expect((await getPVC(admin, ns, 'c')).status?.phase).to.equal('Bound'), 60_000);
    expect((await getPVC(admin, ns, 'c')).spec?.volumeName).to.equal(name('frozen'));
  });

  it("a volume's release the API server refuses (a ValidatingAdmissionPolicy on volume status): an UpdateRefused Warning on the volume naming the refusal; once allowed, Released", async function () {
    const held = name('held');
    const probe = name('held-probe');
    await volume(pv(held, '1Gi', { class: name('held') }));
    await volume(pv(probe, '1Gi', { class: name('none') }));
    await admin.create(Resources.persistentVolumeClaims, pvc(ns, 'c', '1Gi', { class: name('held') }));
    await eventually(async () => expect((await getPV(admin, held)).status?.phase).to.equal('Bound'), 60_000);
    const message = 'volumes here are not released';
    const lift = await denyingPolicy(admin, `${ns}-no-release`, {
      rule: { operations: ['UPDATE'], resources: ['persistentvolumes/status'] },
      validation: { expression: `!(object.metadata.name in ${JSON.stringify([held, probe])}) || object.status.phase != 'Released'`, message },
    });
    try {
      await untilRefused(() => admin.patch(Resources.persistentVolumes, probe, undefined, 'merge', { status: { phase: 'Released' } }, { subresource: 'status', dryRun: true }), message, 'releases refused');
      const before = await eventsCounted('Warning', 'UpdateRefused');
      await deleteNow(admin, Resources.persistentVolumeClaims, 'c', ns);
      const v = await getPV(admin, held);
      await answered(v, 'Warning', 'UpdateRefused', before);
      expect((await eventFor(admin, v, 'UpdateRefused')).message).to.match(new RegExp(`a request of its sync was refused by the API server; retrying: .*${message}`));
      expect((await getPV(admin, held)).status?.phase).to.equal('Bound');
    } finally {
      await lift();
    }
    await eventually(async () => expect((await getPV(admin, held)).status?.phase).to.equal('Released'), 60_000);
  });

  it('objects deleted while being processed: claims and volumes removed mid-binding leave no claim mis-bound or lost', async function () {
    const cls = name('churn');
    const n = 30;
    // Twice as many volumes as claims: a claim bound before its deletion leaves its volume Released
    // (Retain), so with one volume per claim the survivors could run out of volumes when more than
    // a third of the deleted claims were bound first (a legitimate Pending, which failed a clean run
    // on a loaded machine); with 2n, the 15 survivors always find one (60 - 10 deleted - 15 taken).
    const supply = 2 * n;
    for (let i = 0; i < supply; i++) await volume(pv(name(`v${i}`), '1Gi', { class: cls }));
    for (let i = 0; i < supply; i++) await available(`v${i}`);
    // Every other claim is deleted right after it is created (its protection finalizer removed, as
    // the controller does once no pod uses it), and every third volume is deleted while claims
    // arrive (it stays Terminating under its protection finalizer, as in a cluster): the binder
    // meets 404s, conflicts and volumes going away between its two writes of a binding.
    await Promise.all(
      Array.from({ length: n }, async (_, i) => {
        await admin.create(Resources.persistentVolumeClaims, pvc(ns, `c${i}`, '1Gi', { class: cls }));
        if (i % 2 === 0) await deleteNow(admin, Resources.persistentVolumeClaims, `c${i}`, ns);
        if (i % 3 === 0) await admin.delete(Resources.persistentVolumes, name(`v${i}`));
      }),
    );
    // Every surviving claim is Bound to a volume that names it back, none is Lost, no volume serves two.
    await eventually(async () => {
      const claims = (await admin.list<PersistentVolumeClaim>(Resources.persistentVolumeClaims, { namespace: ns })).items.filter((c) => !c.metadata?.deletionTimestamp);
      const free = (await admin.list<PersistentVolume>(Resources.persistentVolumes)).items.filter((v) => v.metadata?.name?.startsWith(`${ns}-`) && v.status?.phase === 'Available' && !v.metadata?.deletionTimestamp).length;
      for (const c of claims) expect(c.status?.phase, `${c.metadata?.name} (${free} volumes Available)`).to.equal('Bound');
    }, 60_000);
    const claims = (await admin.list<PersistentVolumeClaim>(Resources.persistentVolumeClaims, { namespace: ns })).items;
    const volumes = (await admin.list<PersistentVolume>(Resources.persistentVolumes)).items.filter((v) => v.metadata?.name?.startsWith(`${ns}-`));
    expect(bindingViolations(claims, volumes)).to.deep.equal([]);
  });
});

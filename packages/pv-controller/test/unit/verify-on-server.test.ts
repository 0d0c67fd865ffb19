import { expect } from 'chai';
import fc from 'fast-check';
import { KubeApiError, projectPod, slimEvent } from '@topovol/shared';
import type { Event, KubeClient, Node, PersistentVolume, PersistentVolumeClaim, Pod } from '@topovol/shared';
import type { BinderAction, SelectedNodeConfirmation } from '../../src/binder/actions.js';
import { lostRefuted, placedPodRefuted, releaseRefuted, selectedNodeIssueRefuted, verifyOnServer } from '../../src/binder/verify-on-server.js';
import type { ServerView } from '../../src/binder/verify-on-server.js';
import { decideBoundClaim } from '../../src/binder/decide-bound-claim.js';
import { decideVolume } from '../../src/binder/decide-volume.js';
import { world } from './world-fixture.js';
import { ProvisioningActivity } from '../../src/binder/provisioning-activity.js';

// What the server says, against what the cache-made decision needs before Released or a selected-node's removal.
const volume: PersistentVolume = { metadata: { name: 'v1' }, spec: { claimRef: { namespace: 'ns', name: 'c', uid: 'uid-c' } } };
const claimOnServer = (uid: string, volumeName?: string): PersistentVolumeClaim => ({ metadata: { name: 'c', namespace: 'ns', uid }, spec: { volumeName } });
const claim: PersistentVolumeClaim = { metadata: { name: 'c', namespace: 'ns', uid: 'uid-c', annotations: { 'volume.kubernetes.io/selected-node': 'n1' } }, spec: {} };
const nodeOnServer = (labels: Record<string, string> = {}): Node => ({ metadata: { name: 'n1', labels } });
const podOnServer = (nodeName?: string, phase = 'Pending'): Pod => ({ metadata: { name: 'p', namespace: 'ns' }, spec: { nodeName, containers: [], volumes: [{ name: 'v', persistentVolumeClaim: { claimName: 'c' } }] }, status: { phase } });
const zoneA = [{ matchLabelExpressions: [{ key: 'zone', values: ['a'] }] }];
const NOW = Date.parse('2026-11-29T02:00:00Z');
const GRACE = 600_000;
/** An external-provisioner's per-attempt Event on a claim, last seen at `at`. */
const provisioningEvent = (at: number, over: { namespace?: string; name?: string; uid?: string } = {}): Event => ({
  metadata: { name: `c.${at}`, namespace: over.namespace ?? 'ns' },
  involvedObject: { kind: 'PersistentVolumeClaim', namespace: over.namespace ?? 'ns', name: over.name ?? 'c', uid: over.uid ?? 'uid-c' },
  reason: 'Provisioning',
  lastTimestamp: new Date(at).toISOString(),
});

describe('releaseRefuted', function () {
  const provisionedDelete: PersistentVolume = { ...volume, metadata: { name: 'v1', annotations: { 'pv.kubernetes.io/provisioned-by': 'csi.test' } }, spec: { ...volume.spec, persistentVolumeReclaimPolicy: 'Delete' } };
  const provisionedRetain: PersistentVolume = { ...provisionedDelete, spec: { ...volume.spec, persistentVolumeReclaimPolicy: 'Retain' } };
  const staticDelete: PersistentVolume = { ...volume, spec: { ...volume.spec, persistentVolumeReclaimPolicy: 'Delete' } };
  const cases: { name: string; live: PersistentVolumeClaim | undefined; refuted: boolean; volume?: PersistentVolume }[] = [
    { name: 'the claim is gone on the server too: released', live: undefined, refuted: false },
    { name: 're-created under the same name (another uid): released', live: claimOnServer('uid-other', 'v1'), refuted: false },
    { name: 'bound to another volume, this one provisioned for it with Delete: released', live: claimOnServer('uid-c', 'v2'), refuted: false, volume: provisionedDelete },
    { name: 'bound to another volume, this one static (no provisioned-by) with Delete: refused (it is unbound, not released)', live: claimOnServer('uid-c', 'v2'), refuted: true, volume: staticDelete },
    { name: 'bound to another volume, this one provisioned with Retain: refused (unbound)', live: claimOnServer('uid-c', 'v2'), refuted: true, volume: provisionedRetain },
    { name: 'still there, bound to this volume: refused', live: claimOnServer('uid-c', 'v1'), refuted: true },
    { name: 'still there, not bound yet: refused', live: claimOnServer('uid-c'), refuted: true },
  ];
  for (const c of cases) it(c.name, () => expect(releaseRefuted(c.volume ?? volume, c.live) !== undefined).to.equal(c.refuted));

  it('a claimRef naming no claim that can exist: refused without a read, whatever the server would answer', async function () {
    // kube-apiserver answers a read of `x%2Fstatus` with claim x (another uid: it would pass for the
    // claim re-created) and one of `data%251` with a 400; whatever it answers, nothing is read.
    for (const ref of [{ namespace: 'ns', name: 'data%1' }, { namespace: 'ns', name: 'x/status' }, { namespace: 'Bad_NS', name: 'c' }, { namespace: 'ns', name: 'C' }]) {
      const v: PersistentVolume = { metadata: { name: 'v1' }, spec: { claimRef: { ...ref, uid: 'uid-c' }, persistentVolumeReclaimPolicy: 'Delete' } };
      expect(releaseRefuted(v, undefined), ref.name).to.match(/which no (claim|namespace) can have .*; not releasing/);
      const asked: string[] = [];
      const client = { get: (_r: unknown, name: string) => (asked.push(name), Promise.reject(new KubeApiError(404, { kind: 'Status', reason: 'NotFound', details: { name, kind: 'persistentvolumeclaims' } }))) } as unknown as KubeClient;
      const found = await verifyOnServer(client, [{ kind: 'volumePhase', volume: v, phase: 'Released' }]);
      expect(found?.why, ref.name).to.match(/not releasing/);
      expect(asked, ref.name).to.deep.equal([]);
    }
  });

  it('property: on the server\'s claim it releases exactly what decideVolume releases when its cache has that claim', function () {
    const volumes = fc.record({ provisioned: fc.boolean(), policy: fc.constantFrom('Delete', 'Retain', 'Recycle') }).map(
      (g): PersistentVolume => ({ metadata: { name: 'v1', annotations: g.provisioned ? { 'pv.kubernetes.io/provisioned-by': 'csi.test' } : {} }, spec: { ...volume.spec, persistentVolumeReclaimPolicy: g.policy } }),
    );
    const live = fc.option(fc.record({ uid: fc.constantFrom('uid-c', 'uid-other'), volumeName: fc.option(fc.constantFrom('v1', 'v2'), { nil: undefined }) }), { nil: undefined });
    fc.assert(
      fc.property(volumes, live, (v, g) => {
        const claimNow = g && claimOnServer(g.uid, g.volumeName);
        const releases = decideVolume(v, world({ volumes: [v], claims: claimNow ? [claimNow] : [] })).some((a) => a.kind === 'volumePhase' && a.phase === 'Released');
        expect(releaseRefuted(v, claimNow) === undefined, JSON.stringify(g)).to.equal(releases);
      }),
    );
  });

  it('never lets a volume be released while the server has its claim (same uid) bound to it or to nothing', function () {
    fc.assert(
      fc.property(fc.option(fc.record({ uid: fc.constantFrom('uid-c', 'uid-other'), volumeName: fc.option(fc.constantFrom('v1', 'v2'), { nil: undefined }) }), { nil: undefined }), (g) => {
        const live = g && claimOnServer(g.uid, g.volumeName);
        const holds = live?.metadata?.uid === 'uid-c' && (live.spec?.volumeName ?? 'v1') === 'v1';
        if (holds) expect(releaseRefuted(volume, live)).to.not.equal(undefined);
      }),
    );
  });
});

describe('selectedNodeIssueRefuted', function () {
  const cases: { name: string; confirm: SelectedNodeConfirmation; view: ServerView; refuted: boolean }[] = [
    { name: 'gone: the server has no such node either → remove', confirm: { issue: 'gone', node: 'n1', quietSince: NOW - GRACE }, view: { kind: 'node', node: undefined, provisioning: [] }, refuted: false },
    { name: 'gone: the server has the node (the cache had not seen it) → keep', confirm: { issue: 'gone', node: 'n1', quietSince: NOW - GRACE }, view: { kind: 'node', node: nodeOnServer(), provisioning: [] }, refuted: true },
    { name: 'notAllowed: the server\'s labels are outside allowedTopologies too → remove', confirm: { issue: 'notAllowed', node: 'n1', allowedTopologies: zoneA, quietSince: -Infinity }, view: { kind: 'node', node: nodeOnServer({ zone: 'b' }), provisioning: [] }, refuted: false },
    { name: 'notAllowed: the server\'s labels match (the cache had old ones) → keep', confirm: { issue: 'notAllowed', node: 'n1', allowedTopologies: zoneA, quietSince: -Infinity }, view: { kind: 'node', node: nodeOnServer({ zone: 'a' }), provisioning: [] }, refuted: true },
    { name: 'notAllowed: the node is not on the server → keep, decided again', confirm: { issue: 'notAllowed', node: 'n1', allowedTopologies: zoneA, quietSince: -Infinity }, view: { kind: 'node', node: undefined, provisioning: [] }, refuted: true },
    { name: 'noConsumer: no pod on the server uses the claim → remove', confirm: { issue: 'noConsumer', node: 'n1', quietSince: -Infinity }, view: { kind: 'pods', pods: [], provisioning: [] }, refuted: false },
    { name: 'noConsumer: a pod elsewhere → remove', confirm: { issue: 'noConsumer', node: 'n1', quietSince: -Infinity }, view: { kind: 'pods', pods: [podOnServer('n2', 'Running')], provisioning: [] }, refuted: false },
    { name: 'noConsumer: an unscheduled pod on the server (the cache had not seen it) → keep', confirm: { issue: 'noConsumer', node: 'n1', quietSince: -Infinity }, view: { kind: 'pods', pods: [podOnServer()], provisioning: [] }, refuted: true },
    { name: 'noConsumer: a pod placed on the selected node → keep', confirm: { issue: 'noConsumer', node: 'n1', quietSince: -Infinity }, view: { kind: 'pods', pods: [podOnServer('n1', 'Running')], provisioning: [] }, refuted: true },
  ];
  for (const c of cases) it(c.name, () => expect(selectedNodeIssueRefuted(claim, c.confirm, c.view) !== undefined).to.equal(c.refuted));

  // The cache's Events watch can lag or be relisting: the server's Provisioning Events of the claim
  // must agree with the quiet the decision saw, or a CreateVolume may be running on that node.
  const gone: SelectedNodeConfirmation = { issue: 'gone', node: 'n1', quietSince: NOW - GRACE };
  const noConsumer: SelectedNodeConfirmation = { issue: 'noConsumer', node: 'n1', quietSince: -Infinity };
  const viewOf = (confirm: SelectedNodeConfirmation, provisioning: number[]): ServerView =>
    confirm.issue === 'gone' ? { kind: 'node', node: undefined, provisioning } : { kind: 'pods', pods: [], provisioning };
  const activity: { name: string; confirm: SelectedNodeConfirmation; times: number[]; refuted: boolean }[] = [
    { name: 'gone: a Provisioning Event active within the grace on the server (not in the cache) → keep', confirm: gone, times: [NOW - 1000], refuted: true },
    { name: 'gone: the newest Provisioning Event went quiet before the grace → remove (the provisioner does the same)', confirm: gone, times: [NOW - GRACE - 1000], refuted: false },
    { name: 'noConsumer: any Provisioning Event at all → keep (only that provisioner may give the node back)', confirm: noConsumer, times: [NOW - 10 * GRACE], refuted: true },
    { name: 'no Provisioning Event on the server → remove', confirm: noConsumer, times: [], refuted: false },
  ];
  for (const c of activity) {
    it(c.name, function () {
      const why = selectedNodeIssueRefuted(claim, c.confirm, viewOf(c.confirm, c.times));
      expect(why !== undefined, why).to.equal(c.refuted);
      if (c.refuted) expect(why).to.match(/the provisioner has been at work/);
    });
  }

  // The decision ruled out a volume pre-bound to the claim on the cache's word: provisioning that
  // finished while the PV watch lagged shows on the server under the volume's conventional name.
  const made = (uid: string | undefined): PersistentVolume => ({ metadata: { name: `pvc-${uid ?? 'none'}` }, spec: { claimRef: uid ? { namespace: 'ns', name: 'c', uid } : undefined } });
  const removable: Extract<ServerView, { kind: 'node' | 'pods' }>[] = [
    { kind: 'node', node: undefined, provisioning: [] },
    { kind: 'pods', pods: [], provisioning: [] },
  ];
  for (const view of removable) {
    const confirm: SelectedNodeConfirmation = view.kind === 'node' ? gone : noConsumer;
    it(`${confirm.issue}: a volume provisioned for the claim on the server (not in the cache) → keep; one for another claim or none → remove`, function () {
      expect(selectedNodeIssueRefuted(claim, confirm, { ...view, provisioned: [made('uid-c')] })).to.match(/provisioned for the claim is on the server/);
      // Any of the names read: a custom prefix's volume behind a stranger under the default name.
      expect(selectedNodeIssueRefuted(claim, confirm, { ...view, provisioned: [made('uid-old'), made('uid-c')] })).to.match(/provisioned for the claim is on the server/);
      expect(selectedNodeIssueRefuted(claim, confirm, { ...view, provisioned: [made('uid-old')] })).to.equal(undefined);
      expect(selectedNodeIssueRefuted(claim, confirm, { ...view, provisioned: [made(undefined)] })).to.equal(undefined);
      expect(selectedNodeIssueRefuted(claim, confirm, { ...view, provisioned: [] })).to.equal(undefined);
      expect(selectedNodeIssueRefuted(claim, confirm, { ...view, provisioned: undefined })).to.equal(undefined);
    });
  }

  it('property: never removes while the server shows provisioning newer than the quiet the decision required, ahead of now too', function () {
    fc.assert(
      fc.property(fc.constantFrom<SelectedNodeConfirmation>(gone, noConsumer), fc.array(fc.integer({ min: -20 * GRACE, max: 20 * GRACE }), { maxLength: 4 }), (confirm, ages) => {
        const times = ages.map((a) => NOW + a);
        const newer = times.some((t) => t > confirm.quietSince);
        expect(selectedNodeIssueRefuted(claim, confirm, viewOf(confirm, times)) !== undefined).to.equal(newer);
      }),
    );
  });
});

describe("verifyOnServer: the claim's Provisioning Events on the server", function () {
  /** A client whose lists answer these Events (and no pods), recording what it was asked. */
  const listing = (events: Event[], asked: unknown[] = []): KubeClient =>
    ({
      get: () => Promise.reject(new KubeApiError(404, { kind: 'Status', reason: 'NotFound', message: 'nodes "n1" not found', details: { name: 'n1', kind: 'nodes' } })),
      list: (r: { plural: string }, o: unknown, transform?: (x: Event) => Event) => {
        asked.push({ plural: r.plural, o });
        return Promise.resolve({ items: r.plural === 'events' ? events.map((e) => (transform ? transform(e) : e)) : [] });
      },
    }) as unknown as KubeClient;
  const unselect = (confirm: SelectedNodeConfirmation): BinderAction[] => [{ kind: 'annotateClaim', claim, remove: ['volume.kubernetes.io/selected-node'], confirm }];
  const gone: SelectedNodeConfirmation = { issue: 'gone', node: 'n1', quietSince: NOW - GRACE };

  it("lists only the claim's namespace, by its uid, and counts only Events there that name it", async function () {
    const asked: unknown[] = [];
    const others = [provisioningEvent(NOW, { name: 'other', uid: 'uid-other' }), provisioningEvent(NOW, { namespace: 'evil' }), provisioningEvent(NOW, { uid: 'uid-old' })];
    expect(await verifyOnServer(listing(others, asked), unselect(gone))).to.equal(undefined);
    expect(asked).to.deep.include({ plural: 'events', o: { namespace: 'ns', fieldSelector: 'involvedObject.kind=PersistentVolumeClaim,reason=Provisioning,involvedObject.uid=uid-c' } });
    expect((await verifyOnServer(listing([provisioningEvent(NOW)]), unselect(gone)))?.why).to.match(/the provisioner has been at work/);
  });

  it('lists the volume external-provisioner names for the claim (pvc-<uid>) by name, never all volumes', async function () {
    const asked: unknown[] = [];
    await verifyOnServer(listing([], asked), unselect(gone));
    expect(asked).to.deep.include({ plural: 'persistentvolumes', o: { fieldSelector: 'metadata.name=pvc-uid-c' } });
    expect(asked.filter((a) => (a as { plural: string }).plural === 'persistentvolumes')).to.have.length(1);
  });

  it('lists each name --provisioned-volume-names gives, by name, and keeps the annotation when any of them is made for the claim', async function () {
    const asked: unknown[] = [];
    const volumeNames = [{ prefix: 'pvc' }, { prefix: 'csi-vol', uuidLength: 8 }];
    await verifyOnServer(listing([], asked), unselect(gone), { volumeNames });
    const volumeReads = asked.filter((a) => (a as { plural: string }).plural === 'persistentvolumes');
    expect(volumeReads).to.deep.equal([
      { plural: 'persistentvolumes', o: { fieldSelector: 'metadata.name=pvc-uid-c' } },
      { plural: 'persistentvolumes', o: { fieldSelector: 'metadata.name=csi-vol-uidc' } },
    ]);
    const made: PersistentVolume = { metadata: { name: 'csi-vol-uidc' }, spec: { claimRef: { namespace: 'ns', name: 'c', uid: 'uid-c' } } };
    const withVolume = {
      ...listing([]),
      list: (r: { plural: string }, o: { fieldSelector?: string }) =>
        Promise.resolve({ items: r.plural === 'persistentvolumes' && o.fieldSelector === 'metadata.name=csi-vol-uidc' ? [made] : [] }),
    } as unknown as KubeClient;
    expect((await verifyOnServer(withVolume, unselect(gone), { volumeNames }))?.why).to.match(/volume csi-vol-uidc provisioned for the claim is on the server/);
    // Not listed: the default name only, and that volume is not seen.
    expect(await verifyOnServer(withVolume, unselect(gone))).to.equal(undefined);
  });

  it("reads each Event's activity through the given clock: a version this process never saw counts as now, whatever its timestamp says", async function () {
    // The provisioner's clock is an hour behind: its Event says an hour ago.
    const behind = provisioningEvent(NOW - 3_600_000);
    expect(await verifyOnServer(listing([behind]), unselect(gone))).to.equal(undefined);
    const tracker = new ProvisioningActivity();
    expect((await verifyOnServer(listing([behind]), unselect(gone), { timeOf: (e) => tracker.timeOf(e, NOW) }))?.why).to.match(/the provisioner has been at work/);
  });

  it('a selected node no node can have ("", a path, an escape) is gone without a node read; the provisioning checks still run', async function () {
    // GET /api/v1/nodes/ answers the node list, nodes/n1%2Fstatus node n1's status: either refuted the removal for ever.
    for (const node of ['', 'n1/status', 'x/y', '%2F', 'N1']) {
      const asked: unknown[] = [];
      const client = { ...listing([], asked), get: () => expect.fail(`read node ${JSON.stringify(node)}`) } as unknown as KubeClient;
      const confirm: SelectedNodeConfirmation = { ...gone, node };
      expect(await verifyOnServer(client, unselect(confirm)), JSON.stringify(node)).to.equal(undefined);
      expect(asked.map((a) => (a as { plural: string }).plural).sort(), JSON.stringify(node)).to.deep.equal(['events', 'persistentvolumes']);
      const busy = { ...listing([provisioningEvent(NOW)]), get: () => expect.fail('read a node') } as unknown as KubeClient;
      expect((await verifyOnServer(busy, unselect(confirm)))?.why, JSON.stringify(node)).to.match(/the provisioner has been at work/);
    }
  });

  it('counts the latest of more Provisioning Events than a spread can take (a tenant writes as many as it likes)', async function () {
    const many = Array.from({ length: 200_000 }, (_, i) => provisioningEvent(NOW - GRACE - 1_000 + (i === 123_456 ? 2_000 : 0)));
    expect((await verifyOnServer(listing(many), unselect(gone)))?.why).to.match(/the provisioner has been at work/);
    expect(await verifyOnServer(listing(many.filter((_, i) => i !== 123_456)), unselect(gone))).to.equal(undefined);
  });

  it('refuses to list for a claim without a namespace or uid (never cluster-wide)', async function () {
    const bare: PersistentVolumeClaim = { metadata: { name: 'c' }, spec: {} };
    await verifyOnServer(listing([]), [{ kind: 'annotateClaim', claim: bare, remove: ['volume.kubernetes.io/selected-node'], confirm: gone }]).then(
      () => expect.fail('listed for a claim without namespace or uid'),
      (err: unknown) => expect(String(err)).to.match(/without namespace, name or uid/),
    );
  });
});

describe('placedPodRefuted', function () {
  const placed = { namespace: 'ns', name: 'p', uid: 'uid-p', nodeName: 'n1' };
  const livePod = (over: { uid?: string; nodeName?: string; phase?: string; deleting?: boolean } = {}): Pod => ({
    metadata: { name: 'p', namespace: 'ns', uid: over.uid ?? 'uid-p', deletionTimestamp: over.deleting ? '2026-11-27T00:00:00Z' : undefined },
    spec: { nodeName: over.nodeName ?? 'n1', containers: [] },
    status: { phase: over.phase ?? 'Pending' },
  });
  const cases: { name: string; pod: Pod | undefined; refuted: boolean }[] = [
    { name: 'there, on that node: bind or select it', pod: livePod(), refuted: false },
    { name: 'gone from the server (the cache still had it): decided again', pod: undefined, refuted: true },
    { name: 're-created under the same name (another uid): decided again', pod: livePod({ uid: 'other' }), refuted: true },
    { name: 'being deleted: decided again', pod: livePod({ deleting: true }), refuted: true },
    { name: 'finished (Succeeded): decided again', pod: livePod({ phase: 'Succeeded' }), refuted: true },
    { name: 'on another node on the server: decided again', pod: livePod({ nodeName: 'n2' }), refuted: true },
  ];
  for (const c of cases) it(c.name, () => expect(placedPodRefuted(placed, { kind: 'pod', pod: c.pod }) !== undefined).to.equal(c.refuted));

  it('verifyOnServer reads the placed pod before a binding or a selected node made for it, and stops the plan there when it is gone', async function () {
    const v: PersistentVolume = { metadata: { name: 'v1' }, spec: {} };
    const c: PersistentVolumeClaim = { metadata: { name: 'c', namespace: 'ns', uid: 'uid-c' }, spec: {} };
    const reads: string[] = [];
    const client = {
      list: (r: { plural: string }, opts: { namespace?: string }) => {
        reads.push(`${r.plural} in ${opts.namespace}`);
        return Promise.resolve({ items: [] });
      },
      get: (r: { plural: string }, name: string, ns?: string) => {
        reads.push(`${ns}/${name}`);
        return Promise.reject(new KubeApiError(404, { reason: 'NotFound', message: `${r.plural} "${name}" not found`, details: { name, kind: r.plural } }));
      },
    } as unknown as KubeClient;
    const plan: BinderAction[] = [
      { kind: 'bindVolume', volume: v, claim: c, boundByController: true, forPlacedPod: placed },
      { kind: 'bindClaim', claim: c, volume: v, boundByController: true },
    ];
    const refuted = await verifyOnServer(client, plan);
    expect(reads).to.deep.equal(['pods in ns', 'pods in ns', 'ns/c']);
    expect(refuted?.index).to.equal(0);
    expect(refuted?.why).to.match(/pod ns\/p, placed on node "n1", is not on the server/);
    // Without the placed pod, a binding needs no read.
    reads.length = 0;
    expect(await verifyOnServer(client, [{ ...plan[0]!, forPlacedPod: undefined } as BinderAction, plan[1]!])).to.equal(undefined);
    expect(reads).to.deep.equal([]);
  });
});

describe('verifyOnServer: the claim of a binding or a selected node for a placed pod', function () {
  // The cache may not show the claim's delete yet: pvc-protection holds a claim while a pod names
  // it, and a volume bound to it now would be Released (with Delete, deleted) once the pod goes.
  const placed = { namespace: 'ns', name: 'p', uid: 'uid-p', nodeName: 'n1' };
  const v: PersistentVolume = { metadata: { name: 'v1' }, spec: {} };
  const c: PersistentVolumeClaim = { metadata: { name: 'c', namespace: 'ns', uid: 'uid-c' }, spec: {} };
  const livePod: Pod = { metadata: { name: 'p', namespace: 'ns', uid: 'uid-p' }, spec: { nodeName: 'n1', containers: [] }, status: { phase: 'Pending' } };
  const serving = (claimOnServer: PersistentVolumeClaim | undefined, otherPods: Pod[] = []): KubeClient =>
    ({
      // As kube-apiserver's field selectors for pods: by name, or those with no node set.
      list: (_r: unknown, opts: { fieldSelector?: string }) =>
        Promise.resolve({
          items: [livePod, ...otherPods].filter((p) => (opts.fieldSelector === 'spec.nodeName=' ? !p.spec?.nodeName : opts.fieldSelector === `metadata.name=${p.metadata?.name}`)),
        }),
      get: (r: { plural: string }, name: string) => (claimOnServer ? Promise.resolve(claimOnServer) : Promise.reject(new KubeApiError(404, { reason: 'NotFound', details: { name, kind: r.plural } }))),
    }) as unknown as KubeClient;
  const podOfC = (name: string, over: { nodeName?: string; phase?: string; deleting?: boolean; claimName?: string } = {}): Pod => ({
    metadata: { name, namespace: 'ns', uid: `uid-${name}`, deletionTimestamp: over.deleting ? '2026-11-28T00:00:00Z' : undefined },
    spec: { nodeName: over.nodeName, containers: [], volumes: [{ name: 'data', persistentVolumeClaim: { claimName: over.claimName ?? 'c' } }] },
    status: { phase: over.phase ?? 'Pending' },
  });
  const plans: [string, BinderAction[]][] = [
    ['a binding', [{ kind: 'bindVolume', volume: v, claim: c, boundByController: true, forPlacedPod: placed }]],
    ['a selected node', [{ kind: 'annotateClaim', claim: c, set: { 'volume.kubernetes.io/selected-node': 'n1' }, forPlacedPod: placed }]],
  ];
  for (const [what, plan] of plans) {
    it(`${what}: confirmed while the claim is there; refuted once it is being deleted, gone or re-created`, async function () {
      expect(await verifyOnServer(serving(c), plan)).to.equal(undefined);
      expect((await verifyOnServer(serving({ ...c, metadata: { ...c.metadata, deletionTimestamp: '2026-11-28T00:00:00Z' } }), plan))?.why).to.match(/claim ns\/c of pod ns\/p, placed on node "n1", is being deleted on the server/);
      expect((await verifyOnServer(serving(undefined), plan))?.why).to.match(/the claim of pod ns\/p, placed on node "n1", is not on the server/);
      expect((await verifyOnServer(serving({ ...c, metadata: { ...c.metadata, uid: 'uid-new' } }), plan))?.why).to.match(/is not on the server/);
    });

    it(`${what}: refuted while another pod of the claim waits for the scheduler on the server (the cache may not show it yet)`, async function () {
      expect((await verifyOnServer(serving(c, [podOfC('q')]), plan))?.why).to.match(/pod ns\/q of claim ns\/c waits for the scheduler on the server/);
      // Not waiting for the scheduler: placed too, ending, finished, or of another claim.
      const others = [podOfC('placed', { nodeName: 'n1' }), podOfC('ending', { deleting: true }), podOfC('done', { phase: 'Succeeded' }), podOfC('other', { claimName: 'd' })];
      expect(await verifyOnServer(serving(c, others), plan)).to.equal(undefined);
    });
  }
});

describe('verifyOnServer: a 404 that does not name the object', function () {
  // kube-apiserver's answer for an object that is not there names it; "404 page not found" from a
  // proxy or an ingress in front of it says nothing about the claim or the node.
  const namedNotFound = (kind: string, name: string): KubeApiError => new KubeApiError(404, { kind: 'Status', reason: 'NotFound', message: `${kind} "${name}" not found`, details: { name, kind } });
  const bare = (): KubeApiError => KubeApiError.fromResponse(404, '404 page not found');
  const answering = (err: () => KubeApiError): KubeClient => ({ get: () => Promise.reject(err()), list: () => Promise.resolve({ items: [] }) }) as unknown as KubeClient;
  const release: BinderAction[] = [{ kind: 'volumePhase', volume, phase: 'Released' }];
  const unselect: BinderAction[] = [{ kind: 'annotateClaim', claim, remove: ['volume.kubernetes.io/selected-node'], confirm: { issue: 'gone', node: 'n1', quietSince: NOW - GRACE } }];

  it('confirms a Released only on a 404 naming the claim; a bare 404 fails the check (retried), never releases', async function () {
    expect(await verifyOnServer(answering(() => namedNotFound('persistentvolumeclaims', 'c')), release)).to.equal(undefined);
    await verifyOnServer(answering(bare), release).then(
      () => expect.fail('a bare 404 confirmed the Released'),
      (err: unknown) => expect(err).to.be.instanceOf(KubeApiError),
    );
    await verifyOnServer(answering(() => namedNotFound('persistentvolumeclaims', 'other')), release).then(
      () => expect.fail('a 404 naming another claim confirmed the Released'),
      (err: unknown) => expect(err).to.be.instanceOf(KubeApiError),
    );
  });

  it("confirms a gone selected node only on a 404 naming the node; a bare 404 fails the check, the annotation stays", async function () {
    expect(await verifyOnServer(answering(() => namedNotFound('nodes', 'n1')), unselect)).to.equal(undefined);
    await verifyOnServer(answering(bare), unselect).then(
      () => expect.fail('a bare 404 confirmed the node gone'),
      (err: unknown) => expect(err).to.be.instanceOf(KubeApiError),
    );
  });
});

describe("verifyOnServer: a namespace's pods", function () {
  it('are listed projected as each page arrives (their writers decide their size), and still confirm a consumer', async function () {
    // (The fake answers every list with the pod; as an Event it names no claim, so it counts for nothing.)
    const transforms: unknown[] = [];
    const full: Pod = {
      metadata: { name: 'p', namespace: 'ns', uid: 'uid-p', annotations: { pad: 'x'.repeat(100_000) } },
      spec: { containers: [{ name: 'c', image: 'i', env: [{ name: 'PAD', value: 'y'.repeat(100_000) }] }], volumes: [{ name: 'd', persistentVolumeClaim: { claimName: 'c' } }] },
      status: { phase: 'Pending' },
    };
    const client = {
      list: (_r: unknown, _o: unknown, transform?: (o: Pod) => Pod) => {
        transforms.push(transform);
        return Promise.resolve({ items: [transform ? transform(full) : full] });
      },
    } as unknown as KubeClient;
    const c: PersistentVolumeClaim = { metadata: { name: 'c', namespace: 'ns', uid: 'uid-c' }, spec: {} };
    const refuted = await verifyOnServer(client, [{ kind: 'annotateClaim', claim: c, remove: ['volume.kubernetes.io/selected-node'], confirm: { issue: 'noConsumer', node: 'n1', quietSince: -Infinity } }]);
    // The claim's Provisioning Events too: anyone who may create Events in the namespace decides their size.
    expect(transforms).to.have.members([projectPod, slimEvent, undefined]);
    expect(refuted?.why).to.match(/has a pod that may use it after all/);
  });
});

describe('lostRefuted and verifyOnServer: a bound claim is marked Lost only when the server has no volume for it', function () {
  // The cache can miss a volume the server has (its watch behind, a relist under way): Lost would
  // clear the claim's capacity and access modes, keep new pods off it and say its data is lost.
  const bound: PersistentVolumeClaim = {
    metadata: { name: 'c', namespace: 'ns', uid: 'uid-c', annotations: { 'pv.kubernetes.io/bind-completed': 'yes' } },
    spec: { volumeName: 'v1', accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
    status: { phase: 'Bound', accessModes: ['ReadWriteOnce'], capacity: { storage: '1Gi' } },
  };
  const liveVolume = (refUid?: string): PersistentVolume => ({
    metadata: { name: 'v1' },
    spec: { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], claimRef: refUid ? { namespace: 'ns', name: 'c', uid: refUid } : undefined },
    status: { phase: 'Bound' },
  });
  const cases: { name: string; live: PersistentVolume | undefined; refuted: boolean }[] = [
    { name: 'the volume is gone on the server too: Lost', live: undefined, refuted: false },
    { name: 'bound to another claim on the server too: Lost (misbound)', live: liveVolume('uid-other'), refuted: false },
    { name: 'there, bound to the claim: refused', live: liveVolume('uid-c'), refuted: true },
    { name: 'there, bound to nothing (the claim would re-bind it): refused', live: liveVolume(), refuted: true },
  ];
  for (const c of cases) it(c.name, () => expect(lostRefuted(bound, c.live) !== undefined).to.equal(c.refuted));

  it("property: on the server's volume it lets Lost through exactly when decideBoundClaim, with that volume cached, declares it", function () {
    const live = fc.option(fc.option(fc.constantFrom('uid-c', 'uid-other'), { nil: undefined }).map(liveVolume), { nil: undefined });
    fc.assert(
      fc.property(live, fc.constantFrom('Bound', 'Pending'), (v, phase) => {
        const c = { ...bound, status: { ...bound.status, phase } };
        const lost = decideBoundClaim(c, world({ volumes: v ? [v] : [], claims: [c] })).some((a) => a.kind === 'claimPhase' && a.phase === 'Lost');
        expect(lostRefuted(c, v) === undefined, JSON.stringify(v)).to.equal(lost);
      }),
    );
  });

  it('verifyOnServer lists the volume by name before Lost (the role lists volumes, never gets one), and stops the plan when it is there', async function () {
    const asked: unknown[] = [];
    let items: PersistentVolume[] = [liveVolume('uid-c')];
    const client = {
      list: (r: { plural: string }, opts: unknown) => {
        asked.push([r.plural, opts]);
        return Promise.resolve({ items });
      },
    } as unknown as KubeClient;
    const plan: BinderAction[] = [
      { kind: 'claimPhase', claim: bound, phase: 'Lost' },
      { kind: 'event', target: bound, type: 'Warning', reason: 'ClaimLost', message: 'Bound claim has lost its PersistentVolume. Data on the volume is lost!' },
    ];
    const refuted = await verifyOnServer(client, plan);
    expect(asked).to.deep.equal([['persistentvolumes', { fieldSelector: 'metadata.name=v1' }]]);
    expect([refuted?.index, refuted?.check]).to.deep.equal([0, 'lost']);
    expect(refuted?.why).to.match(/volume v1 of claim ns\/c is on the server, bound to it/);
    items = [];
    expect(await verifyOnServer(client, plan)).to.equal(undefined);
    // A claim that names no volume is Lost on its own word: nothing to read.
    asked.length = 0;
    const unnamed = { ...bound, spec: { ...bound.spec, volumeName: undefined } };
    expect(await verifyOnServer(client, [{ kind: 'claimPhase', claim: unnamed, phase: 'Lost' }])).to.equal(undefined);
    // Nor one naming what no volume can be called (a selector would read it otherwise: "=v1" lists v1).
    for (const bad of ['=v1', 'v1,metadata.name!=x', 'V1', 'a\\b', `${'v'.repeat(253)}…`]) {
      expect(await verifyOnServer(client, [{ kind: 'claimPhase', claim: { ...bound, spec: { ...bound.spec, volumeName: bad } }, phase: 'Lost' }]), bad).to.equal(undefined);
    }
    expect(asked).to.deep.equal([]);
    // A list that answers another volume (whatever the selector did) refutes nothing.
    items = [{ ...liveVolume('uid-c'), metadata: { name: 'v2' } }];
    expect(await verifyOnServer(client, plan)).to.equal(undefined);
  });
});

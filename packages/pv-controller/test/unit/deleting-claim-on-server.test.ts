import { expect } from 'chai';
import fc from 'fast-check';
import type { KubeClient, PersistentVolumeClaim, Pod } from '@topovol/shared';
import type { BinderAction } from '../../src/binder/actions.js';
import { decideClaim } from '../../src/binder/decide-claim.js';
import { decideBoundClaim } from '../../src/binder/decide-bound-claim.js';
import { decidePreBoundClaim } from '../../src/binder/decide-pre-bound-claim.js';
import { freeVolumeHeldBack } from '../../src/binder/deleting-claim.js';
import { deletingClaimBindRefuted, verifyOnServer } from '../../src/binder/verify-on-server.js';
import { claim, pod, vol, world } from './world-fixture.js';

// A free volume goes to a claim being deleted only for a pod already on a node (deleting-claim.ts).
// The cache may still show such a pod after it went; the volume would then be Released, and with
// Delete deleted, once the claim goes. The server's pods decide before the volume is written.
const deleting = (c: PersistentVolumeClaim): PersistentVolumeClaim => ({ ...c, metadata: { ...c.metadata, deletionTimestamp: '2026-01-01T00:00:00Z', finalizers: ['example.com/hold'] } });
const c = deleting(claim('c', '1Gi'));
const free = vol('v', '1Gi', { persistentVolumeReclaimPolicy: 'Delete' });
const ending = (p: Pod): Pod => ({ ...p, metadata: { ...p.metadata, deletionTimestamp: '2026-01-01T00:00:00Z' } });

/** A client whose pod lists answer `pods` (as the server filters spec.nodeName!=), recording each list. */
function serverWith(pods: Pod[], reads: string[] = []): KubeClient {
  const list = (r: { plural: string }, opts: { namespace?: string; fieldSelector?: string }) => {
    reads.push(`${r.plural} in ${opts.namespace ?? '(all)'} ${opts.fieldSelector ?? ''}`.trim());
    return Promise.resolve({ items: r.plural === 'pods' ? pods.filter((p) => !!p.spec?.nodeName) : [] });
  };
  return { list } as unknown as KubeClient;
}

const bindOf = (actions: BinderAction[]): Extract<BinderAction, { kind: 'bindVolume' }> | undefined => actions.find((a): a is Extract<BinderAction, { kind: 'bindVolume' }> => a.kind === 'bindVolume');

describe('a free volume for a claim being deleted: confirmed on the server\'s pods', function () {
  const cases: { name: string; pods: Pod[]; refuted: boolean }[] = [
    { name: 'a live pod on a node uses the claim: bound, as upstream', pods: [pod('p', 'c', 'n1')], refuted: false },
    { name: 'no pod on the server (the cache still had it): not bound', pods: [], refuted: true },
    { name: 'the pod is being deleted on the server: not bound', pods: [ending(pod('p', 'c', 'n1'))], refuted: true },
    { name: 'the pod finished (Succeeded): not bound', pods: [pod('p', 'c', 'n1', 'Succeeded')], refuted: true },
    { name: 'a pod on a node uses another claim: not bound', pods: [pod('p', 'other', 'n1')], refuted: true },
    { name: 'the pod waits for the scheduler (which places no pod of a claim being deleted): not bound', pods: [pod('p', 'c')], refuted: true },
  ];
  for (const k of cases) {
    it(k.name, () => expect(deletingClaimBindRefuted(c, free, { kind: 'users', pods: k.pods }) !== undefined).to.equal(k.refuted));
  }

  it('decideClaim marks the binding of a free volume to a claim being deleted, and no other binding', function () {
    const placed = [pod('p', 'c', 'n1')];
    expect(bindOf(decideClaim(c, world({ volumes: [free], pods: placed })))?.forDeletingClaim).to.equal(true);
    expect(bindOf(decideClaim(claim('c', '1Gi'), world({ volumes: [free], pods: placed })))?.forDeletingClaim).to.equal(undefined);
    // A volume a user pre-bound to the claim is bound as upstream binds it, pod or not.
    const preBound = vol('pre', '1Gi', { claimRef: { namespace: 'ns', name: 'c' } });
    expect(bindOf(decideClaim(c, world({ volumes: [preBound] })))?.forDeletingClaim).to.equal(undefined);
  });

  it('decidePreBoundClaim marks the binding of the free volume a claim being deleted names', function () {
    const named = deleting(claim('c', '1Gi', { volumeName: 'v' }));
    const actions = decidePreBoundClaim(named, world({ volumes: [free], pods: [pod('p', 'c', 'n1')] }));
    expect(actions.map((a) => a.kind)).to.deep.equal(['bindVolume', 'bindClaim']);
    expect(bindOf(actions)?.forDeletingClaim).to.equal(true);
  });

  it('decidePreBoundClaim: a Bound claim (its bind-completed removed by hand) being deleted gets back the free volume it names, with no check of its pods (refused on every retry, it would end the hold and let the volume go to another claim)', function () {
    const named = deleting(claim('c', '1Gi', { volumeName: 'v', phase: 'Bound' }));
    const actions = decidePreBoundClaim(named, world({ volumes: [free] }));
    expect(actions.map((a) => a.kind)).to.deep.equal(['bindVolume', 'bindClaim']);
    expect(bindOf(actions)?.forDeletingClaim).to.equal(undefined);
  });

  it('decideBoundClaim: a claim not Bound carrying bind-completed (anyone who writes claims can set it), being deleted: held back, or marked for a placed pod; a Bound one re-binds as upstream', function () {
    const completed = (phase: string): PersistentVolumeClaim => deleting(claim('c', '1Gi', { volumeName: 'v', phase, annotations: { 'pv.kubernetes.io/bind-completed': 'yes' } }));
    for (const phase of ['Pending', 'Lost']) {
      expect(decideBoundClaim(completed(phase), world({ volumes: [free] })), `${phase}, no pod`).to.deep.equal([]);
      expect(bindOf(decideBoundClaim(completed(phase), world({ volumes: [free], pods: [pod('p', 'c', 'n1')] })))?.forDeletingClaim, `${phase}, a placed pod`).to.equal(true);
    }
    expect(bindOf(decideBoundClaim(completed('Bound'), world({ volumes: [free] })))?.forDeletingClaim, 'Bound').to.equal(undefined);
  });

  it("verifyOnServer lists the claim's namespace's pods on a node, and stops the plan before the volume when none uses it", async function () {
    const plan = decideClaim(c, world({ volumes: [free], pods: [pod('p', 'c', 'n1')] }));
    const reads: string[] = [];
    const refuted = await verifyOnServer(serverWith([], reads), plan);
    expect([refuted?.index, refuted?.check]).to.deep.equal([0, 'deleting_claim']);
    expect(reads).to.deep.equal(['pods in ns spec.nodeName!=']);
    expect(await verifyOnServer(serverWith([pod('p', 'c', 'n1')]), plan)).to.equal(undefined);
  });

  it('a claim without a namespace is never confirmed by a cluster-wide list', async function () {
    const bare = { ...c, metadata: { ...c.metadata, namespace: undefined } };
    const reads: string[] = [];
    const refuted = await verifyOnServer(serverWith([pod('p', 'c', 'n1')], reads), [{ kind: 'bindVolume', volume: free, claim: bare, boundByController: true, forDeletingClaim: true }]);
    expect(refuted?.check).to.equal('deleting_claim');
    expect(reads).to.deep.equal([]);
  });

  it("property: on the server's pods it binds exactly when the cache, had it those pods, would not hold the volume back", async function () {
    const arbPod = fc.record({ claim: fc.constantFrom('c', 'other'), node: fc.option(fc.constantFrom('n1', 'n2'), { nil: undefined }), phase: fc.constantFrom('Pending', 'Running', 'Succeeded', 'Failed'), ending: fc.boolean() });
    await fc.assert(
      fc.asyncProperty(fc.array(arbPod, { maxLength: 4 }), async (specs) => {
        const pods = specs.map((s, i) => {
          const p = pod(`p${i}`, s.claim, s.node, s.phase);
          return s.ending ? ending(p) : p;
        });
        const cacheWouldBind = !freeVolumeHeldBack(c, world({ volumes: [free], pods }));
        const refuted = await verifyOnServer(serverWith(pods), [{ kind: 'bindVolume', volume: free, claim: c, boundByController: true, forDeletingClaim: true }]);
        expect(refuted === undefined).to.equal(cacheWouldBind);
      }),
    );
  });
});

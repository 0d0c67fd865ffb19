import { expect } from 'chai';
import { KubeApiError, projectPod } from '@topovol/shared';
import type { KubeClient, Pod } from '@topovol/shared';
import { liveReads } from '../../src/rollback/rollback-server-reads.js';

// The claim a rollback reads right before its delete: "gone" is taken as already deleted (recorded
// Deleted, then re-created), so only kube-apiserver's own NotFound for it may say so.
describe('liveReads: the claim read before a delete', function () {
  const answering = (err: KubeApiError): KubeClient => ({ get: () => Promise.reject(err) }) as unknown as KubeClient;
  const reads = (err: KubeApiError) => liveReads(answering(err), () => undefined);

  it("is undefined on the server's NotFound naming the claim", async function () {
    const named = new KubeApiError(404, { kind: 'Status', reason: 'NotFound', message: 'persistentvolumeclaims "c" not found', details: { name: 'c', kind: 'persistentvolumeclaims' } });
    expect(await reads(named).claim('ns', 'c')).to.equal(undefined);
  });

  it("throws on a proxy's bare 404 (retried), and a volume read the same way counts as possibly used", async function () {
    const bare = KubeApiError.fromResponse(404, '404 page not found');
    const thrown = await reads(bare)
      .claim('ns', 'c')
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(thrown).to.equal(bare);
    await reads(bare)
      .volumeUse('v')
      .then(
        (why) => expect.fail(`volumeUse answered ${String(why)}`),
        (e: unknown) => expect(e).to.equal(bare),
      );
  });
});

describe("liveReads: a namespace's pods", function () {
  it('are listed projected as each page arrives: their writers decide their size', async function () {
    const transforms: unknown[] = [];
    const full: Pod = { metadata: { name: 'p', namespace: 'ns', uid: 'u', annotations: { pad: 'x'.repeat(100_000) } }, spec: { nodeName: 'n1', containers: [{ name: 'c', image: 'i' }] } };
    const client = {
      list: (_r: unknown, _o: unknown, transform?: (o: Pod) => Pod) => {
        transforms.push(transform);
        return Promise.resolve({ items: [transform ? transform(full) : full] });
      },
    } as unknown as KubeClient;
    const [pod] = await liveReads(client, () => undefined).pods('ns');
    expect(transforms).to.deep.equal([projectPod]);
    expect(pod?.spec?.nodeName).to.equal('n1');
    expect(pod?.metadata?.annotations).to.equal(undefined);
  });
});

describe('liveReads: the namespace and the pod a rollback is recorded with', function () {
  it('the pod is there only with its uid, listed by name (the role lists pods, never gets them)', async function () {
    const asked: unknown[] = [];
    const client = {
      list: (_r: unknown, opts: unknown) => {
        asked.push(opts);
        return Promise.resolve({ items: [{ metadata: { name: 'p', namespace: 'ns', uid: 'uid-new' } }] });
      },
    } as unknown as KubeClient;
    const reads = liveReads(client, () => undefined);
    expect((await reads.livePod('ns', 'p', 'uid-new'))?.metadata?.uid).to.equal('uid-new');
    expect(await reads.livePod('ns', 'p', 'uid-old'), 'a pod of the name made again is another pod').to.equal(undefined);
    expect(asked).to.deep.equal([
      { namespace: 'ns', fieldSelector: 'metadata.name=p' },
      { namespace: 'ns', fieldSelector: 'metadata.name=p' },
    ]);
  });

  it('the namespace: its uid and whether it is being deleted; only the server\'s NotFound naming it is "gone", any other failure is thrown', async function () {
    const answer = (r: () => Promise<unknown>): KubeClient => ({ get: r }) as unknown as KubeClient;
    const ns = { metadata: { name: 'ns', uid: 'ns-uid', creationTimestamp: '2026-11-29T09:00:00Z', deletionTimestamp: '2026-11-29T10:00:00Z' } };
    expect(await liveReads(answer(() => Promise.resolve(ns)), () => undefined).namespace('ns')).to.deep.equal({ uid: 'ns-uid', created: Date.parse('2026-11-29T09:00:00Z'), deleting: true });
    const named = new KubeApiError(404, { kind: 'Status', reason: 'NotFound', details: { name: 'ns', kind: 'namespaces' } });
    expect(await liveReads(answer(() => Promise.reject(named)), () => undefined).namespace('ns')).to.equal(undefined);
    for (const err of [KubeApiError.fromResponse(404, '404 page not found'), new KubeApiError(503, { message: 'etcd leader changed' }), new KubeApiError(403, { reason: 'Forbidden' })]) {
      const thrown = await liveReads(answer(() => Promise.reject(err)), () => undefined)
        .namespace('ns')
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect(thrown, err.message).to.equal(err);
    }
  });
});

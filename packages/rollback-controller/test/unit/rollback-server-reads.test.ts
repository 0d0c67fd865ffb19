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

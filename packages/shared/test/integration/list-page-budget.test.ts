import { expect } from 'chai';
import { AnswerTooLargeError, DEFAULT_LIST_PAGE_SIZE, Informer, LIST_PAGE_MAX_BYTES, metricsRegistry, projectEvent, projectPod, Resources } from '../../src/index.js';
import type { Event, KubeClient, Pod } from '../../src/index.js';
import { createTestNamespace, eventually, sharedControlPlane } from '@topovol/testing';

// Anyone who may create Events or pods in a namespace decides how large they are (about 1.5 MB
// each, etcd's limit), and a list page is held whole before it is projected. Every list answer
// must stay within LIST_PAGE_MAX_BYTES whoever wrote the objects, and the list must still finish.

interface Page {
  limit: unknown;
  /** Characters read, or 'cut' when the answer was cut off at the budget. */
  read: number | 'cut';
}

/** Records every list page `client` asks for and how much of it was read. */
function recordPages(client: KubeClient): Page[] {
  const pages: Page[] = [];
  const requestText = client.requestText.bind(client);
  client.requestText = async (method, path, opts) => {
    const list = method === 'GET' && !opts?.query?.watch && opts?.query?.limit !== undefined;
    try {
      const text = await requestText(method, path, opts);
      if (list) pages.push({ limit: opts?.query?.limit, read: text.length });
      return text;
    } catch (err) {
      if (list && err instanceof AnswerTooLargeError) pages.push({ limit: opts?.query?.limit, read: 'cut' });
      throw err;
    }
  };
  return pages;
}

async function pagesCut(resource: string): Promise<number> {
  const m = await metricsRegistry.getSingleMetric('topovol_list_pages_cut_total')?.get();
  return m?.values.find((v) => v.labels.resource === resource)?.value ?? 0;
}

function expectWithinBudget(pages: Page[]): void {
  expect(pages.some((p) => p.read === 'cut'), 'some page was cut off').to.equal(true);
  for (const p of pages) if (p.read !== 'cut') expect(p.read).to.be.at.most(LIST_PAGE_MAX_BYTES);
  expect(pages.at(-1)?.read, 'the last page was read').to.be.a('number');
}

describe('List pages of objects someone made huge, against a real kube-apiserver', function () {
  this.timeout(240_000);

  it('an informer of forged Events: every page read is within the byte budget, and the cache fills', async function () {
    const cp = await sharedControlPlane();
    const admin = cp.adminClient();
    const ns = await createTestNamespace(admin, 'big-events-');
    // kube-apiserver accepts any length here (legacyValidateEvent checks only the namespace);
    // some 450 KB each, 48 of them: one default page would be about 21 MB.
    const forged = (i: number): Event => ({
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name: `forged-${i}`, namespace: ns },
      involvedObject: { kind: 'PersistentVolumeClaim', namespace: ns, name: `c${'x'.repeat(300_000)}`, uid: 'u'.repeat(100_000) },
      reason: 'ProvisioningFailed',
      type: 'Warning',
      message: 'm'.repeat(50_000),
    });
    const count = 48;
    for (let i = 0; i < count; i++) await admin.create(Resources.events, forged(i));
    const client = cp.adminClient();
    const pages = recordPages(client);
    const cutBefore = await pagesCut('events');
    const informer = new Informer<Event>(client, Resources.events, { namespace: ns, fieldSelector: 'involvedObject.kind=PersistentVolumeClaim,reason=ProvisioningFailed', transform: projectEvent });
    try {
      informer.start();
      await eventually(() => expect(informer.cache.list().length).to.equal(count), 120_000);
      expect(pages[0]?.limit).to.equal(DEFAULT_LIST_PAGE_SIZE);
      expectWithinBudget(pages);
      expect(await pagesCut('events')).to.be.above(cutBefore);
      for (const e of informer.cache.list()) {
        expect(JSON.stringify(e).length).to.be.below(2048);
        expect(e.involvedObject).to.deep.include({ kind: 'PersistentVolumeClaim', namespace: ns, name: undefined, uid: undefined });
        expect(e.reason).to.equal('ProvisioningFailed');
      }
    } finally {
      await informer.stop();
      client.close();
    }
  });

  it("a client list of a namespace's forged pods (the binder's and the rollback's server reads): within the budget, projections kept", async function () {
    const cp = await sharedControlPlane();
    const admin = cp.adminClient();
    const ns = await createTestNamespace(admin, 'big-pods-');
    // A container's env value has no length limit of its own: 1.2 MB each, 16 pods, about 19 MB.
    const count = 16;
    for (let i = 0; i < count; i++) {
      await admin.create<Pod>(Resources.pods, {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: `big-${i}`, namespace: ns },
        spec: {
          containers: [{ name: 'c', image: 'registry.invalid/pause', env: [{ name: 'PADDING', value: 'p'.repeat(1_200_000) }] }],
          volumes: [{ name: 'data', persistentVolumeClaim: { claimName: `claim-${i}` } }],
        },
      });
    }
    const client = cp.adminClient();
    const pages = recordPages(client);
    try {
      const listed = (await client.list<Pod>(Resources.pods, { namespace: ns }, projectPod)).items;
      expect(listed.map((p) => p.metadata?.name).sort()).to.deep.equal(Array.from({ length: count }, (_, i) => `big-${i}`).sort());
      expectWithinBudget(pages);
      for (const p of listed) {
        expect(p.spec?.containers).to.deep.equal([]);
        expect(p.spec?.volumes?.[0]?.persistentVolumeClaim?.claimName).to.match(/^claim-/);
      }
    } finally {
      client.close();
    }
  });
});

import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { listPages, metricsRegistry, PageSizer, Resources } from '../../src/index.js';
import type { KubeClient, KubeObject } from '../../src/index.js';
import { createTestNamespace, FaultProxy, sharedControlPlane } from '@topovol/testing';

// A list of many pages through a proxy that throttles (429 with Retry-After, as API Priority and
// Fairness answers) and drops connections, in front of the real kube-apiserver: the list goes on
// from the page that failed, as client-go's rest client retries a request (rest/with_retry.go),
// and ends with every object once. It used to fail at the first fault and start over from page one.

/** The continue token of every page `client` was answered, in order ('' for the first). */
function answeredPages(client: KubeClient): string[] {
  const pages: string[] = [];
  const requestText = client.requestText.bind(client);
  client.requestText = async (method, path, opts) => {
    const text = await requestText(method, path, opts);
    if (method === 'GET' && opts?.query?.limit !== undefined) pages.push(String(opts.query.continue ?? ''));
    return text;
  };
  return pages;
}

async function retriesOf(resource: string): Promise<number> {
  const m = await metricsRegistry.getSingleMetric('topovol_list_page_retries_total')?.get();
  return m?.values.find((v) => v.labels.resource === resource)?.value ?? 0;
}

describe('list pages through a throttling, dropping API server', function () {
  this.timeout(120_000);

  it('every object once, each page answered once, no page before the failed one asked for again', async function () {
    const cp = await sharedControlPlane();
    const admin = cp.adminClient();
    const ns = await createTestNamespace(admin, 'list-retry-');
    const proxy = await FaultProxy.start(cp.url, readFileSync(cp.caFile), 3);
    try {
      const names = Array.from({ length: 40 }, (_, i) => `cm-${String(i).padStart(2, '0')}`);
      for (const name of names) await admin.create<KubeObject>(Resources.configMaps, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: ns } });
      const client = proxy.client(cp.adminToken);
      const pages = answeredPages(client);
      const before = await retriesOf('configmaps-retry-test');
      proxy.set({ throttle: 0.3, reset: 0.1, atLeast: 2 });
      const seen: string[] = [];
      await listPages(client, `/api/v1/namespaces/${ns}/configmaps`, {}, new PageSizer(4), 'configmaps-retry-test', (items) => void seen.push(...items.map((o) => o.metadata?.name ?? '')));
      proxy.set({});
      expect(seen, 'every object once, in order').to.deep.equal(names);
      expect(proxy.counts.throttle, 'throttled').to.be.at.least(2);
      expect(proxy.counts.reset, 'dropped').to.be.at.least(2);
      expect(pages.filter((c) => c === ''), 'the list never started over').to.have.length(1);
      expect(new Set(pages).size, 'each page answered once').to.equal(pages.length);
      expect(pages).to.have.length(10);
      expect((await retriesOf('configmaps-retry-test')) - before, 'counted: one retry per 429 at least').to.be.at.least(proxy.counts.throttle);
    } finally {
      proxy.set({});
      await proxy.stop();
      await admin.delete(Resources.namespaces, ns).catch(() => undefined);
    }
  });
});

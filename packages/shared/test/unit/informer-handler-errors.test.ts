import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { KubeClient } from '../../src/client/kube-client.js';
import { Informer } from '../../src/informer/informer.js';
import { Resources } from '../../src/informer/resources.js';
import type { KubeObject } from '../../src/informer/object-key.js';
import { metricsRegistry } from '../../src/metrics/registry.js';
import { eventually, metricSum } from '@topovol/testing';

// A handler that throws misses that event; the cache and the other handlers do not, and the
// failure is counted (topovol_informer_handler_errors_total), not only logged.
describe('informer: a handler that throws', function () {
  this.timeout(10_000);
  let close: (() => void) | undefined;
  let informer: Informer<KubeObject> | undefined;
  afterEach(async function () {
    await informer?.stop();
    close?.();
  });

  it('is counted by resource; the cache and the next handler still get the object', async function () {
    const srv = http.createServer((req, res) => {
      if ((req.url ?? '').includes('watch=true')) {
        res.writeHead(200);
        res.flushHeaders();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ kind: 'PersistentVolumeList', apiVersion: 'v1', metadata: { resourceVersion: '10' }, items: [{ metadata: { name: 'a', resourceVersion: '10' } }] }));
    });
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
    close = () => {
      srv.closeAllConnections();
      srv.close();
    };
    const client = KubeClient.forEndpoint({ server: `http://127.0.0.1:${(srv.address() as AddressInfo).port}` }, { qps: 0, burst: 0 });
    const before = await metricSum('topovol_informer_handler_errors_total', { resource: 'persistentvolumes' });
    informer = new Informer<KubeObject>(client, Resources.persistentVolumes, {});
    const seen: string[] = [];
    informer.addEventHandler({ onAdd: () => {
      throw new Error('a bug in a handler');
    } });
    informer.addEventHandler({ onAdd: (o) => seen.push(o.metadata?.name ?? '') });
    informer.start();
    await informer.waitForSync();
    await eventually(() => expect(seen).to.deep.equal(['a']));
    expect(informer.cache.get('a')?.metadata?.name).to.equal('a');
    expect(await metricSum('topovol_informer_handler_errors_total', { resource: 'persistentvolumes' })).to.equal(before + 1);
  });

  it('publishes its series at 0 from the start, so that the first error is an increase the alert sees', async function () {
    new Informer<KubeObject>(KubeClient.forEndpoint({ server: 'http://127.0.0.1:9' }, { qps: 0, burst: 0 }), Resources.csiDrivers, {});
    const all = (await metricsRegistry.getMetricsAsJSON()) as unknown as { name: string; values: { value: number; labels: Record<string, string | number> }[] }[];
    const series = all.find((m) => m.name === 'topovol_informer_handler_errors_total')?.values.find((v) => v.labels.resource === 'csidrivers.storage.k8s.io');
    expect(series?.value).to.equal(0);
  });
});

import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { Informer, KubeApiError, listOrderMark, metricsRegistry, Resources } from '../../src/index.js';
import { REFLECTOR_BACKOFF } from '../../src/informer/reflector-backoff.js';
import type { KubeClient, KubeObject } from '../../src/index.js';
import { createTestNamespace, eventually, FaultProxy, sharedControlPlane } from '@topovol/testing';
import type { ControlPlane } from '@topovol/testing';

type ConfigMap = KubeObject & { data?: Record<string, string> };

async function metricValue(name: string, labels: Record<string, string>): Promise<number> {
  const m = await metricsRegistry.getSingleMetric(name)?.get();
  return m?.values.find((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x))?.value ?? 0;
}

function cm(namespace: string, name: string, data: Record<string, string> = {}): ConfigMap {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace }, data };
}

describe('Informer against a real kube-apiserver', function () {
  let cp: ControlPlane;
  let admin: KubeClient;
  let ns: string;
  let client: KubeClient;
  let informer: Informer<ConfigMap>;
  const seen: string[] = [];

  before(async function () {
    cp = await sharedControlPlane();
    admin = cp.adminClient();
  });

  beforeEach(async function () {
    ns = await createTestNamespace(admin);
    client = cp.adminClient();
    seen.length = 0;
    informer = new Informer<ConfigMap>(client, Resources.configMaps, { namespace: ns });
    informer.addEventHandler({
      onAdd: (o) => seen.push(`add ${o.metadata!.name}`),
      onUpdate: (_, o) => seen.push(`update ${o.metadata!.name} ${o.data?.v ?? ''}`),
      onDelete: (o) => seen.push(`delete ${o.metadata!.name}`),
      onRelist: () => seen.push('relist'),
    });
  });

  afterEach(async function () {
    await informer.stop();
    client.close();
  });

  /** The cache holds exactly what the server lists, resourceVersions included. */
  async function expectCacheEqualsServer(timeoutMs?: number): Promise<void> {
    await eventually(async () => {
      const list = await admin.list<ConfigMap>(Resources.configMaps, { namespace: ns });
      const server = list.items.map((o) => `${o.metadata!.name}@${o.metadata!.resourceVersion}`).sort();
      const cached = informer.cache.list().map((o) => `${o.metadata!.name}@${o.metadata!.resourceVersion}`).sort();
      expect(cached).to.deep.equal(server);
    }, timeoutMs);
  }

  it('fills its cache from a list of several pages (continue tokens followed to the end)', async function () {
    for (let i = 0; i < 5; i++) await admin.create(Resources.configMaps, cm(ns, `paged-${i}`));
    const paged = new Informer<ConfigMap>(client, Resources.configMaps, { namespace: ns, pageSize: 2 });
    paged.start();
    try {
      await paged.waitForSync();
      expect(paged.cache.list().map((o) => o.metadata!.name).sort()).to.deep.equal(['paged-0', 'paged-1', 'paged-2', 'paged-3', 'paged-4']);
    } finally {
      await paged.stop();
    }
  });

  // A continue token names a snapshot; once it is gone (etcd compacted past it, or the watch
  // cache's snapshot dropped), kube-apiserver answers the next page 410 Expired, with an
  // "inconsistent" token an informer must not follow: its pages would mix two snapshots, and an
  // object deleted between them would stay cached for ever. The list starts again from the first
  // page, as client-go's reflector relists; the dead list's pages are dropped. Here a create and a
  // delete happen between the first and second page, so the dead list's first page holds an object
  // that is gone. The server's answer is the one kube-apiserver gives (a compaction done from
  // outside does not expire tokens the watch cache serves, so the 410 is written here); everything
  // else is the real server.
  it('a list whose continue token expires mid-way lists again from the first page, and the cache equals the server', async function () {
    for (let i = 0; i < 5; i++) await admin.create(Resources.configMaps, cm(ns, `paged-${i}`));
    const answers: string[] = [];
    let expired = false;
    const requestText = client.requestText.bind(client);
    client.requestText = async (method, path, opts) => {
      const page = method === 'GET' && opts?.query?.limit !== undefined && !opts.query.watch;
      const which = opts?.query?.continue ? 'next page' : 'first page';
      if (page && opts?.query?.continue && !expired) {
        expired = true;
        await admin.delete(Resources.configMaps, 'paged-0', ns);
        await admin.create(Resources.configMaps, cm(ns, 'made-meanwhile'));
        answers.push(`${which}: 410`);
        throw KubeApiError.fromResponse(
          410,
          JSON.stringify({
            kind: 'Status',
            apiVersion: 'v1',
            metadata: { continue: 'inconsistent-token' },
            status: 'Failure',
            reason: 'Expired',
            code: 410,
            message: 'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.',
          }),
        );
      }
      const text = await requestText(method, path, opts);
      if (page) answers.push(which);
      return text;
    };
    const listsBefore = await metricValue('topovol_informer_lists_total', { resource: 'configmaps' });
    const paged = new Informer<ConfigMap>(client, Resources.configMaps, { namespace: ns, pageSize: 2, backoff: { startMs: 10, maxMs: 100 } });
    const added: string[] = [];
    paged.addEventHandler({ onAdd: (o) => added.push(o.metadata!.name!) });
    paged.start();
    try {
      await paged.waitForSync();
      expect(answers, 'the token expired once').to.include('next page: 410');
      const server = (await admin.list<ConfigMap>(Resources.configMaps, { namespace: ns })).items.map((o) => `${o.metadata!.name}@${o.metadata!.resourceVersion}`).sort();
      expect(paged.cache.list().map((o) => `${o.metadata!.name}@${o.metadata!.resourceVersion}`).sort()).to.deep.equal(server);
      expect(added.sort(), 'nothing of the dead list reached the handlers').to.deep.equal(['made-meanwhile', 'paged-1', 'paged-2', 'paged-3', 'paged-4']);
      expect(await metricValue('topovol_informer_lists_total', { resource: 'configmaps' })).to.equal(listsBefore + 2);
    } finally {
      await paged.stop();
    }
  });

  it('syncs, then sees create, update and delete', async function () {
    await admin.create(Resources.configMaps, cm(ns, 'before'));
    informer.start();
    await informer.waitForSync();
    expect(informer.hasSynced()).to.equal(true);
    expect(informer.cache.get(`${ns}/before`)).to.not.equal(undefined);

    await admin.create(Resources.configMaps, cm(ns, 'a', { v: '1' }));
    await eventually(() => expect(informer.cache.get(`${ns}/a`)?.data?.v).to.equal('1'));
    await admin.patch(Resources.configMaps, 'a', ns, 'merge', { data: { v: '2' } });
    await eventually(() => expect(informer.cache.get(`${ns}/a`)?.data?.v).to.equal('2'));
    await admin.delete(Resources.configMaps, 'a', ns);
    await eventually(() => expect(informer.cache.get(`${ns}/a`)).to.equal(undefined));
    expect(seen).to.deep.equal(['add before', 'add a', 'update a 2', 'delete a']);
    // The default transform drops managedFields.
    expect(informer.cache.get(`${ns}/before`)?.metadata?.managedFields).to.equal(undefined);
  });

  it('recovers after its watch connection is cut and converges', async function () {
    informer.start();
    await informer.waitForSync();
    // Make sure the watch is established (an event arrived through it) before cutting it.
    await admin.create(Resources.configMaps, cm(ns, 'before-cut'));
    await eventually(() => expect(informer.cache.get(`${ns}/before-cut`)).to.not.equal(undefined));
    const restartsBefore = await metricValue('topovol_informer_watch_restarts_total', { resource: 'configmaps', reason: 'error' });
    await client.dropConnections();
    // Changes made while the watch is down or reconnecting must all arrive.
    await admin.create(Resources.configMaps, cm(ns, 'during-cut'));
    for (let i = 0; i < 5; i++) await admin.create(Resources.configMaps, cm(ns, `n${i}`));
    await admin.delete(Resources.configMaps, 'n0', ns);
    await expectCacheEqualsServer();
    expect(await metricValue('topovol_informer_watch_restarts_total', { resource: 'configmaps', reason: 'error' })).to.be.greaterThan(restartsBefore);
  });

  it('recovers after the API server is restarted (new process, same etcd)', async function () {
    this.timeout(300_000);
    informer.start();
    await informer.waitForSync();
    await admin.create(Resources.configMaps, cm(ns, 'old'));
    await eventually(() => expect(informer.cache.get(`${ns}/old`)).to.not.equal(undefined));
    await cp.restartApiServer();
    await admin.create(Resources.configMaps, cm(ns, 'new'));
    await admin.delete(Resources.configMaps, 'old', ns);
    // The watches refused while the server was down climbed the reflector's backoff (doubling from
    // 800 ms, each wait up to twice its step), and the new server may answer the resumed watch 410,
    // one step more before the relist: a restart of a dozen seconds can put the relist half a
    // minute or more after the server is back. Three capped steps cover any such climb.
    await expectCacheEqualsServer(3 * REFLECTOR_BACKOFF.maxMs);
    expect(seen).to.include('add new').and.to.include('delete old');
  });

  it('relists on 410 Gone and the cache then equals the server list', async function () {
    informer.start();
    await informer.waitForSync();
    for (let i = 0; i < 3; i++) await admin.create(Resources.configMaps, cm(ns, `k${i}`));
    await expectCacheEqualsServer();
    const goneBefore = await metricValue('topovol_informer_watch_restarts_total', { resource: 'configmaps', reason: 'gone' });
    const listsBefore = await metricValue('topovol_informer_lists_total', { resource: 'configmaps' });
    // Resume from a resourceVersion the server no longer has: the watch cache answers 410 Gone
    // ("too old resource version"), exactly as after a long disconnect or an etcd compaction.
    informer.resumeFromForTest('1');
    await client.dropConnections();
    await admin.delete(Resources.configMaps, 'k1', ns);
    await admin.create(Resources.configMaps, cm(ns, 'k9'));
    await eventually(async () => expect(await metricValue('topovol_informer_lists_total', { resource: 'configmaps' })).to.be.greaterThan(listsBefore));
    expect(await metricValue('topovol_informer_watch_restarts_total', { resource: 'configmaps', reason: 'gone' })).to.be.greaterThan(goneBefore);
    await expectCacheEqualsServer();
    // The handlers are told that the history has a gap, before the relist's own events.
    expect(seen.filter((e) => e === 'relist'), 'one relist, and only after the first list').to.have.length(1);
    expect(seen.indexOf('relist')).to.be.lessThan(seen.indexOf('delete k1'));
  });

  it('relist() lists again at once, and listedAfter orders two informers by when their lists were asked for and done', async function () {
    const other = new Informer<ConfigMap>(client, Resources.configMaps, { namespace: ns });
    try {
      expect(informer.listedAfter(other), 'neither has listed').to.equal(false);
      other.start();
      await other.waitForSync();
      informer.start();
      await informer.waitForSync();
      expect(informer.listedAfter(other), 'asked for after the other was in').to.equal(true);
      expect(other.listedAfter(informer)).to.equal(false);
      await admin.create(Resources.configMaps, cm(ns, 'r1'));
      await expectCacheEqualsServer();
      const listsBefore = await metricValue('topovol_informer_lists_total', { resource: 'configmaps' });
      const doneBefore = other.lastListDone();
      const mark = listOrderMark();
      expect(other.listedSince(mark), 'nothing listed since the mark').to.equal(false);
      // Asked of an informer whose watch is open (up to ten minutes): it must not wait for it to end.
      other.relist();
      await eventually(() => expect(other.lastListDone()).to.be.greaterThan(doneBefore), 60_000);
      expect(other.listedSince(mark), 'listed since the mark').to.equal(true);
      expect(informer.listedSince(mark)).to.equal(false);
      expect(await metricValue('topovol_informer_lists_total', { resource: 'configmaps' })).to.equal(listsBefore + 1);
      expect(informer.listedAfter(other), 'the other listed again since').to.equal(false);
      expect(other.listedAfter(informer)).to.equal(true);
      // Its watch goes on after the list.
      await admin.create(Resources.configMaps, cm(ns, 'r2'));
      await eventually(() => expect(other.cache.get(`${ns}/r2`)).to.not.equal(undefined));
    } finally {
      await other.stop();
    }
  });

  it('relist() asked while a list is under way lists again after it: the list it gets was asked for after the call', async function () {
    const proxy = await FaultProxy.start(cp.url, readFileSync(cp.caFile), 3);
    const behindClient = proxy.client(cp.adminToken);
    const behind = new Informer<ConfigMap>(behindClient, Resources.configMaps, { namespace: ns });
    try {
      proxy.holdUntilRelease((r) => !r.watch && r.path.endsWith('/configmaps'));
      behind.start();
      // Its first list is held at the proxy; this suite's informer lists meanwhile, then relist() is asked.
      informer.start();
      await informer.waitForSync();
      behind.relist();
      proxy.release();
      await behind.waitForSync();
      await eventually(() => expect(behind.listedAfter(informer), 'a list asked for after relist()').to.equal(true));
    } finally {
      await behind.stop();
      behindClient.close();
      await proxy.stop();
    }
  });
});

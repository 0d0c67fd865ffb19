import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { Informer, metricsRegistry, Resources } from '../../src/index.js';
import type { KubeClient, KubeObject, RawObserverOptions } from '../../src/index.js';
import { createTestNamespace, eventually, FaultProxy, sharedControlPlane } from '@topovol/testing';
import type { ControlPlane } from '@topovol/testing';

type ConfigMap = KubeObject & { data?: Record<string, string> };

// Values that a cut of managedFields ignoring JSON's strings and escapes would break or take for the member.
const TRICKY: Record<string, string> = {
  needle: '"managedFields":[{"manager":"x"}]',
  member: ',"managedFields":[1],',
  brackets: ']]}}[[{{',
  escapes: '\\"\\\\"\\',
  unicode: '\u2028🙂',
};

function cm(namespace: string, name: string, data: Record<string, string> = TRICKY): ConfigMap {
  // An annotation may be named managedFields (a string value): it must stay.
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace, annotations: { managedFields: '[1]' } }, data };
}

const hasManagedFields = (o: KubeObject): boolean => (o.metadata?.managedFields?.length ?? 0) > 0;

/** What the informer caches of an object: everything the server has but managedFields. */
function withoutManagedFieldsMember(o: KubeObject): KubeObject {
  const { managedFields: _, ...metadata } = o.metadata ?? {};
  return { ...o, metadata };
}

describe('Informer: managedFields parsed only where an observer reads them (real kube-apiserver)', function () {
  let cp: ControlPlane;
  let admin: KubeClient;
  let client: KubeClient;
  let ns: string;
  const informers: Informer<ConfigMap>[] = [];

  before(async function () {
    cp = await sharedControlPlane();
    admin = cp.adminClient();
  });

  beforeEach(async function () {
    ns = await createTestNamespace(admin);
    client = cp.adminClient();
    for (let i = 0; i < 5; i++) await admin.create(Resources.configMaps, cm(ns, `before-${i}`));
  });

  afterEach(async function () {
    for (const i of informers.splice(0)) await i.stop();
    client.close();
  });

  type Seen = { name: string; cached: boolean; managedFields: boolean };
  const observe =
    (raw: Seen[]) =>
    (o: KubeObject, cached: ConfigMap | undefined): void =>
      void raw.push({ name: o.metadata!.name!, cached: cached !== undefined, managedFields: hasManagedFields(o) });

  /** An informer (pages of 2) whose projection and raw observer record what they were given. */
  function start(observer?: RawObserverOptions, via: KubeClient = client): { informer: Informer<ConfigMap>; projected: KubeObject[]; raw: Seen[] } {
    const projected: KubeObject[] = [];
    const raw: Seen[] = [];
    const informer = new Informer<ConfigMap>(via, Resources.configMaps, {
      namespace: ns,
      pageSize: 2,
      transform: (o) => {
        projected.push(structuredClone(o));
        return withoutManagedFieldsMember(o);
      },
    });
    if (observer) informer.addRawObserver(observe(raw), observer);
    informers.push(informer);
    informer.start();
    return { informer, projected, raw };
  }

  async function expectCacheEqualsServerLessManagedFields(informer: Informer<ConfigMap>): Promise<void> {
    await eventually(async () => {
      const server = (await admin.list<ConfigMap>(Resources.configMaps, { namespace: ns })).items;
      expect(server.every(hasManagedFields), 'the server keeps them').to.equal(true);
      const want = server.map((o) => withoutManagedFieldsMember({ ...o, apiVersion: 'v1', kind: 'ConfigMap' })).sort((a, b) => a.metadata!.name!.localeCompare(b.metadata!.name!));
      const got = informer.cache.list().map((o) => ({ ...o, apiVersion: 'v1', kind: 'ConfigMap' })).sort((a, b) => a.metadata!.name!.localeCompare(b.metadata!.name!));
      expect(got).to.deep.equal(want);
    });
  }

  it('with no observer reading them, lists and watch events are parsed without them, and nothing else is lost', async function () {
    const { informer, projected } = start();
    await informer.waitForSync();
    await admin.patch(Resources.configMaps, 'before-1', ns, 'merge', { data: { v: '2' } });
    await admin.create(Resources.configMaps, cm(ns, 'after'));
    await expectCacheEqualsServerLessManagedFields(informer);
    expect(informer.cache.get(`${ns}/before-1`)?.data).to.deep.equal({ ...TRICKY, v: '2' });
    expect(informer.cache.get(`${ns}/after`)?.metadata?.annotations).to.deep.equal({ managedFields: '[1]' });
    expect(projected.length, 'five listed, one update, one create').to.be.at.least(7);
    expect(projected.filter(hasManagedFields).map((o) => o.metadata!.name)).to.deep.equal([]);
  });

  it("an observer of cached objects' managedFields: the first list comes without them, watch events and later lists with them", async function () {
    const { informer, raw } = start({ managedFields: 'cached' });
    await informer.waitForSync();
    expect(raw.map((r) => `${r.name} ${r.cached} ${r.managedFields}`).sort()).to.deep.equal([0, 1, 2, 3, 4].map((i) => `before-${i} false false`));

    raw.length = 0;
    await admin.patch(Resources.configMaps, 'before-1', ns, 'merge', { data: { v: '2' } });
    await eventually(() => expect(raw.map((r) => `${r.name} ${r.cached} ${r.managedFields}`)).to.deep.equal(['before-1 true true']));

    raw.length = 0;
    const done = informer.lastListDone();
    informer.relist();
    await eventually(() => expect(informer.lastListDone()).to.be.greaterThan(done), 60_000);
    expect(raw.map((r) => `${r.name} ${r.cached} ${r.managedFields}`).sort()).to.deep.equal([0, 1, 2, 3, 4].map((i) => `before-${i} true true`));
    await expectCacheEqualsServerLessManagedFields(informer);
  });

  it("an observer of one field manager's entries: a watch event of an object that manager never wrote comes without managedFields, one it wrote with them", async function () {
    const writer = 'topovol-test-writer';
    const { informer, raw } = start({ managedFields: 'cached', managers: [writer] });
    await informer.waitForSync();
    raw.length = 0;
    await admin.patch(Resources.configMaps, 'before-1', ns, 'merge', { data: { v: '2' } });
    await eventually(() => expect(raw.map((r) => `${r.name} ${r.managedFields}`)).to.deep.equal(['before-1 false']));
    await admin.patch(Resources.configMaps, 'before-2', ns, 'merge', { data: { v: '2' } }, { fieldManager: writer });
    await eventually(() => expect(raw.map((r) => `${r.name} ${r.managedFields}`)).to.deep.equal(['before-1 false', 'before-2 true']));
    const got = raw.length;
    const done = informer.lastListDone();
    informer.relist();
    await eventually(() => expect(informer.lastListDone()).to.be.greaterThan(done), 60_000);
    // Pages of two, in name order: before-2 shares its page with before-3, before-0 and -1 and before-4 are on pages naming no such manager.
    const relisted = Object.fromEntries(raw.slice(got).map((r) => [r.name, r.managedFields]));
    expect(relisted, 'relisted: a page naming the manager whole, the others cut').to.deep.equal({ 'before-0': false, 'before-1': false, 'before-2': true, 'before-3': true, 'before-4': false });
    await expectCacheEqualsServerLessManagedFields(informer);
  });

  it('an observer of every object\'s managedFields gets them in the first list too', async function () {
    const { informer, raw } = start({ managedFields: 'all' });
    await informer.waitForSync();
    expect(raw.map((r) => `${r.name} ${r.managedFields}`).sort()).to.deep.equal([0, 1, 2, 3, 4].map((i) => `before-${i} true`));
  });

  it("an observer of cached objects' managedFields added after the first list gets them from the next watch event on (the watch opened without them is opened again)", async function () {
    const { informer } = start();
    await informer.waitForSync();
    // The watch is open (it delivered this) before the observer comes.
    await admin.patch(Resources.configMaps, 'before-0', ns, 'merge', { data: { v: '1' } });
    await eventually(() => expect(informer.cache.get(`${ns}/before-0`)?.data?.v).to.equal('1'));
    const raw: Seen[] = [];
    informer.addRawObserver(observe(raw), { managedFields: 'cached' });
    await admin.patch(Resources.configMaps, 'before-1', ns, 'merge', { data: { v: '2' } });
    await admin.patch(Resources.configMaps, 'before-2', ns, 'merge', { data: { v: '2' } });
    await eventually(() => expect(raw.map((r) => `${r.name} ${r.cached} ${r.managedFields}`)).to.deep.equal(['before-1 true true', 'before-2 true true']));
    expect(informer.cache.get(`${ns}/before-2`)?.data?.v, 'the events held back are applied').to.equal('2');
  });

  it("an observer of every object's managedFields added between the first list's pages sees every object with them, in the list asked for next", async function () {
    const proxy = await FaultProxy.start(cp.url, readFileSync(cp.caFile), 5);
    const via = proxy.client(cp.adminToken);
    try {
      const raw: Seen[] = [];
      let held = false;
      const informer = new Informer<ConfigMap>(via, Resources.configMaps, {
        namespace: ns,
        pageSize: 2,
        transform: (o) => {
          // The first page is in: hold the next one at the proxy.
          if (!held) proxy.holdUntilRelease((r) => !r.watch && r.path.endsWith('/configmaps'));
          held = true;
          return withoutManagedFieldsMember(o);
        },
      });
      informers.push(informer);
      informer.start();
      await eventually(() => expect(held).to.equal(true));
      informer.addRawObserver(observe(raw), { managedFields: 'all' });
      proxy.release();
      await informer.waitForSync();
      await eventually(() => expect(raw.filter((r) => r.managedFields).map((r) => r.name).sort()).to.deep.equal([0, 1, 2, 3, 4].map((i) => `before-${i}`)), 60_000);
      expect(raw.filter((r) => !r.managedFields), 'never an object cut').to.deep.equal([]);
    } finally {
      via.close();
      await proxy.stop();
    }
  });

  it('an observer added while the watch waits for its answer reopens it without a failure (no error restart, no backoff)', async function () {
    const proxy = await FaultProxy.start(cp.url, readFileSync(cp.caFile), 7);
    const via = proxy.client(cp.adminToken);
    const restarts = async (): Promise<number> => (await metricsRegistry.getSingleMetric('topovol_informer_watch_restarts_total')?.get())?.values.find((v) => v.labels.resource === 'configmaps' && v.labels.reason === 'error')?.value ?? 0;
    try {
      const errorsBefore = await restarts();
      // Every request waits 3 s at the proxy: the list's three pages, then the watch.
      proxy.set({ delay: 1, delayMs: 3_000 });
      const { informer } = start(undefined, via);
      await informer.waitForSync();
      await eventually(() => expect(proxy.counts.delay, 'the watch is on its way').to.be.at.least(4));
      const raw: Seen[] = [];
      informer.addRawObserver(observe(raw), { managedFields: 'cached' });
      proxy.set({});
      await admin.patch(Resources.configMaps, 'before-3', ns, 'merge', { data: { v: '3' } });
      await eventually(() => expect(raw.map((r) => `${r.name} ${r.cached} ${r.managedFields}`)).to.deep.equal(['before-3 true true']));
      expect(await restarts(), 'no watch counted as failed').to.equal(errorsBefore);
    } finally {
      via.close();
      await proxy.stop();
    }
  });
});

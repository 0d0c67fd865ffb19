import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { KubeClient } from '../../src/client/kube-client.js';
import { Informer } from '../../src/informer/informer.js';
import { Resources } from '../../src/informer/resources.js';
import { streamWatch } from '../../src/informer/watch-stream.js';
import type { KubeObject } from '../../src/informer/object-key.js';
import { eventually } from '@topovol/testing';
import { line, pv, sleep } from './event-delivery-fixtures.js';

// A local HTTP server plays the API server's answers that a real one gives only by chance of timing
// (a 410 in the same packet as the end of the stream) or never (a proxy's empty answers).

type Handler = (req: http.IncomingMessage, res: http.ServerResponse, n: { lists: number; watches: number }) => void | Promise<void>;

const gone = line({ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired', message: 'too old resource version' } });

async function apiServer(handler: Handler): Promise<{ client: KubeClient; n: { lists: number; watches: number }; watchQueries: URLSearchParams[]; close: () => void }> {
  const n = { lists: 0, watches: 0 };
  const watchQueries: URLSearchParams[] = [];
  const srv = http.createServer((req, res) => {
    const q = new URL(req.url ?? '/', 'http://x').searchParams;
    if (q.get('watch') === 'true') {
      n.watches++;
      watchQueries.push(q);
    } else n.lists++;
    void handler(req, res, n);
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as AddressInfo).port;
  return {
    client: KubeClient.forEndpoint({ server: `http://127.0.0.1:${port}` }, { qps: 0, burst: 0 }),
    n,
    watchQueries,
    close: () => {
      srv.closeAllConnections();
      srv.close();
    },
  };
}

const isWatch = (req: http.IncomingMessage): boolean => (req.url ?? '').includes('watch=true');
const list = (res: http.ServerResponse, rv: number, items: KubeObject[]): void => {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ kind: 'PersistentVolumeList', apiVersion: 'v1', metadata: { resourceVersion: String(rv) }, items }));
};
/** Holds a watch open until the server closes. */
const hold = (res: http.ServerResponse): void => {
  res.writeHead(200);
  res.flushHeaders();
};

describe('informer: how watches end (a local HTTP server as the API server)', function () {
  this.timeout(20_000);
  let close: (() => void) | undefined;
  let informer: Informer<KubeObject> | undefined;
  afterEach(async function () {
    await informer?.stop();
    informer = undefined;
    close?.();
  });
  const start = (client: KubeClient, backoff = { startMs: 50, maxMs: 200 }): Informer<KubeObject> => {
    informer = new Informer<KubeObject>(client, Resources.persistentVolumes, { backoff });
    informer.start();
    return informer;
  };

  const endings: [string, (res: http.ServerResponse) => void][] = [
    ['the ERROR and the end in one write', (res) => res.end(gone)],
    ['the ERROR, then the end at once', (res) => {
      res.write(gone);
      res.end();
    }],
    ['an event, the ERROR and the end in one write', (res) => res.end(line({ type: 'MODIFIED', object: pv('a', 11) }) + gone)],
  ];
  for (const [name, end] of endings) {
    it(`410 Gone with ${name}: the process lives and relists`, async function () {
      const s = await apiServer((req, res, n) => {
        if (!isWatch(req)) return list(res, 10 * n.lists, [pv('a', 5)]);
        if (n.watches > 1) return hold(res);
        res.writeHead(200);
        end(res);
      });
      close = s.close;
      const inf = start(s.client);
      await inf.waitForSync();
      await eventually(() => expect(s.n.lists).to.equal(2));
      await sleep(200);
      expect(inf.cache.get('a')?.metadata?.resourceVersion).to.equal('5');
    });
  }

  it('a watch that ends with another error event (a lagging server behind a load balancer: "Too large resource version", 504; an internal error, 500; 503) lists again; one throttled (429) is watched again', async function () {
    const tooLarge = line({ type: 'ERROR', object: { kind: 'Status', code: 504, reason: 'Timeout', message: 'Too large resource version: 20, current: 10', details: { causes: [{ reason: 'ResourceVersionTooLarge' }] } } });
    const throttled = line({ type: 'ERROR', object: { kind: 'Status', code: 429, reason: 'TooManyRequests', message: 'too many requests' } });
    // What kube-apiserver sends when etcd lost its leader, or gave an event without its previous value.
    const internal = line({ type: 'ERROR', object: { kind: 'Status', code: 500, reason: 'InternalError', message: 'etcdserver: no leader' } });
    const unavailable = line({ type: 'ERROR', object: { kind: 'Status', code: 503, reason: 'ServiceUnavailable', message: 'unavailable' } });
    const endings = [throttled, tooLarge, internal, unavailable];
    const s = await apiServer((req, res, n) => {
      if (!isWatch(req)) return list(res, 10 * n.lists, [pv('a', 5)]);
      if (n.watches > endings.length) return hold(res);
      res.writeHead(200);
      res.end(endings[n.watches - 1]);
    });
    close = s.close;
    const inf = start(s.client);
    await inf.waitForSync();
    await eventually(() => expect(s.n.watches).to.equal(5));
    // The throttled watch was opened again from the same resourceVersion; each other error was followed by a list.
    expect(s.n.lists).to.equal(4);
    expect(s.watchQueries.map((q) => q.get('resourceVersion'))).to.deep.equal(['10', '10', '20', '30', '40']);
  });

  it('every watch answered with 410 Gone: the lists that follow back off, not a full list in a loop', async function () {
    const s = await apiServer((req, res, n) => {
      if (!isWatch(req)) return list(res, 10 * n.lists, [pv('a', 5)]);
      res.writeHead(200);
      res.end(gone);
    });
    close = s.close;
    const inf = start(s.client, { startMs: 300, maxMs: 1_000 });
    await inf.waitForSync();
    await sleep(1_500);
    // Backoff steps of 300-600, 600-1200 ms, …: a few lists; listing again at once made hundreds.
    expect(s.n.lists).to.be.within(2, 6);
  });

  it('an event an index cannot take is skipped: the events after it are cached, and the cache stays as it was for that object', async function () {
    const s = await apiServer((req, res, n) => {
      if (!isWatch(req)) return list(res, 10, [pv('poison', 5)]);
      if (n.watches > 1) return hold(res);
      res.writeHead(200);
      res.write(line({ type: 'MODIFIED', object: { metadata: { name: 'poison', resourceVersion: '11', labels: { bad: 'yes' } } } }));
      res.write(line({ type: 'ADDED', object: pv('ok', 12) }));
    });
    close = s.close;
    informer = new Informer<KubeObject>(s.client, Resources.persistentVolumes, { backoff: { startMs: 50, maxMs: 200 } });
    informer.addIndex('label', (o) => {
      if (o.metadata?.labels?.bad) throw new Error('cannot index this one');
      return [o.metadata?.name ?? ''];
    });
    informer.start();
    const inf = informer;
    await inf.waitForSync();
    await eventually(() => expect(inf.cache.get('ok')?.metadata?.resourceVersion).to.equal('12'));
    expect(inf.cache.get('poison')?.metadata?.resourceVersion, 'the listed version stays').to.equal('5');
    expect(inf.cache.byIndex('label', 'poison').map((o) => o.metadata?.resourceVersion), 'and stays indexed').to.deep.equal(['5']);
    expect(s.n.watches, 'the watch went on past it').to.equal(1);
  });

  /** An informer whose projection cannot take objects labelled bad. */
  const picky = (client: KubeClient): Informer<KubeObject> => {
    informer = new Informer<KubeObject>(client, Resources.persistentVolumes, {
      backoff: { startMs: 50, maxMs: 200 },
      transform: (o) => {
        if (o.metadata?.labels?.bad) throw new Error('cannot project this one');
        return o;
      },
    });
    informer.start();
    return informer;
  };
  const bad = (name: string, rv: number): KubeObject => ({ metadata: { name, resourceVersion: String(rv), labels: { bad: 'yes' } } });

  it('a relist with an object the projection cannot take: the rest is cached, that object keeps what the cache had (not taken as deleted), and the informer watches on', async function () {
    const s = await apiServer((req, res, n) => {
      if (!isWatch(req)) return n.lists === 1 ? list(res, 10, [pv('poison', 5)]) : list(res, 30, [bad('poison', 20), pv('ok', 21)]);
      if (n.watches > 1) return hold(res);
      res.writeHead(200);
      res.end(gone);
    });
    close = s.close;
    const inf = picky(s.client);
    await inf.waitForSync();
    await eventually(() => expect(inf.cache.get('ok')?.metadata?.resourceVersion).to.equal('21'));
    expect(inf.cache.get('poison')?.metadata?.resourceVersion).to.equal('5');
    await eventually(() => expect(s.n.watches, 'it watches after the relist').to.equal(2));
    await sleep(300);
    expect(s.n.lists, 'no list in a loop').to.equal(2);
  });

  it('a DELETED event the projection cannot take still removes the object (by its key), and handlers see the cached copy', async function () {
    const s = await apiServer((req, res, n) => {
      if (!isWatch(req)) return list(res, 10, [pv('poison', 5)]);
      if (n.watches > 1) return hold(res);
      res.writeHead(200);
      res.write(line({ type: 'DELETED', object: bad('poison', 11) }));
    });
    close = s.close;
    const inf = picky(s.client);
    const deleted: string[] = [];
    inf.addEventHandler({ onDelete: (o) => deleted.push(`${o.metadata?.name}@${o.metadata?.resourceVersion}`) });
    await inf.waitForSync();
    await eventually(() => expect(inf.cache.get('poison')).to.equal(undefined));
    expect(deleted).to.deep.equal(['poison@5']);
  });

  it('a watch closed at once with no event is retried with backoff, not at once', async function () {
    const s = await apiServer((req, res, n) => {
      if (!isWatch(req)) return list(res, 10 * n.lists, []);
      res.writeHead(200);
      res.end();
    });
    close = s.close;
    const inf = start(s.client, { startMs: 200, maxMs: 400 });
    await inf.waitForSync();
    await sleep(1_500);
    // One first-backoff step (200 ms) after each: a few a second; re-watching at once made thousands.
    expect(s.n.watches).to.be.within(1, 10);
  });

  it('a line that is not an event ends the watch, and the next one resumes after the last event applied', async function () {
    const s = await apiServer((req, res, n) => {
      if (!isWatch(req)) return list(res, 10, [pv('a', 5)]);
      if (n.watches > 1) return hold(res);
      res.writeHead(200);
      res.write(line({ type: 'MODIFIED', object: pv('a', 11) }));
      res.write('{"type":"MODIFIED","object":\n');
      res.end(line({ type: 'MODIFIED', object: pv('a', 14) }));
    });
    close = s.close;
    const inf = start(s.client);
    await inf.waitForSync();
    await eventually(() => expect(s.n.watches).to.be.at.least(2));
    expect(s.watchQueries[1]?.get('resourceVersion'), 'not 14: the event after the bad line may have skipped one').to.equal('11');
    expect(inf.cache.get('a')?.metadata?.resourceVersion).to.equal('11');
  });

  it('an empty answer to a relist is an error, not an empty list: nothing is deleted', async function () {
    const deleted: string[] = [];
    const s = await apiServer((req, res, n) => {
      if (!isWatch(req)) {
        if (n.lists === 2) {
          res.writeHead(200);
          return void res.end();
        }
        return list(res, 10 * n.lists, [pv('a', 5), pv('b', 6)]);
      }
      if (n.watches > 1) return hold(res);
      res.writeHead(200);
      res.end(gone);
    });
    close = s.close;
    const inf = start(s.client);
    inf.addEventHandler({ onDelete: (o) => void deleted.push(o.metadata?.name ?? '') });
    await inf.waitForSync();
    await eventually(() => expect(s.n.lists).to.equal(3));
    expect(deleted).to.deep.equal([]);
    expect(inf.cache.list().map((o) => o.metadata?.name).sort()).to.deep.equal(['a', 'b']);
  });

  it('a watch whose headers never come is cut at the idle timeout', async function () {
    const s = await apiServer(() => undefined);
    close = s.close;
    const ac = new AbortController();
    let err: unknown;
    await streamWatch(s.client, '/api/v1/persistentvolumes', {}, () => undefined, ac.signal, 300).catch((e: unknown) => (err = e));
    expect(String(err)).to.contain('watch idle timeout');
  });
});

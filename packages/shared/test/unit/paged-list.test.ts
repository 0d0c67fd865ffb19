import { expect } from 'chai';
import fc from 'fast-check';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { AnswerTooLargeError } from '../../src/client/http-transport.js';
import { KubeClient } from '../../src/client/kube-client.js';
import { listPages, ONE_OBJECT_MAX_BYTES, PageSizer } from '../../src/client/paged-list.js';
import type { KubeObject } from '../../src/informer/object-key.js';

describe('PageSizer', function () {
  const cases: { name: string; steps: (s: PageSizer) => void; next: number; budget: number }[] = [
    { name: 'starts at its limit, with the budget', steps: () => undefined, next: 300, budget: 1000 },
    { name: 'a cut halves', steps: (s) => s.cut(), next: 150, budget: 1000 },
    { name: 'cuts stop at one object, whose budget is what etcd allows one object', steps: (s) => Array.from({ length: 20 }, () => s.cut()), next: 1, budget: ONE_OBJECT_MAX_BYTES },
    { name: 'a page read sizes the next to half the budget', steps: (s) => s.read(500, 10), next: 10, budget: 1000 },
    { name: 'small objects: back to the limit, never above', steps: (s) => (s.cut(), s.read(100, 100)), next: 300, budget: 1000 },
    { name: 'objects larger than half the budget: one a page', steps: (s) => s.read(900, 1), next: 1, budget: ONE_OBJECT_MAX_BYTES },
    { name: 'an empty page says nothing', steps: (s) => (s.cut(), s.read(2, 0)), next: 150, budget: 1000 },
  ];
  for (const c of cases) {
    it(c.name, function () {
      const s = new PageSizer(300, 1000);
      c.steps(s);
      expect(s.next).to.equal(c.next);
      expect(s.budget).to.equal(c.budget);
    });
  }

  it('a cut at one object says so; sizes that are not whole numbers of at least one are refused', function () {
    const s = new PageSizer(2, 1000);
    expect(s.cut()).to.equal(true);
    expect(s.cut()).to.equal(false);
    expect(s.next).to.equal(1);
    for (const [limit, bytes] of [[0, 1000], [Number.NaN, 1000], [1.5, 1000], [10, 0], [10, Number.NaN], [10, Infinity]] as const) {
      expect(() => new PageSizer(limit, bytes), `${limit}, ${bytes}`).to.throw(/want/);
    }
  });

  it('stays between one object and its limit whatever it is told', function () {
    const step = fc.oneof(fc.constant<['cut']>(['cut']), fc.tuple(fc.constant('read' as const), fc.nat(1e9), fc.nat(10_000)));
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 10_000 }), fc.integer({ min: 1, max: 1e8 }), fc.array(step), (limit, maxBytes, steps) => {
        const s = new PageSizer(limit, maxBytes);
        for (const st of steps) {
          if (st[0] === 'cut') s.cut();
          else s.read(st[1], st[2]);
          expect(s.next).to.be.within(1, limit);
          expect(Number.isInteger(s.next)).to.equal(true);
        }
      }),
    );
  });
});

/** A list endpoint over `sizes` (one object of about that many bytes each), paged by limit and continue as kube-apiserver pages. */
async function listServer(sizes: number[], opts: { pad?: string; ignoreLimit?: boolean } = {}): Promise<{ server: Server; client: KubeClient; asked: { limit: number; from: number }[] }> {
  const asked: { limit: number; from: number }[] = [];
  const server = createServer((req, res) => {
    const q = new URL(req.url ?? '', 'http://x').searchParams;
    const from = Number(q.get('continue') ?? 0);
    asked.push({ limit: Number(q.get('limit')), from });
    const limit = opts.ignoreLimit ? sizes.length : Number(q.get('limit'));
    const to = Math.min(sizes.length, from + limit);
    const items = sizes.slice(from, to).map((n, i) => ({ metadata: { name: `o${from + i}`, annotations: { pad: (opts.pad ?? 'x').repeat(n) } } }));
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify({ metadata: { resourceVersion: '42', continue: to < sizes.length ? String(to) : undefined }, items }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return { server, client: KubeClient.forEndpoint({ server: `http://127.0.0.1:${port}` }, { qps: 0, burst: 1 }), asked };
}

describe('listPages', function () {
  it('cuts an answer past the budget, asks for the same page again with fewer objects, and lists every object once', async function () {
    // Mixed sizes: small ones, a run of large ones, one larger than the whole budget.
    const sizes = [...Array<number>(30).fill(50), ...Array<number>(12).fill(3000), 25_000, ...Array<number>(30).fill(50)];
    const { server, client, asked } = await listServer(sizes);
    try {
      const names: string[] = [];
      const rv = await listPages(client, '/api/v1/configmaps', {}, new PageSizer(100, 10_000), 'configmaps', (items: KubeObject[]) => {
        for (const o of items) names.push(o.metadata?.name ?? '');
      });
      expect(rv).to.equal('42');
      expect(names).to.deep.equal(sizes.map((_, i) => `o${i}`));
      // A page started where the last one read ended: a cut page is asked for again from the same place.
      const froms = asked.map((a) => a.from);
      for (let i = 1; i < asked.length; i++) expect(froms[i]! >= froms[i - 1]!).to.equal(true);
      expect(froms.length).to.be.above(new Set(froms).size, 'some page was asked for again');
      expect(asked.some((a) => a.from === 42 && a.limit === 1), 'the object past the budget was read alone').to.equal(true);
    } finally {
      client.close();
      server.close();
    }
  });

  it('sizes pages by bytes: objects of text outside ASCII are not cut page after page', async function () {
    // 3,000 characters of 3 bytes each: sized by characters, every page would be asked a third too large.
    const { server, client, asked } = await listServer(Array<number>(60).fill(3000), { pad: '€' });
    try {
      let listed = 0;
      const sizer = new PageSizer(100, 100_000);
      const steps: string[] = [];
      const [cut, read] = [sizer.cut.bind(sizer), sizer.read.bind(sizer)];
      sizer.cut = () => (steps.push('cut'), cut());
      sizer.read = (bytes, items) => (steps.push('read'), read(bytes, items));
      await listPages(client, '/api/v1/configmaps', {}, sizer, 'configmaps', (items) => void (listed += items.length));
      expect(listed).to.equal(60);
      expect(steps.slice(steps.indexOf('read')), 'no cut once a page was read').to.not.include('cut');
      expect(asked.length).to.be.below(20);
    } finally {
      client.close();
      server.close();
    }
  });

  it('a server that ignores limit: cut down to one object, then refused with an error that says so', async function () {
    // Some 280 MB through a local server: seconds on a machine busy with other work, and nothing here is about speed.
    this.timeout(120_000);
    // 70 objects of 1 MB: past the one-object cap of 64 MiB, which no object etcd stores reaches.
    const { server, client, asked } = await listServer(Array<number>(70).fill(1024 * 1024), { ignoreLimit: true });
    try {
      const err = await listPages(client, '/api/v1/configmaps', {}, new PageSizer(8, 10_000), 'configmaps', () => undefined).catch((e: unknown) => e);
      expect(err).to.be.instanceOf(Error);
      expect((err as Error).message).to.match(/list of configmaps: the answer for one object is over 67108864 bytes \(a server that ignores limit\?\)/);
      expect(asked.map((a) => a.limit)).to.deep.equal([8, 4, 2, 1]);
    } finally {
      client.close();
      server.close();
    }
  });

  it('the transport stops reading at the byte limit and says so', async function () {
    const { server, client } = await listServer(Array<number>(10).fill(10_000));
    try {
      const err = await client.requestText('GET', '/api/v1/configmaps', { query: { limit: 10 }, maxBodyBytes: 20_000 }).catch((e: unknown) => e);
      expect(err).to.be.instanceOf(AnswerTooLargeError);
      expect((err as AnswerTooLargeError).message).to.match(/GET \/api\/v1\/configmaps: answer over 20000 bytes/);
      // The same client goes on working (the cut connection is not reused).
      expect((await client.request<{ items: unknown[] }>('GET', '/api/v1/configmaps', { query: { limit: 1 }, maxBodyBytes: 20_000 })).items).to.have.length(1);
    } finally {
      client.close();
      server.close();
    }
  });
});

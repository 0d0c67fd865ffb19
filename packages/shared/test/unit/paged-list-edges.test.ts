import { expect } from 'chai';
import { classifyError } from '../../src/client/errors.js';
import { listPages, PageSizer } from '../../src/client/paged-list.js';
import type { KubeObject } from '../../src/informer/object-key.js';
import { Resources } from '../../src/informer/resources.js';
import { failure } from '@topovol/testing';
import { fakeApi, query } from './fake-api-server.js';

// Paged lists (paged-list.ts): a failed page, an empty one, the managedFields cut, and the page
// size that adapts to large objects. Written from mutation testing of the client.

describe('listPages and PageSizer edges', function () {
  it('a page the server fails is that failure, at once: not taken for an answer too large and asked for again', async function () {
    // An expired continue token (410 Expired) must reach the caller, whose relist starts over.
    const api = await fakeApi((x) =>
      query(x).get('continue') === 'p2'
        ? { status: 410, body: JSON.stringify({ kind: 'Status', code: 410, reason: 'Expired', message: 'The provided continue parameter is too old' }) }
        : { status: 200, body: JSON.stringify({ metadata: { resourceVersion: '5', continue: 'p2' }, items: [{ metadata: { name: 'a' } }] }) },
    );
    try {
      const sizer = new PageSizer(100, 10_000);
      const err = await failure(listPages(api.client, '/api/v1/configmaps', {}, sizer, 'configmaps', () => undefined));
      expect(classifyError(err).kind, 'a relist follows Gone').to.equal('Gone');
      expect(api.seen).to.have.length(2);
    } finally {
      await api.close();
    }
  });

  it('a list whose items are null (a Go nil slice) is an empty list', async function () {
    // Go's encoding/json writes a nil slice as null.
    const api = await fakeApi(() => ({ status: 200, body: '{"metadata":{"resourceVersion":"8"},"items":null}' }));
    try {
      const pages: number[] = [];
      const rv = await listPages(api.client, '/api/v1/configmaps', {}, new PageSizer(10), 'configmaps', (items) => void pages.push(items.length));
      expect([rv, pages]).to.deep.equal(['8', [0]]);
    } finally {
      await api.close();
    }
  });

  it('keeps managedFields unless the caller asked for them cut', async function () {
    // A caller that writes back what it read (apply, a merge patch from it) needs them.
    const page = JSON.stringify({ metadata: { resourceVersion: '5' }, items: [{ metadata: { name: 'a', managedFields: [{ manager: 'm' }] } }] });
    const api = await fakeApi(() => ({ status: 200, body: page }));
    try {
      const kept: KubeObject[] = [];
      await listPages(api.client, '/api/v1/configmaps', {}, new PageSizer(10), 'configmaps', (items) => void kept.push(...items));
      const cut: KubeObject[] = [];
      await listPages(api.client, '/api/v1/configmaps', {}, new PageSizer(10), 'configmaps', (items) => void cut.push(...items), { withoutManagedFields: true });
      expect(kept[0]?.metadata?.managedFields).to.deep.equal([{ manager: 'm' }]);
      expect(cut[0]?.metadata).to.deep.equal({ name: 'a' });
    } finally {
      await api.close();
    }
  });

  it('a cut halves rounding down: an odd count of objects is not asked for again nearly whole', function () {
    const s = new PageSizer(3, 1000);
    expect(s.cut()).to.equal(true);
    expect(s.next).to.equal(1);
    const t = new PageSizer(301, 1000);
    t.cut();
    expect(t.next).to.equal(150);
  });

  it("keeps what it learnt about a resource's page size from one list to the next", async function () {
    // Else every relist of a namespace of large objects starts at 500 a page and is cut again.
    // 40 objects of about 100 KB: one page, after which objects that large fill half of 16 MiB at 83 a page.
    const api = await fakeApi((x) => {
      const q = query(x);
      const from = Number(q.get('continue') ?? 0);
      const to = Math.min(40, from + Number(q.get('limit')));
      const items = Array.from({ length: to - from }, (_, i) => ({ metadata: { name: `o${from + i}`, annotations: { pad: 'x'.repeat(100_000) } } }));
      return { status: 200, body: JSON.stringify({ metadata: { resourceVersion: '9', continue: to < 40 ? String(to) : undefined }, items }) };
    });
    try {
      const first = await api.client.list(Resources.configMaps, { namespace: 'ns' });
      expect(first.items).to.have.length(40);
      const before = api.seen.length;
      await api.client.list(Resources.configMaps, { namespace: 'ns' });
      expect(Number(query(api.seen[0]!).get('limit')), 'the first list starts at 500').to.equal(500);
      expect(Number(query(api.seen[before]!).get('limit')), 'the second starts where the first ended').to.be.below(500);
    } finally {
      await api.close();
    }
  });
});

import { expect } from 'chai';
import { classifyError, KubeApiError } from '../../src/client/errors.js';
import { listPages, PageSizer } from '../../src/client/paged-list.js';
import { DROPPED_PAGE_WAIT_MS, PAGE_RETRIES, PAGE_RETRY_MAX_WAIT_MS, pageRetryWaitMs } from '../../src/client/page-retry.js';
import { failure } from '@topovol/testing';
import { fakeApi, query } from './fake-api-server.js';
import type { Answer, Seen } from './fake-api-server.js';

// A list page that fails the way client-go's rest client retries (rest/with_retry.go) is asked for
// again, from the same continue token; any other failure is the list's.

const status = (code: number, reason: string, retryAfter?: string): Answer => ({
  status: code,
  headers: retryAfter === undefined ? {} : { 'Retry-After': retryAfter },
  body: JSON.stringify({ kind: 'Status', code, reason, message: `injected ${code}` }),
});

/** Three pages of two objects each, "a".."f"; `fail(page, nth request for it)` may answer instead. */
function threePages(fail: (page: number, nth: number) => Answer | undefined): (s: Seen) => Answer {
  const asked = [0, 0, 0];
  return (s) => {
    const page = Number(query(s).get('continue') ?? 0);
    const nth = ++asked[page]!;
    const failed = fail(page, nth);
    if (failed) return failed;
    const names = ['a', 'b', 'c', 'd', 'e', 'f'].slice(page * 2, page * 2 + 2);
    return { status: 200, body: JSON.stringify({ metadata: { resourceVersion: '7', continue: page < 2 ? String(page + 1) : undefined }, items: names.map((name) => ({ metadata: { name } })) }) };
  };
}

async function listAll(answer: (s: Seen) => Answer, signal?: AbortSignal): Promise<{ names: string[]; waits: number[]; pagesAsked: string[]; err?: unknown }> {
  const api = await fakeApi(answer);
  const names: string[] = [];
  const waits: number[] = [];
  try {
    const err = await listPages(api.client, '/api/v1/configmaps', {}, new PageSizer(2), 'configmaps', (items) => void names.push(...items.map((o) => o.metadata?.name ?? '')), {
      signal,
      sleep: (ms) => {
        waits.push(ms);
        return Promise.resolve();
      },
    }).then(
      () => undefined,
      (e: unknown) => e,
    );
    return { names, waits, pagesAsked: api.seen.map((s) => query(s).get('continue') ?? '0'), err };
  } finally {
    await api.close();
  }
}

describe('listPages: a failed page is asked for again as client-go would', function () {
  const api429 = new KubeApiError(429, { reason: 'TooManyRequests' }, 2);
  const cases: { name: string; err: unknown; retries?: number; want: number | undefined }[] = [
    { name: '429 with Retry-After 2', err: api429, want: 2000 },
    { name: '503 with Retry-After 1', err: new KubeApiError(503, { reason: 'ServiceUnavailable' }, 1), want: 1000 },
    { name: '500 with Retry-After 0', err: new KubeApiError(500, { reason: 'InternalError' }, 0), want: 0 },
    { name: `429 with Retry-After ${PAGE_RETRY_MAX_WAIT_MS / 1000} (the longest waited in place)`, err: new KubeApiError(429, { reason: 'TooManyRequests' }, PAGE_RETRY_MAX_WAIT_MS / 1000), want: PAGE_RETRY_MAX_WAIT_MS },
    { name: '429 with a longer Retry-After (left to the caller, which honours it)', err: new KubeApiError(429, { reason: 'TooManyRequests' }, PAGE_RETRY_MAX_WAIT_MS / 1000 + 1), want: undefined },
    { name: '429 without Retry-After', err: new KubeApiError(429, { reason: 'TooManyRequests' }), want: undefined },
    { name: '500 without Retry-After', err: new KubeApiError(500, { reason: 'InternalError' }), want: undefined },
    { name: '409 with Retry-After', err: new KubeApiError(409, { reason: 'Conflict' }, 1), want: undefined },
    { name: '410 Expired continue token', err: new KubeApiError(410, { reason: 'Expired' }), want: undefined },
    { name: 'connection reset', err: Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }), want: DROPPED_PAGE_WAIT_MS },
    { name: 'reset as a cause', err: new Error('fetch failed', { cause: { code: 'ECONNRESET' } }), want: DROPPED_PAGE_WAIT_MS },
    { name: 'answer cut short', err: Object.assign(new Error('premature close'), { code: 'ERR_STREAM_PREMATURE_CLOSE' }), want: DROPPED_PAGE_WAIT_MS },
    { name: 'connection refused (the loop backs off)', err: Object.assign(new Error('refused'), { code: 'ECONNREFUSED' }), want: undefined },
    { name: 'timed out', err: Object.assign(new Error('timed out'), { code: 'ETIMEDOUT' }), want: undefined },
    { name: 'aborted', err: Object.assign(new Error('aborted'), { name: 'AbortError' }), want: undefined },
    { name: 'not an error', err: null, want: undefined },
    { name: `429 after ${PAGE_RETRIES} retries`, err: api429, retries: PAGE_RETRIES, want: undefined },
    { name: `429 after ${PAGE_RETRIES - 1} retries`, err: api429, retries: PAGE_RETRIES - 1, want: 2000 },
  ];
  for (const c of cases) it(`pageRetryWaitMs: ${c.name}`, () => expect(pageRetryWaitMs(c.err, c.retries ?? 0)).to.equal(c.want));

  it('a throttled page is asked for again after its Retry-After, from the same continue token: every object once, in order', async function () {
    const r = await listAll(threePages((page, nth) => (page === 1 && nth <= 2 ? status(429, 'TooManyRequests', '1') : undefined)));
    expect(r.err).to.equal(undefined);
    expect(r.names).to.deep.equal(['a', 'b', 'c', 'd', 'e', 'f']);
    expect(r.waits).to.deep.equal([1000, 1000]);
    expect(r.pagesAsked, 'the first page not asked for again').to.deep.equal(['0', '1', '1', '1', '2']);
  });

  it('a connection dropped before the answer: the page again after 1 s', async function () {
    // The first page: its socket is new, so the transport's replay of a stale pooled connection
    // (http-transport.ts) does not take it.
    const r = await listAll(threePages((page, nth) => (page === 0 && nth === 1 ? { status: 0, reset: true } : undefined)));
    expect(r.err).to.equal(undefined);
    expect(r.names).to.deep.equal(['a', 'b', 'c', 'd', 'e', 'f']);
    expect(r.waits).to.deep.equal([DROPPED_PAGE_WAIT_MS]);
  });

  it(`${PAGE_RETRIES} retries a page: a page throttled once more fails the list with the 429; each page has its own count`, async function () {
    const always = await listAll(threePages((page) => (page === 1 ? status(429, 'TooManyRequests', '0') : undefined)));
    expect(classifyError(always.err).kind).to.equal('TooManyRequests');
    expect(always.pagesAsked.filter((p) => p === '1')).to.have.length(PAGE_RETRIES + 1);
    const each = await listAll(threePages((page, nth) => (nth <= PAGE_RETRIES ? status(503, 'ServiceUnavailable', '0') : undefined)));
    expect(each.err).to.equal(undefined);
    expect(each.names).to.have.length(6);
    expect(each.waits).to.have.length(3 * PAGE_RETRIES);
  });

  it('a 500 without Retry-After fails the list at once', async function () {
    const r = await listAll(threePages((page) => (page === 1 ? status(500, 'InternalError') : undefined)));
    expect(classifyError(r.err).kind).to.equal('ServerError');
    expect(r.pagesAsked).to.deep.equal(['0', '1']);
  });

  it('a list stopped while it waits to ask again ends with the failure, asking nothing more', async function () {
    const stop = new AbortController();
    const api = await fakeApi(threePages((page) => (page === 1 ? status(429, 'TooManyRequests', '1') : undefined)));
    try {
      const err = await failure(
        listPages(api.client, '/api/v1/configmaps', {}, new PageSizer(2), 'configmaps', () => undefined, {
          signal: stop.signal,
          sleep: () => {
            stop.abort();
            return Promise.resolve();
          },
        }),
      );
      expect(classifyError(err).kind).to.equal('TooManyRequests');
      expect(api.seen).to.have.length(2);
    } finally {
      await api.close();
    }
  });
});

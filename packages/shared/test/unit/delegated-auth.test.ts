import { expect } from 'chai';
import { bearerToken, DelegatedAuth } from '../../src/http/delegated-auth.js';
import { TtlCache } from '../../src/http/ttl-cache.js';
import type { AccessVerdict, AuthReviews, TokenVerdict, UserInfo } from '../../src/http/delegated-auth.js';

/** The API server's side, as data: which tokens name whom, who may get which path; counts every review. */
class FakeReviews implements AuthReviews {
  tokenCalls = 0;
  accessCalls = 0;
  failTokens = false;
  failAccess = false;
  users = new Map<string, UserInfo>([['good', { username: 'system:serviceaccount:monitoring:prometheus', groups: ['system:serviceaccounts'] }]]);
  allowed = new Set(['system:serviceaccount:monitoring:prometheus /metrics get']);
  hold: Promise<void> | undefined;

  async reviewToken(token: string): Promise<TokenVerdict> {
    this.tokenCalls++;
    await this.hold;
    if (this.failTokens) throw new Error('connect ECONNREFUSED');
    const user = this.users.get(token);
    return user ? { authenticated: true, user } : { authenticated: false, reason: 'invalid bearer token' };
  }

  reviewAccess(user: UserInfo, path: string, verb: string): Promise<AccessVerdict> {
    this.accessCalls++;
    if (this.failAccess) return Promise.reject(new Error('503 Service Unavailable'));
    return Promise.resolve({ allowed: this.allowed.has(`${user.username} ${path} ${verb}`), reason: '' });
  }
}

describe('metrics endpoint authentication and authorization (DelegatedAuth)', function () {
  describe('bearerToken: as kube-apiserver reads an Authorization header', function () {
    const cases: [string | undefined, string | undefined][] = [
      ['Bearer abc', 'abc'],
      ['bearer abc', 'abc'],
      ['BEARER   abc  ', 'abc'],
      [undefined, undefined],
      ['', undefined],
      ['Bearer', undefined],
      ['Bearer ', undefined],
      ['Basic dXNlcjpwYXNz', undefined],
      ['Bearer a b', undefined],
      ['abc', undefined],
    ];
    for (const [header, want] of cases) it(`${JSON.stringify(header)} → ${JSON.stringify(want)}`, () => expect(bearerToken(header)).to.equal(want));
  });

  let clock = 0;
  const now = (): number => clock;
  beforeEach(() => (clock = 1_000_000));

  it('401 without a token or with one the API server does not authenticate; 403 for a user it does not allow; 200 for a reader', async function () {
    const api = new FakeReviews();
    api.users.set('nobody', { username: 'system:serviceaccount:default:nobody' });
    const auth = new DelegatedAuth(api, { now });
    expect(await auth.check(undefined, '/metrics', 'get')).to.deep.include({ status: 401 });
    // A bare "Unauthorized" to the caller, as kube-apiserver answers; the reason is for the log.
    expect(await auth.check('Bearer forged', '/metrics', 'get')).to.deep.equal({ status: 401, message: 'Unauthorized', detail: 'invalid bearer token', error: false });
    const denied = await auth.check('Bearer nobody', '/metrics', 'get');
    expect(denied.status).to.equal(403);
    expect(denied).to.have.property('message').that.contains('User "system:serviceaccount:default:nobody" cannot get path "/metrics"');
    expect(await auth.check('Bearer good', '/metrics', 'get')).to.deep.equal({ status: 200, user: 'system:serviceaccount:monitoring:prometheus' });
    // The path and verb are the request's: the reader's grant is for get on /metrics only.
    expect((await auth.check('Bearer good', '/metrics/extra', 'get')).status).to.equal(403);
  });

  it('a review that cannot be made fails closed (401 for the token, 500 for access) and is not kept', async function () {
    const api = new FakeReviews();
    const auth = new DelegatedAuth(api, { now });
    api.failTokens = true;
    const a = await auth.check('Bearer good', '/metrics', 'get');
    expect(a).to.deep.include({ status: 401, message: 'Unauthorized', error: true });
    expect(a).to.have.property('detail').that.contains('ECONNREFUSED');
    api.failTokens = false;
    api.failAccess = true;
    expect(await auth.check('Bearer good', '/metrics', 'get')).to.deep.include({ status: 500, message: 'Internal Server Error', error: true });
    api.failAccess = false;
    expect((await auth.check('Bearer good', '/metrics', 'get')).status).to.equal(200);
    expect(api.tokenCalls).to.equal(2);
    expect(api.accessCalls).to.equal(2);
  });

  it('verdicts are reused within their TTL, both ways, and asked again after it: a revoked reader is refused within one TTL', async function () {
    const api = new FakeReviews();
    const auth = new DelegatedAuth(api, { now, tokenTtlMs: 10_000, accessTtlMs: 10_000 });
    for (let i = 0; i < 5; i++) expect((await auth.check('Bearer good', '/metrics', 'get')).status).to.equal(200);
    for (let i = 0; i < 5; i++) expect((await auth.check('Bearer forged', '/metrics', 'get')).status).to.equal(401);
    expect([api.tokenCalls, api.accessCalls]).to.deep.equal([2, 1]);
    api.allowed.clear(); // the binding is deleted
    clock += 9_999;
    expect((await auth.check('Bearer good', '/metrics', 'get')).status).to.equal(200);
    clock += 1;
    expect((await auth.check('Bearer good', '/metrics', 'get')).status).to.equal(403);
    expect([api.tokenCalls, api.accessCalls]).to.deep.equal([3, 2]);
  });

  it('a flood of made-up tokens: the caches keep at most maxEntries, and at most maxEntries reviews wait at once', async function () {
    const api = new FakeReviews();
    let release!: () => void;
    api.hold = new Promise((r) => (release = r));
    const auth = new DelegatedAuth(api, { now, maxEntries: 8, maxInFlight: 8 });
    const waiting = Array.from({ length: 8 }, (_, i) => auth.check(`Bearer made-up-${i}`, '/metrics', 'get'));
    const over = await auth.check('Bearer made-up-8', '/metrics', 'get');
    expect(over.status).to.equal(401);
    expect(over).to.have.property('detail').that.contains('reviews already in flight');
    release();
    for (const w of await Promise.all(waiting)) expect(w.status).to.equal(401);
    api.hold = undefined;
    for (let i = 9; i < 100; i++) await auth.check(`Bearer made-up-${i}`, '/metrics', 'get');
    expect(api.tokenCalls, 'the one refused in flight was never sent').to.equal(99);
    // The reader still gets in, and its verdict is kept despite the flood before it.
    expect((await auth.check('Bearer good', '/metrics', 'get')).status).to.equal(200);
    expect((await auth.check('Bearer good', '/metrics', 'get')).status).to.equal(200);
    expect(api.tokenCalls).to.equal(100);
  });

  it('scrapes at once with one token share one review', async function () {
    const api = new FakeReviews();
    const auth = new DelegatedAuth(api, { now });
    const answers = await Promise.all(Array.from({ length: 20 }, () => auth.check('Bearer good', '/metrics', 'get')));
    expect(answers.every((a) => a.status === 200)).to.equal(true);
    expect([api.tokenCalls, api.accessCalls]).to.deep.equal([1, 1]);
  });

  describe('TtlCache', function () {
    it('evicts the least recently used entry past max (a reader scraping all along outlives a flood)', function () {
      const c = new TtlCache<number>(100, 2, now);
      c.set('reader', 1);
      c.set('flood-1', 2);
      expect(c.peek('reader')).to.equal(1);
      c.set('flood-2', 3);
      expect([c.peek('reader'), c.peek('flood-1'), c.peek('flood-2')]).to.deep.equal([1, undefined, 3]);
    });

    it('evicts the oldest entry past max and forgets expired ones', function () {
      const c = new TtlCache<number>(100, 2, now);
      c.set('a', 1);
      c.set('b', 2);
      c.set('c', 3);
      expect([c.peek('a'), c.peek('b'), c.peek('c'), c.size]).to.deep.equal([undefined, 2, 3, 2]);
      clock += 100;
      expect([c.peek('b'), c.size]).to.deep.equal([undefined, 1]);
    });
  });
});

import { expect } from 'chai';
import nock from 'nock';
import { classifyError, isAlreadyExists, isConflict, isGone, isNotFound, isNotFoundNamed, isTooManyRequests, KubeApiError, parseRetryAfter } from '../../src/client/errors.js';
import type { ApiErrorKind } from '../../src/client/errors.js';
import { KubeClient } from '../../src/client/kube-client.js';
import { getIfPresent } from '../../src/client/get-if-present.js';
import { Resources } from '../../src/informer/resources.js';
import { failure } from '@topovol/testing';

// nock stands in for the API server only to produce error answers a real server rarely gives on
// demand (429, 5xx, dropped connections); behaviour against a real server is in the integration suite.
const SERVER = 'https://kube.invalid';

function client(timeoutMs?: number): KubeClient {
  // nodeHttp: nock intercepts Node's http module, not the direct transport's sockets.
  return KubeClient.forEndpoint({ server: SERVER, token: 'secret-token' }, { qps: 0, burst: 1, timeoutMs, nodeHttp: true });
}

const status = (code: number, reason: string, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  kind: 'Status',
  apiVersion: 'v1',
  status: 'Failure',
  message: `${reason} happened`,
  reason,
  code,
  ...extra,
});

describe('KubeClient error classification', function () {
  before(() => nock.disableNetConnect());
  afterEach(() => nock.cleanAll());
  after(() => nock.enableNetConnect());

  const table: [string, number, Record<string, unknown> | string, Record<string, string>, ApiErrorKind, boolean][] = [
    ['404 NotFound', 404, status(404, 'NotFound'), {}, 'NotFound', false],
    ['409 Conflict', 409, status(409, 'Conflict'), {}, 'Conflict', true],
    ['409 AlreadyExists', 409, status(409, 'AlreadyExists'), {}, 'AlreadyExists', false],
    ['410 Gone (Expired)', 410, status(410, 'Expired'), {}, 'Gone', true],
    ['403 Forbidden', 403, status(403, 'Forbidden'), {}, 'Forbidden', false],
    ['401 Unauthorized', 401, status(401, 'Unauthorized'), {}, 'Unauthorized', false],
    ['422 Invalid', 422, status(422, 'Invalid'), {}, 'Invalid', false],
    ['504 Timeout', 504, status(504, 'Timeout'), {}, 'Timeout', true],
    ['500 with a non-JSON body', 500, 'upstream broke', {}, 'ServerError', true],
    ['429 with Retry-After', 429, status(429, 'TooManyRequests'), { 'Retry-After': '7' }, 'TooManyRequests', true],
  ];
  for (const [what, code, body, headers, kind, retriable] of table) {
    it(`classifies ${what}`, async function () {
      nock(SERVER).get('/api/v1/namespaces/ns/configmaps/x').reply(code, body, headers);
      const err = await failure(client().get(Resources.configMaps, 'x', 'ns'));
      expect(err).to.be.instanceOf(KubeApiError);
      const c = classifyError(err);
      expect(c).to.include({ kind, code, retriable });
      if (code === 429) expect(c.retryAfterSeconds).to.equal(7);
    });
  }

  it('takes Retry-After from the Status details when there is no header', async function () {
    nock(SERVER)
      .get('/api/v1/nodes/n')
      .reply(429, status(429, 'TooManyRequests', { details: { retryAfterSeconds: 3 } }));
    const err = await failure(client().get(Resources.nodes, 'n'));
    expect(isTooManyRequests(err)).to.equal(true);
    expect(classifyError(err).retryAfterSeconds).to.equal(3);
  });

  it('parses Retry-After as seconds or an HTTP date', function () {
    const now = Date.parse('2026-11-22T10:00:00Z');
    expect(parseRetryAfter('120', now)).to.equal(120);
    expect(parseRetryAfter('Sun, 22 Nov 2026 10:00:30 GMT', now)).to.equal(30);
    expect(parseRetryAfter('garbage', now)).to.equal(undefined);
    expect(parseRetryAfter(undefined, now)).to.equal(undefined);
  });

  it('classifies a refused connection', async function () {
    nock(SERVER).get('/api/v1/nodes/n').replyWithError(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }));
    const c = classifyError(await failure(client().get(Resources.nodes, 'n')));
    expect(c).to.include({ kind: 'Connection', retriable: true });
  });

  it('classifies a request timeout', async function () {
    nock(SERVER).get('/api/v1/nodes/n').delay(500).reply(200, {});
    const c = classifyError(await failure(client(50).get(Resources.nodes, 'n')));
    expect(c).to.include({ kind: 'Timeout', retriable: true });
  });

  it('the is* helpers agree with classifyError', function () {
    const e = (code: number, reason: string): KubeApiError => new KubeApiError(code, { reason });
    expect(isNotFound(e(404, 'NotFound'))).to.equal(true);
    expect(isConflict(e(409, 'Conflict'))).to.equal(true);
    expect(isAlreadyExists(e(409, 'AlreadyExists'))).to.equal(true);
    expect(isConflict(e(409, 'AlreadyExists'))).to.equal(false);
    expect(isGone(e(410, 'Gone'))).to.equal(true);
  });

  it('sends the bearer token, a user agent and preconditions on delete', async function () {
    const scope = nock(SERVER, { reqheaders: { authorization: 'Bearer secret-token', 'user-agent': /topovol/ } })
      .delete('/api/v1/persistentvolumes/pv1', (b: { preconditions?: { uid?: string; resourceVersion?: string } }) => b.preconditions?.uid === 'u1' && b.preconditions.resourceVersion === '42')
      .reply(200, {});
    await client().delete(Resources.persistentVolumes, 'pv1', undefined, { preconditions: { uid: 'u1', resourceVersion: '42' } });
    expect(scope.isDone()).to.equal(true);
  });

  it('server-side apply uses the apply content type, field manager and force', async function () {
    const scope = nock(SERVER, { reqheaders: { 'content-type': 'application/apply-patch+yaml' } })
      .patch('/apis/storage.k8s.io/v1/storageclasses/fast')
      .query({ fieldManager: 'topovol', force: 'true' })
      .reply(200, { metadata: { name: 'fast' } });
    await client().apply(Resources.storageClasses, { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: 'fast' } }, 'topovol', { force: true });
    expect(scope.isDone()).to.equal(true);
  });

  it('builds its token bucket from qps and burst (0 = unthrottled)', function () {
    expect(client().limiter.unlimited).to.equal(true);
    const limited = KubeClient.forEndpoint({ server: SERVER }, { qps: 20, burst: 30, nodeHttp: true });
    expect(limited.limiter.unlimited).to.equal(false);
    let granted = 0;
    while (limited.limiter.tryAccept()) granted++;
    expect(granted).to.equal(30);
  });

  it('withRateLimit gives a budget of its own: draining it leaves the shared one untouched (capacity writes)', function () {
    const shared = client();
    const own = shared.withRateLimit(5, 10);
    expect(own.limiter).to.not.equal(shared.limiter);
    let granted = 0;
    while (own.limiter.tryAccept()) granted++;
    expect(granted).to.equal(10);
    expect(shared.limiter.tryAccept()).to.equal(true);
  });
});

describe('getIfPresent: only a 404 that names the object is "not there"', function () {
  before(() => nock.disableNetConnect());
  afterEach(() => nock.cleanAll());
  after(() => nock.enableNetConnect());
  const path = '/api/v1/namespaces/ns/persistentvolumeclaims/c';

  it("is undefined on kube-apiserver's Status naming the claim", async function () {
    nock(SERVER).get(path).reply(404, status(404, 'NotFound', { details: { name: 'c', kind: 'persistentvolumeclaims' } }));
    expect(await getIfPresent(client(), Resources.persistentVolumeClaims, 'c', 'ns')).to.equal(undefined);
  });

  const notAboutTheClaim: [string, Record<string, unknown> | string][] = [
    ["a proxy's plain 404", '404 page not found'],
    ['a NotFound Status naming no object', status(404, 'NotFound')],
    ['a NotFound Status naming another object', status(404, 'NotFound', { details: { name: 'other', kind: 'persistentvolumeclaims' } })],
    ['a NotFound Status naming another resource', status(404, 'NotFound', { details: { name: 'c', kind: 'configmaps' } })],
  ];
  for (const [what, body] of notAboutTheClaim) {
    it(`throws on ${what} (the caller retries instead of acting on "gone")`, async function () {
      nock(SERVER).get(path).reply(404, body);
      const err = await failure(getIfPresent(client(), Resources.persistentVolumeClaims, 'c', 'ns'));
      expect(isNotFound(err), 'still classified NotFound for everything else').to.equal(true);
      expect(isNotFoundNamed(err, 'persistentvolumeclaims', 'c')).to.equal(false);
    });
  }
});

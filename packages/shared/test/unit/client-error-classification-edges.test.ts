import { expect } from 'chai';
import { classifyError, isNamespaceGone, KubeApiError, parseRetryAfter, WriteFencedError, writeMayHaveApplied } from '../../src/client/errors.js';
import type { ApiErrorKind } from '../../src/client/errors.js';
import { KubeClient } from '../../src/client/kube-client.js';
import { Resources } from '../../src/informer/resources.js';
import { failure } from '@topovol/testing';
import { fakeApi } from './fake-api-server.js';

// How errors.ts classifies what it did not get from kube-apiserver as a Status (a proxy's answer,
// another client's exception, a socket error), and which failed writes may still have landed.
// Written from mutation testing of the client.

describe('classifyError: answers without a Status reason (a proxy, a body that is no Status)', function () {
  // Without a reason the kind follows the code, as apimachinery's IsConflict, IsGone, IsTimeout, …
  // fall back to the code for a reason they do not know (k8s.io/apimachinery/pkg/api/errors).
  // A 5xx or a timeout may come after the server took the write; a 4xx refused it.
  const byCode: [number, ApiErrorKind, boolean, boolean][] = [
    // code, kind, retriable, writeMayHaveApplied
    [409, 'Conflict', true, false],
    [410, 'Gone', true, false],
    [429, 'TooManyRequests', true, false],
    [401, 'Unauthorized', false, false],
    [400, 'BadRequest', false, false],
    [504, 'Timeout', true, true],
    // A proxy's request timeout: the write may be on the server all the same.
    [408, 'Timeout', true, true],
    [503, 'ServerError', true, true],
    // A code the runtime has no kind for: tried again, and a write may have landed.
    [405, 'Unknown', true, true],
  ];
  for (const [code, kind, retriable, mayHaveApplied] of byCode) {
    it(`${code} with a plain-text body is ${kind}`, function () {
      const err = KubeApiError.fromResponse(code, `upstream said ${code}`);
      expect(classifyError(err)).to.include({ kind, code, retriable });
      expect(writeMayHaveApplied(err), 'writeMayHaveApplied').to.equal(mayHaveApplied);
    });
  }

  it("kube-apiserver's 500 ServerTimeout is a Timeout", function () {
    // apimachinery's NewServerTimeout: code 500, reason ServerTimeout, the wait in details.
    const err = KubeApiError.fromResponse(500, JSON.stringify({ kind: 'Status', code: 500, reason: 'ServerTimeout', details: { retryAfterSeconds: 1 } }));
    expect(classifyError(err)).to.include({ kind: 'Timeout', retriable: true, retryAfterSeconds: 1 });
  });

  it('a JSON body that is no object (null) is still a KubeApiError of its code', async function () {
    const api = await fakeApi(() => ({ status: 500, body: 'null' }));
    try {
      const err = await failure(api.client.get(Resources.configMaps, 'c', 'ns'));
      expect(err).to.be.instanceOf(KubeApiError);
      expect(classifyError(err)).to.include({ kind: 'ServerError', code: 500 });
    } finally {
      await api.close();
    }
  });
});

describe('classifyError: what other clients and sockets throw', function () {
  it("client-node's ApiException (a numeric code, its body as text, its headers) keeps the Status reason and Retry-After", function () {
    const exists = { code: 409, body: JSON.stringify({ kind: 'Status', reason: 'AlreadyExists', code: 409, message: 'exists' }), headers: {} };
    expect(classifyError(exists)).to.include({ kind: 'AlreadyExists', code: 409, retriable: false });
    const busy = { code: 429, body: '{"kind":"Status","reason":"TooManyRequests","code":429}', headers: { 'retry-after': '4' } };
    expect(classifyError(busy)).to.include({ kind: 'TooManyRequests', retryAfterSeconds: 4 });
  });

  // None of these carries an answer, so a write that failed with one may have been applied.
  const thrown: [string, unknown, ApiErrorKind, boolean][] = [
    ['an AbortError', Object.assign(new Error('aborted'), { name: 'AbortError' }), 'Aborted', false],
    ["node-fetch's aborted", Object.assign(new Error('aborted'), { type: 'aborted' }), 'Aborted', false],
    ['fetch failed with ECONNRESET as its cause', new TypeError('fetch failed', { cause: Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }) }), 'Connection', true],
    ['a reset socket', Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }), 'Connection', true],
    ['a broken pipe', Object.assign(new Error('write EPIPE'), { code: 'EPIPE' }), 'Connection', true],
    ["node-fetch's system error", Object.assign(new Error('request failed'), { type: 'system' }), 'Connection', true],
    ['a FetchError', Object.assign(new Error('request failed'), { name: 'FetchError' }), 'Connection', true],
    ["node-fetch's request-timeout", Object.assign(new Error('timeout'), { type: 'request-timeout' }), 'Timeout', true],
    ["node-fetch's body-timeout", Object.assign(new Error('timeout'), { type: 'body-timeout' }), 'Timeout', true],
    ['anything else', new Error('boom'), 'Unknown', true],
  ];
  for (const [what, err, kind, retriable] of thrown) {
    it(`${what} is ${kind}, ${retriable ? '' : 'not '}retriable, and may have been applied`, function () {
      expect(classifyError(err)).to.include({ kind, retriable });
      expect(writeMayHaveApplied(err)).to.equal(true);
    });
  }

  it('a write that got no answer in time may have been applied; a refusal or an unsent write was not', async function () {
    // client-go does not retry a write on a lost answer for the same reason: it is not idempotent
    // and may have been applied (k8s.io/client-go/rest/request.go).
    const api = await fakeApi(() => undefined);
    const slow = KubeClient.forEndpoint({ server: api.client.server }, { qps: 0, burst: 1, timeoutMs: 50 });
    try {
      // The server got the write and never answered: it may be on the server.
      const timedOut = await failure(slow.create(Resources.configMaps, { metadata: { name: 'c', namespace: 'ns' } }));
      expect(classifyError(timedOut).kind).to.equal('Timeout');
      expect(writeMayHaveApplied(timedOut)).to.equal(true);
    } finally {
      slow.close();
      await api.close();
    }
    expect(writeMayHaveApplied(new KubeApiError(409, { reason: 'Conflict' }))).to.equal(false);
    expect(writeMayHaveApplied(new KubeApiError(422, { reason: 'Invalid' }))).to.equal(false);
    expect(writeMayHaveApplied(new WriteFencedError('PUT', '/x', 'lease'))).to.equal(false);
  });
});

describe('parseRetryAfter and isNamespaceGone edges', function () {
  it('rounds an HTTP date up to whole seconds, and a date in the past is no wait', function () {
    // Retry-After may be an HTTP date (RFC 9110 section 10.2.3); waking early would be refused again.
    const now = Date.parse('2026-11-22T10:00:00.500Z');
    expect(parseRetryAfter('Sun, 22 Nov 2026 10:00:30 GMT', now)).to.equal(30);
    expect(parseRetryAfter('Sun, 22 Nov 2026 09:59:00 GMT', now)).to.equal(0);
  });

  it('is false for what is not a KubeApiError, for another namespace, and for a 403 that is not NamespaceTerminating', function () {
    // The namespace's own 404, or the NamespaceLifecycle admission plugin's 403 with cause
    // NamespaceTerminating (k8s.io/api core/v1 NamespaceTerminatingCause); any other 403 is RBAC.
    expect(isNamespaceGone(new Error('socket hang up'), 'ns')).to.equal(false);
    expect(isNamespaceGone(new WriteFencedError('POST', '/x', 'lease'), 'ns')).to.equal(false);
    expect(isNamespaceGone(new KubeApiError(404, { reason: 'NotFound', details: { kind: 'namespaces', name: 'other' } }), 'ns')).to.equal(false);
    expect(isNamespaceGone(new KubeApiError(404, { reason: 'NotFound', details: { kind: 'namespaces', name: 'ns' } }), 'ns')).to.equal(true);
    const forbidden = (reason: string): KubeApiError => new KubeApiError(403, { reason: 'Forbidden', details: { causes: [{ reason }] } });
    expect(isNamespaceGone(forbidden('FieldValueForbidden'), 'ns')).to.equal(false);
    expect(isNamespaceGone(forbidden('NamespaceTerminating'), 'ns')).to.equal(true);
  });
});

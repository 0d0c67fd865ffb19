import { expect } from 'chai';
import { classifyError, isRefusal, KubeApiError, writeMayHaveApplied } from '../../src/client/errors.js';
import { InvalidPathSegmentError } from '../../src/client/path-segment.js';
import { Resources } from '../../src/informer/resources.js';
import { failure } from '@topovol/testing';
import { fakeApi, pathOf, query } from './fake-api-server.js';

// What KubeClient sends (paths, subresources, query, bodies, content types) and what it makes of
// answers that are no object. Written from mutation testing of the client.

describe('KubeClient: answers and what writes send', function () {
  it('a 3xx answer (a redirect from a proxy, a 300) is a failure of its code, not an object', async function () {
    for (const status of [300, 302]) {
      const api = await fakeApi(() => ({ status, body: '<html>moved</html>', headers: { Location: 'http://elsewhere.invalid/' } }));
      try {
        const err = await failure(api.client.get(Resources.configMaps, 'c', 'ns'));
        expect(err, String(status)).to.be.instanceOf(KubeApiError);
        expect((err as KubeApiError).code).to.equal(status);
      } finally {
        await api.close();
      }
    }
  });

  it('a watch the server refuses is a KubeApiError with its code and Retry-After, not a stream', async function () {
    // A reflector relists on Gone and waits on TooManyRequests: it must see which it got.
    const api = await fakeApi((s) => (query(s).get('resourceVersion') === 'old' ? { status: 410, body: '{"kind":"Status","code":410,"reason":"Expired"}' } : { status: 429, body: '{}', headers: { 'Retry-After': '5' } }));
    try {
      const ac = new AbortController();
      const gone = await failure(api.client.openStream('/api/v1/configmaps', { watch: true, resourceVersion: 'old' }, ac.signal));
      expect(classifyError(gone)).to.include({ kind: 'Gone', code: 410 });
      const busy = await failure(api.client.openStream('/api/v1/configmaps', { watch: true, resourceVersion: '1' }, ac.signal));
      expect(classifyError(busy)).to.include({ kind: 'TooManyRequests', retryAfterSeconds: 5 });
      ac.abort();
    } finally {
      await api.close();
    }
  });

  it('a delete sends its propagation policy, a grace period of 0, and dry run', async function () {
    // DeleteOptions travel in the body, dry run too: kube-apiserver reads a delete's query only when
    // it has no body (dry-run.test.ts shows it on a real one). All is its only value (metav1.DryRunAll).
    const api = await fakeApi();
    try {
      await api.client.delete(Resources.configMaps, 'c', 'ns', { propagationPolicy: 'Foreground', gracePeriodSeconds: 0, dryRun: true, preconditions: { uid: 'u1' } });
      const [s] = api.seen;
      expect(s?.method).to.equal('DELETE');
      expect(JSON.parse(s!.body)).to.deep.include({ propagationPolicy: 'Foreground', gracePeriodSeconds: 0, preconditions: { uid: 'u1' }, dryRun: ['All'] });
    } finally {
      await api.close();
    }
  });

  it('create, replace and patch carry dryRun=All and the field manager; only apply may force, and only when asked', async function () {
    // kube-apiserver refuses force on any patch but apply (ValidatePatchOptions,
    // k8s.io/apimachinery/pkg/apis/meta/v1/validation).
    const api = await fakeApi();
    try {
      const cm = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', namespace: 'ns', resourceVersion: '7' } };
      await api.client.create(Resources.configMaps, cm, { dryRun: true, fieldManager: 'fm' });
      await api.client.replace(Resources.configMaps, cm, { dryRun: true, fieldManager: 'fm' });
      await api.client.patch(Resources.configMaps, 'c', 'ns', 'merge', { data: { a: 'b' } }, { dryRun: true, fieldManager: 'fm', force: true });
      await api.client.apply(Resources.configMaps, cm, 'fm');
      expect(api.seen.map((x) => `${x.method} ${pathOf(x)}`)).to.deep.equal([
        'POST /api/v1/namespaces/ns/configmaps',
        'PUT /api/v1/namespaces/ns/configmaps/c',
        'PATCH /api/v1/namespaces/ns/configmaps/c',
        'PATCH /api/v1/namespaces/ns/configmaps/c',
      ]);
      const qs = api.seen.map(query);
      for (const q of qs.slice(0, 3)) expect(q.get('dryRun'), 'a dry-run write must not write').to.equal('All');
      for (const q of qs) expect(q.get('fieldManager')).to.equal('fm');
      expect(qs[2]?.has('force'), 'force is for apply only').to.equal(false);
      expect(qs[3]?.has('force'), 'apply forces only when asked').to.equal(false);
      expect(qs[3]?.has('dryRun')).to.equal(false);
    } finally {
      await api.close();
    }
  });

  it('refuses unsent: an apply without a field manager, a namespaced object without a namespace', async function () {
    // Without its namespace the path names another collection; kube-apiserver refuses an apply
    // without a fieldManager anyway (ValidatePatchOptions, k8s.io/apimachinery/pkg/apis/meta/v1/validation).
    const api = await fakeApi();
    try {
      expect(String(await failure(api.client.patch(Resources.configMaps, 'c', 'ns', 'apply', {})))).to.match(/fieldManager/);
      expect(String(await failure(api.client.get(Resources.configMaps, 'c')))).to.match(/namespace required/);
      expect(String(await failure(api.client.delete(Resources.configMaps, 'c')))).to.match(/namespace required/);
      expect(api.seen).to.have.length(0);
    } finally {
      await api.close();
    }
  });

  it('encodes an object name into one path segment', async function () {
    // A name from an object or a flag must never reach another path or add a query.
    const api = await fakeApi();
    try {
      await api.client.get(Resources.configMaps, 'x?watch=1#f', 'ns');
      expect(api.seen[0]?.url).to.equal('/api/v1/namespaces/ns/configmaps/x%3Fwatch%3D1%23f');
    } finally {
      await api.close();
    }
  });

  it('refuses, sending nothing, a name or namespace no object can have, as client-go does', async function () {
    // kube-apiserver v1.37.2 answers GET claims/x%2Fstatus with claim x, nodes/n1%2Fstatus with node
    // n1 and nodes/ with the node list. Every verb that names an object goes through one path.
    const api = await fakeApi();
    try {
      const bad = ['', '.', '..', 'a/status', '../secrets/x', 'data%1', '%2F'];
      for (const name of bad) {
        for (const call of [
          () => api.client.get(Resources.configMaps, name, 'ns'),
          () => api.client.patch(Resources.configMaps, name, 'ns', 'merge', {}),
          () => api.client.delete(Resources.configMaps, name, 'ns'),
          () => api.client.replace(Resources.configMaps, { metadata: { name, namespace: 'ns' } }),
          () => api.client.apply(Resources.configMaps, { metadata: { name, namespace: 'ns' } }, 'test'),
          () => api.client.get(Resources.persistentVolumes, name),
        ]) {
          const err = await failure(call());
          expect(err, JSON.stringify(name)).to.be.instanceOf(InvalidPathSegmentError);
          expect((err as Error).message).to.match(/^invalid resource name /);
        }
      }
      for (const namespace of ['.', 'a/b', 'x%y']) {
        expect(await failure(api.client.get(Resources.configMaps, 'c', namespace)), namespace).to.be.instanceOf(InvalidPathSegmentError);
        expect(await failure(api.client.create(Resources.configMaps, { metadata: { name: 'c', namespace } })), namespace).to.be.instanceOf(InvalidPathSegmentError);
        expect(await failure(api.client.list(Resources.configMaps, { namespace })), namespace).to.be.instanceOf(InvalidPathSegmentError);
      }
      expect(api.seen).to.have.length(0);
      // Never sent, so never applied: a refusal for good, not an outcome unknown.
      const refused = await failure(api.client.get(Resources.configMaps, 'a/b', 'ns'));
      expect([classifyError(refused).kind, writeMayHaveApplied(refused), isRefusal(refused)]).to.deep.equal(['BadRequest', false, true]);
      // The cluster-wide list (no namespace) is not a namespace at all: sent.
      await failure(api.client.list(Resources.configMaps, { namespace: '' }));
      expect(api.seen.map((x) => pathOf(x))).to.deep.equal(['/api/v1/configmaps']);
    } finally {
      await api.close();
    }
  });

  it('sends each patch type with its own content type', async function () {
    // The server picks the patch semantics from the content type (k8s.io/apimachinery/pkg/types PatchType).
    const api = await fakeApi();
    try {
      await api.client.patch(Resources.configMaps, 'c', 'ns', 'json', [{ op: 'remove', path: '/data/a' }]);
      await api.client.patch(Resources.configMaps, 'c', 'ns', 'merge', { data: { a: null } });
      await api.client.patch(Resources.configMaps, 'c', 'ns', 'strategic', { data: { a: null } });
      expect(api.seen.map((x) => x.headers['content-type'])).to.deep.equal(['application/json-patch+json', 'application/merge-patch+json', 'application/strategic-merge-patch+json']);
    } finally {
      await api.close();
    }
  });
});

describe('KubeClient: subresources and empty answers', function () {
  it('replaceStatus and a status patch write the status subresource, not the object', async function () {
    // With a status subresource the object's endpoint ignores status changes, and /status ignores
    // the rest: a phase written to the wrong one is silently lost.
    const api = await fakeApi();
    try {
      const pvc = { apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name: 'c', namespace: 'ns', resourceVersion: '3' }, status: { phase: 'Bound' } };
      await api.client.replaceStatus(Resources.persistentVolumeClaims, pvc);
      await api.client.replace(Resources.persistentVolumeClaims, pvc, { subresource: 'status' });
      await api.client.patch(Resources.persistentVolumeClaims, 'c', 'ns', 'merge', { status: { phase: 'Lost' } }, { subresource: 'status' });
      await api.client.replace(Resources.persistentVolumeClaims, pvc);
      expect(api.seen.map((s) => `${s.method} ${pathOf(s)}`)).to.deep.equal([
        'PUT /api/v1/namespaces/ns/persistentvolumeclaims/c/status',
        'PUT /api/v1/namespaces/ns/persistentvolumeclaims/c/status',
        'PATCH /api/v1/namespaces/ns/persistentvolumeclaims/c/status',
        'PUT /api/v1/namespaces/ns/persistentvolumeclaims/c',
      ]);
    } finally {
      await api.close();
    }
  });

  it('a 2xx answer with an empty body is an empty object, not a parse error', async function () {
    const api = await fakeApi(() => ({ status: 200, body: '' }));
    try {
      expect(await api.client.request('GET', '/api/v1/namespaces/ns/configmaps/c')).to.deep.equal({});
      await api.client.delete(Resources.configMaps, 'c', 'ns');
      expect(api.seen).to.have.length(2);
    } finally {
      await api.close();
    }
  });

  it("a watch answered without Audit-Id (a proxy's) does not set the server clock", async function () {
    // kube-apiserver sets Audit-Id on each answer; another server's Date says nothing of its clock.
    const api = await fakeApi(() => ({ status: 200, body: '', headers: { Date: 'Mon, 01 Jan 2001 00:00:00 GMT' } }));
    try {
      const ac = new AbortController();
      const res = await api.client.openStream('/api/v1/configmaps', { watch: true }, ac.signal);
      res.resume();
      ac.abort();
      expect(api.client.serverClock.skewMs()).to.equal(undefined);
    } finally {
      await api.close();
    }
  });
});

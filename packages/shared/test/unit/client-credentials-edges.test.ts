import { KubeConfig } from '@kubernetes/client-node';
import http from 'node:http';
import type { ApiEndpoint } from '../../src/client/endpoint.js';
import { expect } from 'chai';
import { ClientNodeEndpoint } from '../../src/client/client-node-endpoint.js';
import { KubeClient } from '../../src/client/kube-client.js';
import { StaticEndpoint } from '../../src/client/static-endpoint.js';
import { Resources } from '../../src/informer/resources.js';
import { fakeApi } from './fake-api-server.js';

// The credentials a KubeClient sends: from a KubeConfig (client-node resolves them) and from a
// token file. Written from mutation testing of the client.

function kubeConfig(server: string, user: { name: string; token?: string; username?: string; password?: string }, skipTLSVerify = true): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server, skipTLSVerify }],
    users: [user],
    contexts: [{ name: 'ctx', cluster: 'c', user: user.name }],
    currentContext: 'ctx',
  });
  return kc;
}

describe('KubeClient over a KubeConfig built by the caller (client-node resolves the credentials)', function () {
  it("sends a user's basic credentials", async function () {
    const api = await fakeApi();
    const client = KubeClient.fromKubeConfig(kubeConfig(api.client.server, { name: 'u', username: 'alice', password: 's3cret' }), { qps: 0, burst: 1 });
    try {
      await client.get(Resources.configMaps, 'c', 'ns');
      expect(api.seen[0]?.headers.authorization).to.equal(`Basic ${Buffer.from('alice:s3cret').toString('base64')}`);
    } finally {
      client.close();
      await api.close();
    }
  });
});

describe('ClientNodeEndpoint credentials', function () {
  it("asks client-node again once its credentials are 10 s old (an exec plugin's token expires)", async function () {
    // Kept for good, an exec plugin's or a cloud provider's short-lived token would end every
    // request in 401 once it expires.
    const kc = kubeConfig('https://kube.invalid', { name: 'u', token: 't1' }, false);
    const endpoint = ClientNodeEndpoint.fromKubeConfig(kc);
    const real = Object.getOwnPropertyDescriptor(Date, 'now')!;
    let now = Date.now();
    Object.defineProperty(Date, 'now', { ...real, value: () => now });
    try {
      expect((await endpoint.authHeaders()).Authorization).to.equal('Bearer t1');
      (kc.getCurrentUser() as { token?: string }).token = 't2';
      now += 5_000;
      expect((await endpoint.authHeaders()).Authorization, 'cached').to.equal('Bearer t1');
      now += 6_000;
      expect((await endpoint.authHeaders()).Authorization, 'asked again').to.equal('Bearer t2');
    } finally {
      Object.defineProperty(Date, 'now', real);
    }
  });
});

describe('StaticEndpoint credentials', function () {
  it('a token file missing at the first read fails with what the file system said', function () {
    // Not a request without credentials (a 401 that names no file): the error says which file is missing.
    const endpoint = new StaticEndpoint({ server: 'https://kube.invalid', tokenFile: '/nonexistent/topovol/token' });
    expect(() => endpoint.authHeaders()).to.throw(/ENOENT/);
  });
});

describe('an endpoint whose connection setup fails once', function () {
  it('is asked again by the next request: one failed credential plugin run is not kept for good', async function () {
    const api = await fakeApi();
    let builds = 0;
    const endpoint: ApiEndpoint = {
      server: api.client.server,
      agent: () => (++builds === 1 ? Promise.reject(new Error('exec plugin: exit status 1')) : Promise.resolve(new http.Agent({ keepAlive: true }))),
      authHeaders: () => Promise.resolve({}),
    };
    const client = KubeClient.forEndpoint(endpoint, { qps: 0, burst: 1 });
    try {
      const first = await client.get(Resources.configMaps, 'c', 'ns').then(() => 'answered', (e: unknown) => String(e));
      expect(first).to.contain('exec plugin');
      expect(await client.get(Resources.configMaps, 'c', 'ns')).to.deep.equal({});
      await client.get(Resources.configMaps, 'c', 'ns');
      expect(builds, 'built again once, then kept').to.equal(2);
    } finally {
      client.close();
      await api.close();
    }
  });
});

import { expect } from 'chai';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { AnswerTooLargeError } from '../../src/client/http-transport.js';
import { KubeApiError } from '../../src/client/errors.js';
import { ERROR_BODY_MAX_BYTES, KubeClient } from '../../src/client/kube-client.js';
import { Resources } from '../../src/informer/resources.js';
import { failure } from '@topovol/testing';
import { countingAgents, fakeApi } from './fake-api-server.js';

// The connections under KubeClient: one pool for a client and the fenced clients made from it, the
// deadline armed on each request, and the byte limit on an answer. Written from mutation testing of
// the client.

describe('KubeClient: shared connections', function () {
  it('a client fenced with withWriteFence uses the connection pool of the client it came from', async function () {
    // A pool per fenced client would multiply the connections (and TLS handshakes) to the API server.
    const api = await fakeApi();
    const { client, agents } = countingAgents(api.client.server);
    try {
      const fenced = client.withWriteFence(() => undefined);
      await client.get(Resources.configMaps, 'a', 'ns');
      await fenced.get(Resources.configMaps, 'b', 'ns');
      await fenced.create(Resources.configMaps, { metadata: { name: 'c', namespace: 'ns' } });
      expect(api.seen).to.have.length(3);
      expect(agents(), 'one pool').to.equal(1);
    } finally {
      client.close();
      await api.close();
    }
  });

  it('dropConnections on a fenced client drops the pool it shares with the client it came from', async function () {
    // Dropping connections is how a loop gets off a half-dead server: all who share them must move.
    const api = await fakeApi();
    const { client, agents } = countingAgents(api.client.server);
    try {
      const fenced = client.withWriteFence(() => undefined);
      await client.get(Resources.configMaps, 'a', 'ns');
      await fenced.dropConnections();
      await client.get(Resources.configMaps, 'b', 'ns');
      expect(agents(), 'the second read needed a new pool').to.equal(2);
    } finally {
      client.close();
      await api.close();
    }
  });
});

describe('KubeClient: deadlines and byte limits', function () {
  it('arms a 60 s deadline on a request when the client was given none', async function () {
    // Without one, a request the server never answers holds its loop for good.
    const api = await fakeApi();
    const real = globalThis.setTimeout;
    const armed: (number | undefined)[] = [];
    const spy = (fn: () => void, ms?: number): NodeJS.Timeout => {
      armed.push(ms);
      return real(fn, ms);
    };
    globalThis.setTimeout = spy as unknown as typeof globalThis.setTimeout;
    try {
      await api.client.get(Resources.configMaps, 'c', 'ns');
    } finally {
      globalThis.setTimeout = real;
      await api.close();
    }
    expect(armed).to.include(60_000);
  });

  it('an answer of exactly the byte limit is read whole', async function () {
    const body = JSON.stringify({ metadata: { name: 'c' }, data: { pad: 'x'.repeat(1000) } });
    const api = await fakeApi(() => ({ status: 200, body }));
    try {
      expect(await api.client.requestText('GET', '/api/v1/namespaces/ns/configmaps/c', { maxBodyBytes: Buffer.byteLength(body) })).to.equal(body);
    } finally {
      await api.close();
    }
  });

  it('an answer cut at its byte limit fails, and its connection is closed instead of reading the rest', async function () {
    let finished: (whole: boolean) => void = () => undefined;
    const closed = new Promise<boolean>((r) => (finished = r));
    const server = createServer((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.on('close', () => finished(res.writableFinished));
      let left = 32;
      const chunk = Buffer.alloc(256 * 1024, 'x');
      const pump = (): void => {
        while (left > 0 && !res.destroyed) {
          left--;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
        if (!res.destroyed) res.end();
      };
      pump();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const client = KubeClient.forEndpoint({ server: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }, { qps: 0, burst: 1 });
    try {
      // 8 MiB against a 1 MiB limit: the cut comes while the answer is still arriving.
      const err = await failure(client.requestText('GET', '/api/v1/configmaps', { maxBodyBytes: 1024 * 1024 }));
      expect(err).to.be.instanceOf(AnswerTooLargeError);
      expect(await closed, 'the server sent all of it').to.equal(false);
    } finally {
      client.close();
      server.closeAllConnections();
      server.close();
    }
  });

  it("a watch's error answer is read to ERROR_BODY_MAX_BYTES, not to an end that may never come", async function () {
    // A proxy's page in front of the API server, or one that never ends: the watch would wait for
    // it (until its idle timeout) while holding all of it.
    const server = createServer((_req, res) => {
      res.writeHead(503, { 'Content-Type': 'text/html' });
      const chunk = Buffer.alloc(64 * 1024, 'x');
      const pump = (): void => {
        while (!res.destroyed && res.write(chunk));
        if (!res.destroyed) res.once('drain', pump);
      };
      pump();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const client = KubeClient.forEndpoint({ server: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }, { qps: 0, burst: 1 });
    try {
      const err = await failure(client.openStream('/api/v1/configmaps', { watch: 'true' }, new AbortController().signal));
      expect(err).to.be.instanceOf(KubeApiError);
      expect((err as KubeApiError).code).to.equal(503);
      expect(Buffer.byteLength((err as KubeApiError).message)).to.be.at.most(ERROR_BODY_MAX_BYTES + 1024);
    } finally {
      client.close();
      server.closeAllConnections();
      server.close();
    }
  });
});

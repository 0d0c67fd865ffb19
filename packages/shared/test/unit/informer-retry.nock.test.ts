import { getEventListeners } from 'node:events';
import { expect } from 'chai';
import nock from 'nock';
import { KubeClient } from '../../src/client/kube-client.js';
import { Informer } from '../../src/informer/informer.js';
import { Resources } from '../../src/informer/resources.js';
import { eventually } from '@topovol/testing';

// nock plays an API server that keeps failing (something a real one does not do on demand).
const SERVER = 'https://flapping.invalid';

function client(): KubeClient {
  // nodeHttp: nock intercepts Node's http module, not the direct transport's sockets.
  return KubeClient.forEndpoint({ server: SERVER, token: 't' }, { qps: 0, burst: 1, nodeHttp: true });
}

describe('informer retries against a flapping API server', function () {
  afterEach(() => nock.cleanAll());

  it('30 failed lists leave no abort listeners behind (no MaxListenersExceededWarning) and it syncs once the server answers', async function () {
    let failures = 0;
    nock(SERVER)
      .get('/api/v1/configmaps')
      .query(true)
      .times(30)
      .reply(() => {
        failures++;
        return [503, { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'ServiceUnavailable', code: 503 }];
      });
    nock(SERVER).get('/api/v1/configmaps').query(true).reply(200, { kind: 'ConfigMapList', apiVersion: 'v1', metadata: { resourceVersion: '7' }, items: [] });
    nock(SERVER).get('/api/v1/configmaps').query(true).delay(60_000).reply(200, '').persist();
    const warnings: string[] = [];
    const onWarning = (w: Error): void => void warnings.push(w.name);
    process.on('warning', onWarning);
    const informer = new Informer(client(), Resources.configMaps, { backoff: { startMs: 1, maxMs: 2 } });
    const signal = (): AbortSignal => (informer as unknown as { abort: AbortController }).abort.signal;
    try {
      informer.start();
      await eventually(() => expect(failures).to.equal(30), 20_000, 5);
      // At most the one waiting sleep's listener (and the request in flight's own) remain.
      expect(getEventListeners(signal(), 'abort').length).to.be.at.most(2);
      for (let i = 0; i < 20; i++) {
        const ac = new AbortController();
        await informer.waitForSync(ac.signal);
        expect(getEventListeners(ac.signal, 'abort'), 'a resolved wait keeps no listener').to.have.length(0);
      }
      expect(warnings).to.not.include('MaxListenersExceededWarning');
    } finally {
      process.off('warning', onWarning);
      await informer.stop();
    }
  });
});

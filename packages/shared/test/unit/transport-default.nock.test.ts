import { expect } from 'chai';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import nock from 'nock';
import { KubeClient } from '../../src/client/kube-client.js';

// Which way a client's requests go when it does not say (docs/adr/0016-direct-http-transport.md):
// the direct transport unless TOPOVOL_DIRECT_TRANSPORT=0. nock intercepts only Node's http module, so
// a real server and a nock scope on the same origin tell the two ways apart by their answers.

describe('the transport a client uses by default', function () {
  let server: Server;
  let origin: string;

  before(async function () {
    server = createServer((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end('{"answeredBy":"socket"}');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  beforeEach(() => nock(origin).get('/api').reply(200, { answeredBy: 'nock' }));
  afterEach(() => nock.cleanAll());
  after(() => server.close());

  const answeredBy = async (nodeHttp?: boolean): Promise<string | undefined> => {
    const client = KubeClient.forEndpoint({ server: origin }, { qps: 0, burst: 1, ...(nodeHttp === undefined ? {} : { nodeHttp }) });
    try {
      return (await client.request<{ answeredBy?: string }>('GET', '/api')).answeredBy;
    } finally {
      client.close();
    }
  };

  it('is the direct transport: Node\'s http module (where nock answers) is not used', async function () {
    if (process.env.TOPOVOL_DIRECT_TRANSPORT === '0') this.skip();
    expect(await answeredBy()).to.equal('socket');
  });

  it('is Node\'s http when the client asks for it (the control: nock does answer that way)', async function () {
    expect(await answeredBy(true)).to.equal('nock');
  });

  it('is the direct transport when the client asks for it, whatever the environment says', async function () {
    expect(await answeredBy(false)).to.equal('socket');
  });
});

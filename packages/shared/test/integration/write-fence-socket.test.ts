import { expect } from 'chai';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { MAX_SOCKETS } from '../../src/client/endpoint.js';
import { WriteFencedError } from '../../src/client/errors.js';
import { KubeClient } from '../../src/client/kube-client.js';
import { Resources } from '../../src/informer/resources.js';

// The leader-election fence is asked again when a write gets its socket: a write decided while the
// fence was open can wait behind every busy connection (MAX_SOCKETS) for longer than the fence stays
// open. Here, not with the unit tests: nock, which the unit suite loads, hands every request a mock
// socket at once, so nothing there ever waits for one. A plain local HTTP server records what
// reached it.
describe('KubeClient.withWriteFence: a write that waited for a socket', function () {
  it('a write that waited for a socket (every one busy) is asked again when it has one: shut meanwhile, it is never sent', async function () {
    const seen: string[] = [];
    const held: (() => void)[] = [];
    const server = createServer((req, res) => {
      seen.push(`${req.method} ${req.url}`);
      req.resume();
      const answer = (): void => {
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify({ metadata: { name: 'a', namespace: 'ns' } }));
      };
      if (req.url?.includes('/hold')) held.push(answer);
      else answer();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const base = KubeClient.forEndpoint({ server: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }, { qps: 0, burst: 1 });
    try {
      let why: string | undefined = undefined; // open: the write is let through
      let asked = 0;
      const fenced = base.withWriteFence(() => {
        asked++;
        return why;
      });
      // Every connection of the client busy with a read the server holds.
      const reads = Array.from({ length: MAX_SOCKETS }, () => base.requestText('GET', '/api/v1/namespaces/ns/configmaps/hold'));
      while (held.length < MAX_SOCKETS) await new Promise((r) => setTimeout(r, 5));
      // Decided and let through while the fence is open; it waits for a socket.
      const write = fenced.patch(Resources.configMaps, 'a', 'ns', 'merge', {}).then(() => undefined, (e: unknown) => e);
      while (asked < 1) await new Promise((r) => setTimeout(r, 5));
      // The lease may have passed to another replica meanwhile (the process was frozen, say).
      why = 'lease expired';
      for (const answer of held) answer();
      await Promise.all(reads);
      expect(await write).to.be.instanceOf(WriteFencedError);
      expect(asked, 'let through once, refused when it had its socket').to.equal(2);
      expect(seen.filter((x) => !x.startsWith('GET')), 'nothing but the reads reached the server').to.deep.equal([]);
    } finally {
      base.close();
      server.closeAllConnections();
      server.close();
    }
  });
});

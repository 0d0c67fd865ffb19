import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { KubeClient, ServerClock } from '../../src/index.js';

const MIN = 60_000;

describe('ServerClock: the API server\'s time from its Date headers', function () {
  it('is the local wall clock until an answer, then the header\'s time advanced by the monotonic clock', function () {
    let mono = 1_000;
    let wall = Date.UTC(2026, 0, 1, 12, 0, 0);
    const clock = new ServerClock(() => mono, () => wall);
    expect(clock.now()).to.equal(wall);
    expect(clock.skewMs()).to.equal(undefined);
    // The server says 12:10:00 (its header truncates to the second: the estimate is its middle).
    clock.observe(new Date(Date.UTC(2026, 0, 1, 12, 10, 0)).toUTCString(), mono);
    expect(clock.now()).to.equal(Date.UTC(2026, 0, 1, 12, 10, 0) + 500);
    mono += 30_000;
    // A local clock step changes nothing: only the monotonic clock advances the estimate.
    wall -= 3_600_000;
    expect(clock.now()).to.equal(Date.UTC(2026, 0, 1, 12, 10, 30) + 500);
  });

  it('takes the median of recent samples, at most one a second, and ignores what is not a date', function () {
    let mono = 0;
    const base = Date.UTC(2026, 0, 1);
    const clock = new ServerClock(() => mono, () => 0);
    const at = (offsetS: number): string => new Date(base + mono + offsetS * 1000).toUTCString();
    clock.observe(at(100), mono);
    mono += 500;
    clock.observe(at(9_999), mono); // within a second of the last sample: not taken
    clock.observe('yesterday', (mono += 1_000));
    clock.observe(undefined, (mono += 1_000));
    expect(clock.now() - (base + mono)).to.be.closeTo(100_000, 1_000);
    clock.observe(at(100), (mono += 1_000));
    clock.observe(at(100), (mono += 1_000));
    // Among three, one answer with a wildly wrong header (a delayed or proxied one) does not move it.
    clock.observe(at(9_999), (mono += 1_000));
    expect(clock.now() - (base + mono)).to.be.closeTo(100_000, 1_000);
  });

  it('a KubeClient feeds it from every answer, and clients derived from it share it', async function () {
    const ahead = 10 * MIN;
    const server = http.createServer((_req, res) => {
      res.setHeader('Date', new Date(Date.now() + ahead).toUTCString());
      res.setHeader('Content-Type', 'application/json');
      res.end('{"kind":"Status","apiVersion":"v1","status":"Success"}');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const client = KubeClient.forEndpoint({ server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, token: 't' }, { qps: 0, burst: 1 });
      const derived = client.withRateLimit(5, 10);
      expect(derived.serverClock).to.equal(client.serverClock);
      await derived.request('GET', '/version');
      expect(client.serverClock.now() - Date.now()).to.be.closeTo(ahead, 2_000);
      expect(client.serverClock.skewMs()).to.be.closeTo(ahead, 2_000);
      client.close();
    } finally {
      server.close();
    }
  });
});

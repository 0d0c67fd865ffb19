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

  it('does not step with the header\'s half-second jitter, and follows a real change once most recent samples agree', function () {
    let mono = 0;
    const base = Date.UTC(2026, 0, 1);
    const clock = new ServerClock(() => mono, () => 0);
    // The server's clock is 100.3 s ahead: its truncated header reads 100 or 101 s ahead by turns.
    const sample = (aheadMs: number): void => clock.observe(new Date(Math.floor((base + mono + aheadMs) / 1000) * 1000).toUTCString(), mono);
    const seen = new Set<number>();
    for (let i = 0; i < 30; i++) {
      mono += 1_000 + (i % 3) * 333;
      sample(100_300);
      seen.add(Math.round(clock.now() - (base + mono)));
    }
    expect(seen.size, `offsets seen: ${[...seen].join(', ')}`).to.equal(1);
    // Stepped 5 s (NTP on the API server's host): followed once it is the median.
    for (let i = 0; i < 7; i++) {
      mono += 1_000;
      sample(105_300);
    }
    expect(clock.now() - (base + mono)).to.be.closeTo(105_300, 1_000);
  });

  it('a KubeClient feeds it from kube-apiserver\'s answers (not a proxy\'s), and clients derived from it share it', async function () {
    const ahead = 10 * MIN;
    const server = http.createServer((req, res) => {
      res.setHeader('Date', new Date(Date.now() + ahead).toUTCString());
      // kube-apiserver's answers carry an Audit-Id; a proxy's own error page does not, and says another time.
      if (req.url === '/proxy-error') {
        res.setHeader('Date', new Date(Date.now() - 3 * ahead).toUTCString());
        res.statusCode = 502;
        res.end('bad gateway');
        return;
      }
      res.setHeader('Audit-Id', 'a1b2');
      res.setHeader('Content-Type', 'application/json');
      res.end('{"kind":"Status","apiVersion":"v1","status":"Success"}');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const client = KubeClient.forEndpoint({ server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, token: 't' }, { qps: 0, burst: 1 });
      const derived = client.withRateLimit(5, 10);
      expect(derived.serverClock).to.equal(client.serverClock);
      await derived.request('GET', '/proxy-error').catch(() => undefined);
      expect(client.serverClock.skewMs(), 'not from a proxy\'s page').to.equal(undefined);
      await derived.request('GET', '/version');
      expect(client.serverClock.now() - Date.now()).to.be.closeTo(ahead, 2_000);
      expect(client.serverClock.skewMs()).to.be.closeTo(ahead, 2_000);
      client.close();
    } finally {
      server.close();
    }
  });
});

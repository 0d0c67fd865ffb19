import { X509Certificate, createPrivateKey } from 'node:crypto';
import { once } from 'node:events';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { connect, createSecureContext } from 'node:tls';
import { expect } from 'chai';
import { derInteger, ipBytes, selfSignedCert } from '../../src/http/self-signed-cert.js';

describe('selfSignedCert: the metrics endpoint\'s certificate when none is given', function () {
  const hosts = ['localhost', 'topovol-pv-binder-5d8f7-abcde', '127.0.0.1', '::1', 'fd00::a:1'];
  const madeAt = new Date().getTime();
  const pair = selfSignedCert({ commonName: 'topovol-controller-manager@1', hosts });
  const x = new X509Certificate(pair.cert);

  it('parses as X.509 and is signed by its own key', function () {
    expect(x.subject).to.equal('CN=topovol-controller-manager@1');
    expect(x.issuer).to.equal(x.subject);
    expect(x.verify(x.publicKey)).to.equal(true);
    expect(x.checkPrivateKey(createPrivateKey(pair.key))).to.equal(true);
  });

  it('names every host: DNS names and IPv4/IPv6 addresses (the "::" form expanded)', function () {
    expect(x.checkHost('localhost')).to.equal('localhost');
    expect(x.checkHost('topovol-pv-binder-5d8f7-abcde')).to.equal('topovol-pv-binder-5d8f7-abcde');
    expect(x.checkIP('127.0.0.1')).to.equal('127.0.0.1');
    expect(x.checkIP('::1')).to.equal('::1');
    expect(x.checkIP('fd00::a:1')).to.equal('fd00::a:1');
    expect(x.checkHost('example.com')).to.equal(undefined);
    expect(x.checkIP('10.0.0.1')).to.equal(undefined);
  });

  it('is a serving leaf: not a CA, valid from before it was made, for a year', function () {
    expect(x.ca).to.equal(false);
    expect(x.keyUsage).to.deep.equal(['1.3.6.1.5.5.7.3.1']);
    const from = Date.parse(x.validFrom);
    expect(from).to.be.below(madeAt);
    expect(Date.parse(x.validTo) - from).to.equal(365 * 24 * 3600 * 1000);
    const fixed = new X509Certificate(selfSignedCert({ commonName: 'c', hosts: ['localhost'], notBefore: new Date('2026-01-02T03:04:05Z') }).cert);
    expect(new Date(fixed.validFrom).toISOString()).to.equal('2026-01-02T03:04:05.000Z');
  });

  it('writes validity past 2049 as GeneralizedTime (RFC 5280 4.1.2.5)', function () {
    const late = new X509Certificate(selfSignedCert({ commonName: 'late', hosts: ['localhost'], notBefore: new Date('2049-12-31T00:00:00Z'), validForMs: 2 * 24 * 3600 * 1000 }).cert);
    expect(new Date(late.validFrom).toISOString()).to.equal('2049-12-31T00:00:00.000Z');
    expect(new Date(late.validTo).toISOString()).to.equal('2050-01-02T00:00:00.000Z');
  });

  it('serves TLS: a client that trusts it connects to localhost; two certificates never share a serial', async function () {
    expect(() => createSecureContext(pair)).to.not.throw();
    expect(new X509Certificate(selfSignedCert({ commonName: 'a', hosts: ['localhost'] }).cert).serialNumber).to.not.equal(x.serialNumber);
    const server = https.createServer(pair, (_req, res) => res.end('ok'));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      const port = (server.address() as AddressInfo).port;
      const socket = connect({ host: '127.0.0.1', port, servername: 'localhost', ca: pair.cert });
      await once(socket, 'secureConnect');
      expect(socket.authorized).to.equal(true);
      socket.end();
    } finally {
      server.close();
      server.closeAllConnections();
    }
  });

  it('INTEGER is minimal DER: leading zeros dropped, one kept before a top bit (OpenSSL refuses "00 10 …" as illegal padding)', function () {
    const cases: [number[], string][] = [
      [[0x00, 0x10, 0x11], '02021011'],
      [[0x00, 0x00, 0x7f], '02017f'],
      [[0x00, 0x80, 0x01], '0203008001'],
      [[0x80], '02020080'],
      [[0x02], '020102'],
      [[0x00], '020100'],
      [[0x00, 0x00], '020100'],
    ];
    for (const [bytes, want] of cases) expect(derInteger(Buffer.from(bytes)).toString('hex'), bytes.join(',')).to.equal(want);
  });

  it('property: every certificate made parses and serves (a random serial starts with a zero byte once in 128)', function () {
    for (let i = 0; i < 2_000; i++) {
      const p = selfSignedCert({ commonName: `c${i}`, hosts: ['localhost', '127.0.0.1'] });
      expect(() => createSecureContext(p), `certificate ${i}`).to.not.throw();
    }
  });

  it('IP addresses: embedded IPv4 tails are two groups; a zone or a non-ASCII name is refused', function () {
    const cases: [string, string][] = [
      ['::ffff:1.2.3.4', '00000000000000000000ffff01020304'],
      ['64:ff9b::10.0.0.1', '0064ff9b00000000000000000a000001'],
      ['1:2:3:4:5:6:1.2.3.4', '00010002000300040005000601020304'],
      ['::', '00000000000000000000000000000000'],
      ['1::', '00010000000000000000000000000000'],
      ['10.0.0.1', '0a000001'],
    ];
    for (const [ip, want] of cases) expect(ipBytes(ip).toString('hex'), ip).to.equal(want);
    const mapped = new X509Certificate(selfSignedCert({ commonName: 'm', hosts: ['::ffff:1.2.3.4'] }).cert);
    expect(mapped.subjectAltName).to.equal('IP Address:0:0:0:0:0:FFFF:102:304');
    expect(() => ipBytes('fe80::1%eth0')).to.throw(/zone/);
    expect(() => selfSignedCert({ commonName: 'z', hosts: ['fe80::1%eth0'] })).to.throw(/zone/);
    expect(() => selfSignedCert({ commonName: 'u', hosts: ['exämple.com'] })).to.throw(/not a DNS name/);
    expect(() => selfSignedCert({ commonName: 'e', hosts: [''] })).to.throw(/not a DNS name/);
  });
});

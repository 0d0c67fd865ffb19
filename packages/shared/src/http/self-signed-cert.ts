import { generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import { isIP } from 'node:net';

/** A PEM certificate and its PKCS #8 PEM key, as node:tls takes them. */
export interface CertKeyPair {
  cert: string;
  key: string;
}

export interface SelfSignedOptions {
  /** The subject's common name. */
  commonName: string;
  /** DNS names and IP addresses the certificate is for (subjectAltName). */
  hosts: readonly string[];
  /** Start of validity; now by default (back-dated a minute for clocks a little behind). */
  notBefore?: Date;
  /** How long it is valid, from notBefore; one year by default, as client-go's SelfSignedCertKey. */
  validForMs?: number;
}

const YEAR_MS = 365 * 24 * 3600 * 1000;

/**
 * A self-signed ECDSA P-256 serving certificate, made in memory: what kube-controller-manager
 * serves on its secure port when given no --tls-cert-file (client-go's `cert.GenerateSelfSignedCertKey`)
 * and controller-runtime's metrics server when given no certificate. Node has no X.509 writer, and
 * the DER below is small enough not to take a dependency for (node:crypto parses and checks it:
 * self-signed-cert.test.ts).
 */
export function selfSignedCert(o: SelfSignedOptions): CertKeyPair {
  const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const notBefore = o.notBefore ?? new Date(Date.now() - 60_000);
  const notAfter = new Date(notBefore.getTime() + (o.validForMs ?? YEAR_MS));
  const serial = randomBytes(16);
  serial[0]! &= 0x7f; // positive (derInteger keeps it minimal)
  const name = seq(set(seq(oid(OID.commonName), tlv(0x0c, Buffer.from(o.commonName, 'utf8')))));
  const tbs = seq(
    tlv(0xa0, derInteger(Buffer.from([2]))), // v3
    derInteger(serial),
    seq(oid(OID.ecdsaWithSha256)),
    name,
    seq(time(notBefore), time(notAfter)),
    name,
    publicKey.export({ type: 'spki', format: 'der' }),
    tlv(0xa3, seq(...extensions(o.hosts))),
  );
  const signature = sign('sha256', tbs, privateKey); // DER ECDSA-Sig-Value
  const der = seq(tbs, seq(oid(OID.ecdsaWithSha256)), tlv(0x03, Buffer.concat([Buffer.from([0]), signature])));
  return { cert: pem('CERTIFICATE', der), key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() };
}

const OID = {
  commonName: '2.5.4.3',
  ecdsaWithSha256: '1.2.840.10045.4.3.2',
  keyUsage: '2.5.29.15',
  subjectAltName: '2.5.29.17',
  basicConstraints: '2.5.29.19',
  extKeyUsage: '2.5.29.37',
  serverAuth: '1.3.6.1.5.5.7.3.1',
};

/** A leaf for serving: not a CA, digitalSignature, serverAuth, and the hosts as DNS names or IPs. */
function extensions(hosts: readonly string[]): Buffer[] {
  const names = hosts.map((h) => {
    if (isIP(h.split('%')[0]!)) return tlv(0x87, ipBytes(h));
    // dNSName is an IA5String: ASCII, and not empty (RFC 5280 4.2.1.6).
    if (!/^[\x21-\x7e]+$/.test(h)) throw new Error(`${JSON.stringify(h)}: not a DNS name a certificate can hold`);
    return tlv(0x82, Buffer.from(h, 'ascii'));
  });
  return [
    extension(OID.basicConstraints, true, seq()),
    extension(OID.keyUsage, true, tlv(0x03, Buffer.from([0x07, 0x80]))),
    extension(OID.extKeyUsage, false, seq(oid(OID.serverAuth))),
    extension(OID.subjectAltName, false, seq(...names)),
  ];
}

function extension(id: string, critical: boolean, value: Buffer): Buffer {
  return seq(oid(id), ...(critical ? [tlv(0x01, Buffer.from([0xff]))] : []), tlv(0x04, value));
}

/** An IP address's bytes (4 or 16) for an iPAddress SAN. A zone (`fe80::1%eth0`) names no address a certificate can hold: refused. */
export function ipBytes(ip: string): Buffer {
  if (ip.includes('%')) throw new Error(`${ip}: an IPv6 zone cannot be in a certificate`);
  if (isIP(ip) === 4) return Buffer.from(ip.split('.').map(Number));
  if (isIP(ip) !== 6) throw new Error(`${ip}: not an IP address`);
  // An embedded IPv4 tail (::ffff:1.2.3.4) is two 16-bit groups.
  let text = ip;
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(ip)?.[1];
  if (v4) {
    const [a, b, c, d] = v4.split('.').map(Number) as [number, number, number, number];
    text = ip.slice(0, -v4.length) + `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  // Expand "::" to the missing zero groups, then 8 groups of 16 bits.
  const [head, tail] = text.includes('::') ? text.split('::') : [text, undefined];
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const groups = tail === undefined ? h : [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t];
  const out = Buffer.alloc(16);
  groups.forEach((g, i) => out.writeUInt16BE(parseInt(g, 16), i * 2));
  return out;
}

/** UTCTime through 2049, GeneralizedTime after, as RFC 5280 4.1.2.5 requires. */
function time(d: Date): Buffer {
  const iso = d.toISOString().replace(/[-:T]/g, '').slice(0, 14) + 'Z'; // YYYYMMDDHHMMSSZ
  return d.getUTCFullYear() < 2050 ? tlv(0x17, Buffer.from(iso.slice(2), 'ascii')) : tlv(0x18, Buffer.from(iso, 'ascii'));
}

/** The table's OIDs only: the first two arcs fit one byte there (not for 2.48 and above). */
function oid(dotted: string): Buffer {
  const [a, b, ...rest] = dotted.split('.').map(Number);
  const bytes = [a! * 40 + b!];
  for (const n of rest) {
    const chunk = [n & 0x7f];
    for (let v = n >>> 7; v > 0; v >>>= 7) chunk.unshift((v & 0x7f) | 0x80);
    bytes.push(...chunk);
  }
  return tlv(0x06, Buffer.from(bytes));
}

/**
 * A non-negative INTEGER, minimal as DER requires: leading zero bytes dropped (OpenSSL and Go refuse
 * `00 10 …` as "illegal padding": a random serial starts so once in 256), one put back when the top
 * bit is set. Exported for tests.
 */
export function derInteger(unsigned: Buffer): Buffer {
  let i = 0;
  while (i < unsigned.length - 1 && unsigned[i] === 0) i++;
  const v = unsigned.subarray(i);
  return tlv(0x02, v[0]! & 0x80 ? Buffer.concat([Buffer.from([0]), v]) : v);
}

function seq(...parts: Buffer[]): Buffer {
  return tlv(0x30, Buffer.concat(parts));
}

function set(...parts: Buffer[]): Buffer {
  return tlv(0x31, Buffer.concat(parts));
}

function tlv(tag: number, value: Buffer): Buffer {
  const n = value.length;
  const len = n < 0x80 ? [n] : n < 0x100 ? [0x81, n] : n < 0x10000 ? [0x82, n >> 8, n & 0xff] : [0x83, n >> 16, (n >> 8) & 0xff, n & 0xff];
  return Buffer.concat([Buffer.from([tag, ...len]), value]);
}

function pem(label: string, der: Buffer): string {
  const b64 = der.toString('base64').replace(/.{64}/g, '$&\n').replace(/\n$/, '');
  return `-----BEGIN ${label}-----\n${b64}\n-----END ${label}-----\n`;
}

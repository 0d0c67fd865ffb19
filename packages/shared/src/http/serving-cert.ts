import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createSecureContext } from 'node:tls';
import { errorMessage, logger } from '../logging/logger.js';
import { selfSignedCert } from './self-signed-cert.js';
import type { CertKeyPair } from './self-signed-cert.js';

/** The file names of a kubernetes.io/tls Secret (and cert-manager's), as controller-runtime's --metrics-cert-path reads them. */
export const CERT_FILE = 'tls.crt';
export const KEY_FILE = 'tls.key';

/** How often a certificate directory is read again for a renewed pair (controller-runtime's certwatcher also polls every 10 s). */
export const CERT_RELOAD_MS = 10_000;

/**
 * The metrics server's certificate: the pair in `dir` (read again every CERT_RELOAD_MS, so a
 * renewed Secret is served without a restart) or, with no dir, a self-signed one made at start.
 */
export class ServingCert {
  private current: CertKeyPair;
  private timer: NodeJS.Timeout | undefined;
  private readonly log = logger().child({ component: 'http' });

  /** Throws when `dir` holds no usable pair: a start with a certificate it cannot serve is a configuration error. */
  constructor(private readonly dir: string | undefined) {
    this.current = dir ? readPair(dir) : selfSignedCert({ commonName: `topovol-controller-manager@${Math.floor(Date.now() / 1000)}`, hosts: ['localhost', ...(/^[a-zA-Z0-9.-]+$/.test(os.hostname()) ? [os.hostname()] : []), '127.0.0.1', '::1'] });
  }

  get pair(): CertKeyPair {
    return this.current;
  }

  /** Reads the directory again every CERT_RELOAD_MS and hands a changed, usable pair to `apply`. */
  watch(apply: (pair: CertKeyPair) => void): void {
    if (!this.dir || this.timer) return;
    const dir = this.dir;
    this.timer = setInterval(() => {
      let next: CertKeyPair;
      try {
        next = readPair(dir);
      } catch (err) {
        // A Secret being rewritten, or a key that does not match yet: the served pair stays.
        this.log.warn('cannot load the metrics serving certificate; serving the previous one', { dir, error: errorMessage(err) });
        return;
      }
      if (next.cert === this.current.cert && next.key === this.current.key) return;
      this.current = next;
      apply(next);
      this.log.info('metrics serving certificate reloaded', { dir });
    }, CERT_RELOAD_MS);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }
}

/** The pair in dir, checked by node:tls (a key that is not the certificate's is refused here, not at the first handshake). */
function readPair(dir: string): CertKeyPair {
  const pair = { cert: readFileSync(path.join(dir, CERT_FILE), 'utf8'), key: readFileSync(path.join(dir, KEY_FILE), 'utf8') };
  createSecureContext(pair);
  return pair;
}

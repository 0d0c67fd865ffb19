import { FlagError } from './flag-parser.js';

/** An address that is neither host:port, :port nor "0". */
export class BindAddressError extends FlagError {
  readonly reason: string;
  constructor(address: string, reason: string) {
    super(`invalid bind address "${address}": ${reason}`);
    this.name = 'BindAddressError';
    this.reason = reason;
  }
}

/**
 * Parses a --*-bind-address value: "0" → undefined (disabled); ":8080" → { host: '', port: 8080 }
 * ('' = all interfaces); "127.0.0.1:0" → port 0 (any free port, for tests); "[::1]:9090" → host
 * '::1'. Throws a BindAddressError (a FlagError) on anything else.
 */
export function parseBindAddress(s: string): { host: string; port: number } | undefined {
  if (s === '0') return undefined;
  const m = /^(?:\[([0-9A-Za-z:.%_-]+)\]|([0-9A-Za-z._-]*)):(\d{1,5})$/.exec(s);
  if (!m) throw new BindAddressError(s, 'want host:port, :port or 0');
  const port = Number(m[3]);
  if (port > 65535) throw new BindAddressError(s, `port ${port} out of range (0-65535)`);
  return { host: m[1] ?? m[2] ?? '', port };
}

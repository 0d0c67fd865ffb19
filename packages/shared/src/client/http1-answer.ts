import type { IncomingHttpHeaders } from 'node:http';

/** An answer that breaks HTTP/1.1's framing: its connection cannot be trusted with another request. */
export class HttpProtocolError extends Error {
  readonly code = 'HPE_INVALID_RESPONSE';
  constructor(message: string) {
    super(`invalid HTTP answer: ${message}`);
    this.name = 'HttpProtocolError';
  }
}

/** The most header bytes read before a head counts as invalid (Node's --max-http-header-size default). */
export const MAX_HEAD_BYTES = 16 * 1024;

const CR = 0x0d;
const LF = 0x0a;
const HEAD_END = Buffer.from('\r\n\r\n');
const CRLF = Buffer.from('\r\n');
const STATUS_LINE = /^HTTP\/1\.([01]) (\d{3})(?: [^\r\n]*)?$/;
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const DIGITS = /^\d{1,15}$/;
// At most 13 hex digits: a size below 2^53, so counting it down stays exact.
const CHUNK_SIZE = /^([0-9A-Fa-f]{1,13})[ \t]*(?:;[^\r\n]*)?$/;
/** Headers of which Node keeps the first of several (lib/_http_incoming.js, matchKnownFields); others are joined. */
const FIRST_WINS: ReadonlySet<string> = new Set([
  'content-type', 'content-length', 'user-agent', 'referer', 'host', 'authorization', 'proxy-authorization',
  'if-modified-since', 'if-unmodified-since', 'from', 'location', 'max-forwards', 'retry-after', 'etag',
  'last-modified', 'server', 'age', 'expires',
]);

type State =
  | { s: 'head' }
  | { s: 'length'; left: number }
  | { s: 'chunk-size' }
  | { s: 'chunk-data'; left: number }
  | { s: 'chunk-end' }
  | { s: 'trailers' }
  | { s: 'until-close' }
  | { s: 'done' };

export interface AnswerHead {
  status: number;
  headers: IncomingHttpHeaders;
}

/**
 * Reads one HTTP/1.1 answer from a connection's bytes, pushed in whatever pieces they arrive
 * (RFC 9112): the status line and headers, then the body framed by Transfer-Encoding: chunked,
 * Content-Length, or the connection's end. Informational answers (1xx) before it are skipped. Pure:
 * no socket, so every split of the bytes can be tested. Bytes past the answer's end mean the server
 * sent something nobody asked for: an error, and the connection is not used again.
 */
export class Http1AnswerReader {
  private state: State = { s: 'head' };
  private pending: Buffer | undefined;
  private store: Buffer | undefined;
  private bytes = 0;
  private keepAlive = false;
  /** Where the search for a head's end resumes in the pending bytes: a head dribbled in is not searched again from its start. */
  private searchFrom = 0;

  constructor(
    private readonly method: string,
    private readonly onHead: (head: AnswerHead) => void,
    private readonly onBody: (chunk: Buffer) => void,
  ) {}

  get done(): boolean {
    return this.state.s === 'done';
  }

  /** Whether the connection may carry another request once this answer is done. */
  get reusable(): boolean {
    return this.state.s === 'done' && this.keepAlive;
  }

  /** Whether any byte of the answer (an informational one included) has arrived. */
  get started(): boolean {
    return this.bytes > 0;
  }

  /** The next bytes of the connection; throws HttpProtocolError. */
  push(data: Buffer): void {
    this.bytes += data.length;
    let buf = this.pending ? this.append(this.pending, data) : data;
    this.pending = undefined;
    while (buf.length > 0) {
      const used = this.step(buf);
      if (used === -1) {
        this.pending = buf;
        return;
      }
      buf = buf.subarray(used);
    }
  }

  /**
   * pending + data, in a buffer that doubles as it fills: a head dribbled in small pieces is copied
   * a bounded number of times, not once per piece. Only bytes past what was handed out are written:
   * pending starts the buffer when it is appended to, and a body chunk handed out lies before it.
   */
  private append(pending: Buffer, data: Buffer): Buffer {
    const length = pending.length + data.length;
    const store = this.store;
    if (store && pending.buffer === store.buffer && pending.byteOffset === store.byteOffset && store.length >= length) {
      data.copy(store, pending.length);
      return store.subarray(0, length);
    }
    const grown = Buffer.allocUnsafe(Math.max(2 * length, 1024));
    pending.copy(grown, 0);
    data.copy(grown, pending.length);
    this.store = grown;
    return grown.subarray(0, length);
  }

  /** The connection ended: completes an answer read to its end; throws if the answer was cut. */
  end(): void {
    if (this.state.s === 'until-close') {
      this.state = { s: 'done' };
      return;
    }
    if (this.state.s !== 'done') throw new HttpProtocolError(`connection ended in the answer's ${this.state.s}`);
  }

  /** Bytes of buf used by one step, or -1 when it needs more. */
  private step(buf: Buffer): number {
    const st = this.state;
    switch (st.s) {
      case 'head': {
        const end = buf.indexOf(HEAD_END, this.searchFrom);
        if (end === -1) {
          if (buf.length > MAX_HEAD_BYTES) throw new HttpProtocolError(`head over ${MAX_HEAD_BYTES} bytes`);
          this.searchFrom = Math.max(0, buf.length - HEAD_END.length + 1);
          return -1;
        }
        this.searchFrom = 0;
        if (end > MAX_HEAD_BYTES) throw new HttpProtocolError(`head over ${MAX_HEAD_BYTES} bytes`);
        this.readHead(buf.toString('latin1', 0, end));
        return end + HEAD_END.length;
      }
      case 'length': {
        const n = Math.min(st.left, buf.length);
        this.onBody(buf.subarray(0, n));
        st.left -= n;
        if (st.left === 0) this.finish();
        return n;
      }
      case 'chunk-size': {
        const end = buf.indexOf(CRLF);
        if (end === -1) {
          if (buf.length > 1024) throw new HttpProtocolError('chunk size line too long');
          return -1;
        }
        const m = CHUNK_SIZE.exec(buf.toString('latin1', 0, end));
        if (!m) throw new HttpProtocolError('bad chunk size');
        const size = parseInt(m[1] ?? '', 16);
        this.state = size === 0 ? { s: 'trailers' } : { s: 'chunk-data', left: size };
        return end + 2;
      }
      case 'chunk-data': {
        const n = Math.min(st.left, buf.length);
        this.onBody(buf.subarray(0, n));
        st.left -= n;
        if (st.left === 0) this.state = { s: 'chunk-end' };
        return n;
      }
      case 'chunk-end': {
        if (buf.length < 2) return -1;
        if (buf[0] !== CR || buf[1] !== LF) throw new HttpProtocolError('chunk not followed by CRLF');
        this.state = { s: 'chunk-size' };
        return 2;
      }
      case 'trailers': {
        // Trailer fields, if any, end with an empty line; none of them is read.
        if (buf.length >= 2 && buf[0] === CR && buf[1] === LF) {
          this.finish();
          return 2;
        }
        const end = buf.indexOf(HEAD_END);
        if (end === -1) {
          if (buf.length > MAX_HEAD_BYTES) throw new HttpProtocolError(`trailers over ${MAX_HEAD_BYTES} bytes`);
          return -1;
        }
        this.finish();
        return end + HEAD_END.length;
      }
      case 'until-close':
        this.onBody(buf);
        return buf.length;
      case 'done':
        throw new HttpProtocolError('bytes after the answer');
    }
  }

  private readHead(text: string): void {
    // One pass over the lines (an answer's head on the hot path: no split, no intermediate lists).
    let eol = text.indexOf('\r\n');
    if (eol === -1) eol = text.length;
    const first = text.slice(0, eol);
    const m = STATUS_LINE.exec(first);
    if (!m) throw new HttpProtocolError(`bad status line ${JSON.stringify(first.slice(0, 80))}`);
    const minor = Number(m[1]);
    const status = Number(m[2]);
    const headers: IncomingHttpHeaders = {};
    let lengths: string[] | undefined;
    for (let at = eol + 2; at < text.length; at = eol + 2) {
      eol = text.indexOf('\r\n', at);
      if (eol === -1) eol = text.length;
      const colon = text.indexOf(':', at);
      const name = colon > at && colon < eol ? text.slice(at, colon) : '';
      // A folded line (obs-fold) or a name with spaces: RFC 9112 lets a client reject both.
      if (!HEADER_NAME.test(name)) throw new HttpProtocolError(`bad header line ${JSON.stringify(text.slice(at, Math.min(eol, at + 80)))}`);
      const key = name.toLowerCase();
      // Optional whitespace around a value is spaces and tabs only (RFC 9110 5.6.3), as Node's parser trims.
      let from = colon + 1;
      let to = eol;
      while (from < to && isOws(text.charCodeAt(from))) from++;
      while (to > from && isOws(text.charCodeAt(to - 1))) to--;
      const value = text.slice(from, to);
      if (key === 'content-length') (lengths ??= []).push(value);
      const had = headers[key];
      if (had === undefined) headers[key] = key === 'set-cookie' ? [value] : value;
      else if (Array.isArray(had)) had.push(value);
      else if (!FIRST_WINS.has(key)) headers[key] = `${had}, ${value}`;
    }
    if (status >= 100 && status < 200) {
      // 101 would switch protocols, which no request of ours asks for.
      if (status === 101) throw new HttpProtocolError('unexpected 101 Switching Protocols');
      return; // An informational answer; the real one follows.
    }
    const connection = headers.connection;
    const tokens = connection === undefined ? [] : connection.toLowerCase().split(',').map((t) => t.trim());
    this.keepAlive = minor === 1 ? !tokens.includes('close') : tokens.includes('keep-alive');
    this.onHead({ status, headers });
    this.state = this.bodyState(status, headers, lengths);
  }

  private bodyState(status: number, headers: IncomingHttpHeaders, lengths: string[] | undefined): State {
    if (this.method === 'HEAD' || status === 204 || status === 304) return { s: 'done' };
    const te = headers['transfer-encoding'];
    if (te !== undefined) {
      // With both, Transfer-Encoding wins and the connection must not be reused (RFC 9112 6.3).
      if (lengths) this.keepAlive = false;
      const codings = te.toLowerCase().split(',').map((t) => t.trim());
      if (codings[codings.length - 1] === 'chunked') return { s: 'chunk-size' };
      this.keepAlive = false;
      return { s: 'until-close' };
    }
    if (lengths) {
      // Repeats of one value (in several fields or one list) are that value (RFC 9110 8.6).
      const distinct = lengths.length === 1 && DIGITS.test(lengths[0] ?? '') ? new Set(lengths) : new Set(lengths.flatMap((l) => l.split(',').map((t) => t.trim())));
      const [only = ''] = distinct;
      if (distinct.size !== 1 || !DIGITS.test(only)) throw new HttpProtocolError(`bad Content-Length ${JSON.stringify(lengths.join(', '))}`);
      const n = Number(only);
      return n === 0 ? { s: 'done' } : { s: 'length', left: n };
    }
    this.keepAlive = false;
    return { s: 'until-close' };
  }

  private finish(): void {
    this.state = { s: 'done' };
  }
}

const isOws = (c: number): boolean => c === 0x20 || c === 0x09;

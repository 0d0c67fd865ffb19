import { performance } from 'node:perf_hooks';
import { gunzip } from 'node:zlib';
import type { OutgoingHttpHeaders } from 'node:http';
import type { DirectPool, PooledSocket } from './direct-pool.js';
import { Http1AnswerReader } from './http1-answer.js';
import type { AnswerHead } from './http1-answer.js';
import { AnswerTooLargeError, MAX_ANSWER_BYTES, abortError, requestName, staleConnectionFailures } from './http-request.js';
import type { HttpAnswer, HttpRequest } from './http-request.js';

/** Methods Node sends a `Content-Length: 0` for when they carry no body (it would send chunked framing). */
const BODY_METHODS: ReadonlySet<string> = new Set(['POST', 'PUT', 'PATCH']);
/** A header name as RFC 9110 allows it (Node's checkIsHttpToken). */
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** What Node refuses in a header value (checkInvalidHeaderChar): no CR, LF or NUL can split a head. */
const BAD_VALUE = /[^\t\x20-\x7e\x80-\xff]/;
/** What Node refuses in a request path (ERR_UNESCAPED_CHARACTERS). */
const BAD_PATH = /[^\u0021-\u00ff]/;

/**
 * One request and its answer over a pooled HTTP/1.1 connection, written and read without Node's
 * http module: the head and body in one write, the answer read by Http1AnswerReader. Node's
 * ClientRequest, agent and IncomingMessage stream cost about as much CPU per request as the TLS and
 * JSON around them (docs/adr/0016-direct-http-transport.md). The semantics are those of the Node
 * path in http-transport.ts, which the same tests hold both to: a whole-request deadline (ETIMEDOUT),
 * an abort signal (AbortError), a byte limit (AnswerTooLargeError), `beforeWrite` asked once the
 * request has its connection, and a failure before any answer on a reused connection marked stale
 * (the caller sends a read again). A connection is used again only after an answer read whole with
 * nothing after it; any failure closes it, so no late answer can be read as another request's.
 */
export function sendDirect(pool: DirectPool, req: HttpRequest): Promise<HttpAnswer> {
  return new Promise<HttpAnswer>((resolve, reject) => {
    // Not sent at all: no connection is taken for it.
    if (req.signal?.aborted) return void reject(abortError(req));
    let head: string;
    try {
      head = requestHead(req);
    } catch (err) {
      return void reject(err instanceof Error ? err : new Error(String(err)));
    }
    let settled = false;
    let conn: PooledSocket | undefined;
    let giveUp: () => void = () => undefined;
    const fail = (err: Error): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.signal?.removeEventListener('abort', onAbort);
      giveUp();
      if (conn) {
        conn.user = undefined;
        conn.socket.destroy();
      }
      reject(err);
    };
    const onAbort = (): void => fail(abortError(req));
    const timer = req.timeoutMs
      ? setTimeout(() => fail(Object.assign(new Error(`${requestName(req)}: timed out`), { code: 'ETIMEDOUT' })), req.timeoutMs)
      : undefined;
    req.signal?.addEventListener('abort', onAbort, { once: true });

    const max = req.maxBodyBytes ?? MAX_ANSWER_BYTES;
    let answerHead: AnswerHead | undefined;
    let headersAt = 0;
    const chunks: Buffer[] = [];
    let bytes = 0;
    let tooLarge = false;
    const reader = new Http1AnswerReader(
      req.method,
      (h) => {
        answerHead = h;
        headersAt = performance.now();
      },
      (chunk) => {
        bytes += chunk.length;
        if (bytes <= max) return void chunks.push(chunk);
        tooLarge = true;
        chunks.length = 0;
      },
    );
    const complete = (): void => {
      if (settled || !conn || !answerHead) return;
      settled = true;
      clearTimeout(timer);
      req.signal?.removeEventListener('abort', onAbort);
      const c = conn;
      conn = undefined;
      c.user = undefined;
      // Not while bytes of this request are still queued (an answer that came before the body was
      // all written): the next request's would follow them on the wire.
      if (reader.reusable && c.socket.writableLength === 0) pool.release(c, { keepAliveMs: keepAliveHintMs(answerHead.headers['keep-alive']) });
      else c.socket.destroy();
      // Read whole but past the limit: the connection was fit to keep, the answer is not kept.
      if (tooLarge) return void reject(new AnswerTooLargeError(requestName(req), max));
      const h = answerHead;
      const body = chunks.length === 1 && chunks[0] ? chunks[0] : Buffer.concat(chunks);
      const done = (text: string): void => resolve({ status: h.status, headers: h.headers, body: text, headersAt });
      // Our requests do not ask for gzip (kube-client.ts), but a caller's headers may.
      if (h.headers['content-encoding'] !== 'gzip') return void decode(body, done, reject);
      try {
        gunzip(body, { maxOutputLength: max }, (err, plain) => {
          if (err) return void reject((err as Error & { code?: string }).code === 'ERR_BUFFER_TOO_LARGE' ? new AnswerTooLargeError(requestName(req), max) : err);
          decode(plain, done, reject);
        });
      } catch (err) {
        // A limit zlib refuses (over its largest output) throws at once, here inside a socket's listener.
        reject(err instanceof Error ? err : new Error(String(err)));
      }
    };

    // Called by the pool, possibly from inside another request's socket listener: nothing may throw out of it.
    const take = (got: PooledSocket | Error): void => {
      giveUp = () => undefined;
      if (got instanceof Error) return void fail(got);
      if (settled) return void pool.release(got);
      let refused: Error | undefined;
      try {
        refused = req.beforeWrite?.();
      } catch (err) {
        refused = err instanceof Error ? err : new Error(String(err));
      }
      if (refused) {
        // Nothing was written on it: the connection stays good for the next request.
        pool.release(got);
        return void fail(refused);
      }
      conn = got;
      got.user = {
        data: (chunk) => {
          if (settled) return;
          try {
            reader.push(chunk);
          } catch (err) {
            return void fail(err as Error);
          }
          if (reader.done) complete();
          // Cut while more is on its way: the connection's rest is not read, so it is closed.
          else if (tooLarge) fail(new AnswerTooLargeError(requestName(req), max));
        },
        closed: (err, ended) => {
          if (settled) return;
          let e = err;
          if (!e) {
            try {
              // Only the server's clean end completes an answer read to the connection's end: not an
              // error, and not a close of our own (dropConnections) while it was being read.
              if (!ended) throw new Error('closed here');
              reader.end();
              return void complete();
            } catch {
              // Named as Node names them: no answer at all ('socket hang up'), or one cut short.
              e = Object.assign(new Error(reader.started ? 'aborted' : 'socket hang up'), { code: 'ECONNRESET' });
            }
          }
          // Before any byte of an answer on a connection that carried one before: the server had
          // closed it while idle (or as this request arrived).
          if (!reader.started && got.reused && isReset(e)) staleConnectionFailures.add(e);
          fail(e);
        },
      };
      if (Buffer.byteLength(head) === head.length) got.socket.write(req.body === undefined ? head : head + req.body);
      else {
        // A header value with bytes past ASCII goes out as Latin-1, as Node writes heads.
        got.socket.cork();
        got.socket.write(head, 'latin1');
        if (req.body !== undefined) got.socket.write(req.body);
        got.socket.uncork();
      }
    };
    giveUp = pool.acquire((got) => {
      try {
        take(got);
      } catch (err) {
        fail(err instanceof Error ? err : new Error(String(err)));
      }
    });
  });
}

/** The server's `Keep-Alive: timeout=N` in milliseconds, as Node's agent reads it. */
function keepAliveHintMs(header: string | string[] | undefined): number | undefined {
  const m = typeof header === 'string' ? /^timeout=(\d+)/.exec(header) : null;
  return m ? Number(m[1]) * 1000 : undefined;
}

function isReset(err: Error): boolean {
  const code = (err as Error & { code?: string }).code;
  return code === 'ECONNRESET' || code === 'EPIPE';
}

function decode(body: Buffer, done: (text: string) => void, reject: (err: Error) => void): void {
  let text: string;
  try {
    text = body.toString('utf8');
  } catch (err) {
    // A body V8 cannot make a string of (ERR_STRING_TOO_LONG, for a limit set past it).
    return void reject(err instanceof Error ? err : new Error(String(err)));
  }
  done(text);
}

/** A request's header lines, checked once per headers object (KubeClient reuses one per content type and credentials). */
interface HeaderLines {
  text: string;
  hasHost: boolean;
  hasAuth: boolean;
  hasLength: boolean;
}
const checkedHeaders = new WeakMap<OutgoingHttpHeaders, HeaderLines>();

/** The request line and headers, as Node would write them for the same request; throws on what Node refuses. */
export function requestHead(req: HttpRequest): string {
  const { hostname, port, basePath, auth } = req.origin;
  const path = basePath + req.path;
  if (BAD_PATH.test(path)) throw Object.assign(new TypeError('Request path contains unescaped characters'), { code: 'ERR_UNESCAPED_CHARACTERS' });
  let lines = checkedHeaders.get(req.headers);
  if (!lines) {
    lines = headerLines(req.headers);
    checkedHeaders.set(req.headers, lines);
  }
  let head = `${req.method} ${path} HTTP/1.1\r\n${lines.text}`;
  if (!lines.hasHost) head += `Host: ${hostname.includes(':') ? `[${hostname}]` : hostname}${port ? `:${port}` : ''}\r\n`;
  if (auth && !lines.hasAuth) head += `Authorization: Basic ${Buffer.from(auth).toString('base64')}\r\n`;
  if (!lines.hasLength) {
    if (req.body !== undefined) head += `Content-Length: ${Buffer.byteLength(req.body)}\r\n`;
    else if (BODY_METHODS.has(req.method)) head += 'Content-Length: 0\r\n';
  }
  return `${head}Connection: keep-alive\r\n\r\n`;
}

function headerLines(headers: OutgoingHttpHeaders): HeaderLines {
  let text = '';
  let hasHost = false;
  let hasAuth = false;
  let hasLength = false;
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined) continue;
    if (!TOKEN.test(name)) throw Object.assign(new TypeError(`Header name must be a valid HTTP token ["${name}"]`), { code: 'ERR_INVALID_HTTP_TOKEN' });
    const lower = name.toLowerCase();
    if (lower === 'host') hasHost = true;
    else if (lower === 'authorization') hasAuth = true;
    else if (lower === 'content-length') hasLength = true;
    for (const v of Array.isArray(value) ? value : [value]) {
      const one = String(v);
      if (BAD_VALUE.test(one)) throw Object.assign(new TypeError(`Invalid character in header content ["${name}"]`), { code: 'ERR_INVALID_CHAR' });
      text += `${name}: ${one}\r\n`;
    }
  }
  return { text, hasHost, hasAuth, hasLength };
}

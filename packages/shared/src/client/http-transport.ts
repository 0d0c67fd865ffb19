import http from 'node:http';
import https from 'node:https';
import { performance } from 'node:perf_hooks';
import { createGunzip } from 'node:zlib';
import type { Readable } from 'node:stream';
import { sendDirect } from './direct-transport.js';
import { directPoolOf } from './keep-alive-agent.js';
import { AnswerTooLargeError, MAX_ANSWER_BYTES, abortError, requestName, staleConnectionFailures } from './http-request.js';
import type { HttpAnswer, HttpRequest } from './http-request.js';

export { AnswerTooLargeError, MAX_ANSWER_BYTES, originOf } from './http-request.js';
export type { HttpAnswer, HttpOrigin, HttpRequest } from './http-request.js';

/** Methods a request may be sent again for without asking whether the first got through (Go's Request.isReplayable). */
const REPLAYABLE = new Set(['GET', 'HEAD', 'OPTIONS']);
/** How many times a replayable request is sent again after its pooled connection turned out closed. */
const STALE_CONNECTION_RETRIES = 3;

/**
 * Node's own http(s) client with the shared keep-alive agent. The API server's answers are small
 * JSON documents on a hot path: node-fetch's Headers, streams and one AbortSignal per request
 * cost more CPU than the request (hack/bench/README.md, "Profiling").
 *
 * A read sent on a pooled connection the server has just closed as idle fails with "socket hang
 * up" (ECONNRESET) before any answer; it is sent again, as Go's transport does for client-go
 * (net/http `persistConn.shouldRetryRequest`: a reused connection, a replayable request). A write is
 * not: it may have reached the server, and its caller decides (errors.ts, writeMayHaveApplied).
 */
export async function send(req: HttpRequest): Promise<HttpAnswer> {
  // The deadline covers every attempt, as Go's http.Client.Timeout covers its transport's retries.
  const deadline = req.timeoutMs ? performance.now() + req.timeoutMs : undefined;
  for (let retries = 0; ; retries++) {
    const left = deadline === undefined ? undefined : Math.max(1, Math.round(deadline - performance.now()));
    try {
      return await sendOnce(left === undefined ? req : { ...req, timeoutMs: left });
    } catch (err) {
      const again = retries < STALE_CONNECTION_RETRIES && REPLAYABLE.has(req.method) && err instanceof Error && staleConnectionFailures.has(err) && !req.signal?.aborted;
      if (!again || (deadline !== undefined && performance.now() >= deadline)) throw err;
    }
  }
}

function sendOnce(req: HttpRequest): Promise<HttpAnswer> {
  const pool = req.nodeHttp ? undefined : directPoolOf(req.agent);
  return pool ? sendDirect(pool, req) : sendWithNodeHttp(req);
}

/** Through Node's http module: agents this project did not build (a proxy's), and nock in unit tests. */
function sendWithNodeHttp(req: HttpRequest): Promise<HttpAnswer> {
  return new Promise<HttpAnswer>((resolve, reject) => {
    let settled = false;
    let answer: http.IncomingMessage | undefined;
    const fail = (err: Error): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.signal?.removeEventListener('abort', onAbort);
      reject(err);
    };
    const onAbort = (): void => {
      fail(abortError(req));
      abandon(r, answer);
    };
    if (req.signal?.aborted) return void reject(abortError(req));
    const r = open(req, (res) => {
      answer = res;
      const headersAt = performance.now();
      // Our requests do not ask for gzip (kube-client.ts), but a caller's headers may.
      const stream: Readable = res.headers['content-encoding'] === 'gzip' ? res.pipe(createGunzip()) : res;
      const chunks: Buffer[] = [];
      let bytes = 0;
      const max = req.maxBodyBytes ?? MAX_ANSWER_BYTES;
      stream.on('data', (c: Buffer) => {
        if (settled) return;
        bytes += c.length;
        if (bytes <= max) return void chunks.push(c);
        chunks.length = 0;
        const err = new AnswerTooLargeError(requestName(req), max);
        fail(err);
        if (stream !== res) stream.destroy();
        abandon(r, res);
      });
      stream.on('error', fail);
      if (stream !== res) res.on('error', fail);
      stream.on('end', () => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        req.signal?.removeEventListener('abort', onAbort);
        let body: string;
        try {
          body = Buffer.concat(chunks).toString('utf8');
        } catch (err) {
          // A body V8 cannot make a string of (ERR_STRING_TOO_LONG, for a limit set past it): this
          // listener's throw would leave the process.
          return void reject(err instanceof Error ? err : new Error(String(err)));
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body, headersAt });
      });
    });
    const timer = req.timeoutMs
      ? setTimeout(() => {
          const err = Object.assign(new Error(`${requestName(req)}: timed out`), { code: 'ETIMEDOUT' });
          fail(err);
          abandon(r, answer);
        }, req.timeoutMs)
      : undefined;
    req.signal?.addEventListener('abort', onAbort, { once: true });
    r.on('error', (err: Error & { code?: string }) => {
      if (!settled && !answer && r.reusedSocket && (err.code === 'ECONNRESET' || err.code === 'EPIPE')) staleConnectionFailures.add(err);
      fail(err);
    });
    if (!req.beforeWrite) return void r.end(req.body);
    const check = req.beforeWrite;
    // On the socket's assignment, not its connection: a new socket's bytes go out once it connects,
    // and that wait (TCP and TLS: milliseconds, seconds when SYNs are lost) stays open. Waiting for
    // 'connect' before end() would hang under interceptors (nock's mock sockets connect only once
    // the request is complete).
    r.once('socket', () => {
      if (settled) return;
      const refused = check();
      if (refused === undefined) return void r.end(req.body);
      fail(refused);
      r.destroy(refused);
    });
  });
}

/**
 * Closes the connection of a request whose caller already has its error. Without an error argument:
 * once the whole answer is in, the keep-alive socket is back in the agent's pool with no error
 * listener, even while its last chunks are still being read, and a socket destroyed with an error
 * there throws out of the process (a cut list page crashed the manager on every relist). A complete
 * answer's socket is clean and stays pooled. A streamed answer still being read is ended with `err`
 * (its reader listens for errors; Node passes the error to the socket while it still has its
 * listeners).
 */
function abandon(r: http.ClientRequest, res?: http.IncomingMessage, err?: Error): void {
  if (res?.complete) return;
  if (res && err) res.destroy(err);
  r.destroy();
}

/**
 * Opens a streaming request (a watch) and resolves with the response once its headers arrive;
 * the caller reads and ends it. Aborting `signal` destroys the request and its response.
 */
export function openStream(req: HttpRequest): Promise<http.IncomingMessage> {
  return new Promise<http.IncomingMessage>((resolve, reject) => {
    const signal = req.signal;
    if (signal?.aborted) return void reject(abortError(req));
    let answer: http.IncomingMessage | undefined;
    const onAbort = (): void => {
      const err = abortError(req);
      reject(err);
      abandon(r, answer, err);
    };
    const r = open(req, (res) => {
      answer = res;
      // Listening until the answer is read, not beyond: a watch's signal outlives many requests.
      res.once('close', () => signal?.removeEventListener('abort', onAbort));
      resolve(res);
    });
    signal?.addEventListener('abort', onAbort, { once: true });
    r.on('error', (err) => {
      signal?.removeEventListener('abort', onAbort);
      reject(err);
    });
    r.end(req.body);
  });
}

function open(req: HttpRequest, onResponse: (res: http.IncomingMessage) => void): http.ClientRequest {
  // Set even where Node would not (a DELETE's body has no Content-Length from Node by default).
  const headers = req.body === undefined ? req.headers : { ...req.headers, 'Content-Length': Buffer.byteLength(req.body) };
  // Plain options, not a URL: Node would convert a URL into these on every request.
  const { protocol, hostname, port, basePath, auth } = req.origin;
  const options: http.RequestOptions = { protocol, hostname, port, auth, path: basePath + req.path, method: req.method, headers, agent: req.agent };
  return protocol === 'https:' ? https.request(options, onResponse) : http.request(options, onResponse);
}

import { expect } from 'chai';
import { seededRandom } from '@topovol/testing';
import { Http1AnswerReader, HttpProtocolError, MAX_HEAD_BYTES } from '../../src/client/http1-answer.js';
import type { AnswerHead } from '../../src/client/http1-answer.js';

interface Read {
  head?: AnswerHead;
  body: string;
  done: boolean;
  reusable: boolean;
  error?: string;
}

/** Feeds `bytes` in the given pieces, then (if `ended`) the connection's end. */
function read(bytes: string, pieces: number[] = [bytes.length], opts: { method?: string; ended?: boolean } = {}): Read {
  let head: AnswerHead | undefined;
  const body: Buffer[] = [];
  const r = new Http1AnswerReader(opts.method ?? 'GET', (h) => (head = h), (c) => body.push(Buffer.from(c)));
  const all = Buffer.from(bytes, 'latin1');
  let at = 0;
  try {
    for (const n of pieces) {
      r.push(all.subarray(at, at + n));
      at += n;
    }
    if (at < all.length) r.push(all.subarray(at));
    if (opts.ended) r.end();
  } catch (err) {
    expect(err).to.be.instanceOf(HttpProtocolError);
    return { head, body: Buffer.concat(body).toString('latin1'), done: r.done, reusable: r.reusable, error: (err as Error).message };
  }
  return { head, body: Buffer.concat(body).toString('latin1'), done: r.done, reusable: r.reusable };
}

/** Random cut points of a text's bytes: every split of the same bytes must read the same. */
function randomPieces(length: number, rnd: () => number): number[] {
  const pieces: number[] = [];
  let left = length;
  while (left > 0) {
    // Mostly small pieces, down to single bytes; a long head in some dozens of them.
    const n = Math.min(left, 1 + Math.floor(rnd() * (rnd() < 0.3 ? 4 : Math.max(40, length / 20))));
    pieces.push(n);
    left -= n;
  }
  return pieces;
}

const GO_ANSWER = 'HTTP/1.1 200 OK\r\nAudit-Id: 1\r\nContent-Type: application/json\r\nDate: Tue, 01 Dec 2026 09:00:00 GMT\r\nContent-Length: 17\r\n\r\n{"kind":"Status"}';
const CHUNKED = 'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\n{"a":\r\nA \r\n"bcdefgh"}\r\n0\r\nX-Trailer: t\r\n\r\n';

describe('reading an HTTP/1.1 answer', function () {
  const cases: { name: string; bytes: string; method?: string; ended?: boolean; want: Partial<Read> & { status?: number } }[] = [
    { name: 'Content-Length, as kube-apiserver answers a write', bytes: GO_ANSWER, want: { body: '{"kind":"Status"}', done: true, reusable: true, status: 200 } },
    { name: 'chunked, with a chunk extension and a trailer', bytes: CHUNKED, want: { body: '{"a":"bcdefgh"}', done: true, reusable: true } },
    { name: 'chunked, uppercase hex and no trailer', bytes: 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nA\r\n0123456789\r\n0\r\n\r\n', want: { body: '0123456789', done: true, reusable: true } },
    { name: 'informational answers before it are skipped', bytes: `HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n${GO_ANSWER}`, want: { body: '{"kind":"Status"}', done: true, status: 200 } },
    { name: 'no body for HEAD, whatever Content-Length says', bytes: 'HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n', method: 'HEAD', want: { body: '', done: true, reusable: true } },
    { name: 'no body for 204', bytes: 'HTTP/1.1 204 No Content\r\n\r\n', want: { body: '', done: true, reusable: true, status: 204 } },
    { name: 'no body for 304', bytes: 'HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\n\r\n', want: { body: '', done: true, reusable: true } },
    { name: 'Content-Length: 0', bytes: 'HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n', want: { body: '', done: true, reusable: true, status: 201 } },
    { name: 'no framing: read to the end of the connection, which is not reused', bytes: 'HTTP/1.1 200 OK\r\n\r\nall of it', ended: true, want: { body: 'all of it', done: true, reusable: false } },
    { name: 'Connection: close', bytes: 'HTTP/1.1 200 OK\r\nConnection: Close\r\nContent-Length: 2\r\n\r\nok', want: { body: 'ok', done: true, reusable: false } },
    { name: 'HTTP/1.0 without keep-alive', bytes: 'HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok', want: { done: true, reusable: false } },
    { name: 'HTTP/1.0 with keep-alive', bytes: 'HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok', want: { done: true, reusable: true } },
    { name: 'Transfer-Encoding and Content-Length: chunked wins, the connection is not reused', bytes: 'HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n', want: { body: 'ok', done: true, reusable: false } },
    { name: 'a coding other than chunked last: read to the end', bytes: 'HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nzz', ended: true, want: { body: 'zz', done: true, reusable: false } },
    { name: 'the same Content-Length twice', bytes: 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok', want: { body: 'ok', done: true } },
    { name: 'a status line without a reason', bytes: 'HTTP/1.1 404\r\nContent-Length: 0\r\n\r\n', want: { done: true, status: 404 } },
    // Refused: the framing cannot be trusted.
    { name: 'two different Content-Lengths', bytes: 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok', want: { error: 'bad Content-Length' } },
    { name: 'a negative Content-Length', bytes: 'HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n', want: { error: 'bad Content-Length' } },
    { name: 'bytes after the answer', bytes: `${GO_ANSWER}HTTP/1.1 200 OK\r\n`, want: { error: 'bytes after the answer' } },
    { name: 'not HTTP', bytes: 'SSH-2.0-OpenSSH\r\n\r\n', want: { error: 'bad status line' } },
    { name: 'HTTP/2 framing', bytes: 'HTTP/2 200\r\n\r\n', want: { error: 'bad status line' } },
    { name: 'a space before the colon', bytes: 'HTTP/1.1 200 OK\r\nContent-Length : 2\r\n\r\nok', want: { error: 'bad header line' } },
    { name: 'a folded header line', bytes: 'HTTP/1.1 200 OK\r\nX-A: 1\r\n  2\r\nContent-Length: 0\r\n\r\n', want: { error: 'bad header line' } },
    { name: 'a bad chunk size', bytes: 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n', want: { error: 'bad chunk size' } },
    { name: 'a chunk longer than it said', bytes: 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nokk\r\n', want: { error: 'chunk not followed by CRLF' } },
    { name: 'a protocol switch nobody asked for', bytes: 'HTTP/1.1 101 Switching Protocols\r\n\r\n', want: { error: '101' } },
    { name: 'a head over the limit', bytes: `HTTP/1.1 200 OK\r\nX-Big: ${'a'.repeat(MAX_HEAD_BYTES)}\r\n\r\n`, want: { error: 'head over' } },
    { name: 'a head over the limit, not yet ended', bytes: `HTTP/1.1 200 OK\r\nX-Big: ${'a'.repeat(MAX_HEAD_BYTES)}`, want: { error: 'head over' } },
    { name: 'cut in the body', bytes: 'HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nok', ended: true, want: { error: "ended in the answer's length" } },
    { name: 'cut in the head', bytes: 'HTTP/1.1 200 OK\r\nContent-Len', ended: true, want: { error: "ended in the answer's head" } },
    { name: 'cut between chunks', bytes: 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n', ended: true, want: { error: "ended in the answer's chunk-size" } },
  ];
  for (const c of cases) {
    it(c.name, function () {
      const got = read(c.bytes, undefined, c);
      const { status, error, ...rest } = c.want;
      if (error !== undefined) expect(got.error).to.include(error);
      else expect(got.error).to.equal(undefined);
      for (const [k, v] of Object.entries(rest)) expect(got[k as keyof Read], k).to.deep.equal(v);
      if (status !== undefined) expect(got.head?.status).to.equal(status);
    });
  }

  it('every split of the same bytes reads the same answer (300 random splits per case)', function () {
    const rnd = seededRandom(16);
    for (const c of cases) {
      const whole = read(c.bytes, undefined, c);
      for (let i = 0; i < 300; i++) {
        const pieces = randomPieces(Buffer.byteLength(c.bytes, 'latin1'), rnd);
        const split = read(c.bytes, pieces, c);
        // A refusal may come sooner with fewer bytes (a head over the limit), never a different answer.
        expect({ ...split, error: split.error?.replace(/:.*/, '') }, `${c.name} split as ${pieces.join(',')}`).to.deep.equal({ ...whole, error: whole.error?.replace(/:.*/, '') });
      }
    }
  });

  it('headers as Node gives them: lower-case names, set-cookie a list, repeats joined, first of a single-valued one kept', function () {
    const got = read('HTTP/1.1 200 OK\r\nAudit-Id: a\r\nSet-Cookie: x=1\r\nset-cookie: y=2\r\nX-Many: 1\r\nX-Many: 2\r\nContent-Type: application/json\r\nContent-Type: text/plain\r\nRetry-After: 1\r\nRetry-After: 9\r\nContent-Length: 0\r\n\r\n');
    expect(got.head?.headers).to.deep.equal({
      'audit-id': 'a',
      'set-cookie': ['x=1', 'y=2'],
      'x-many': '1, 2',
      'content-type': 'application/json',
      'retry-after': '1',
      'content-length': '0',
    });
  });

  it('says whether any byte came: a connection closed before any is one the server had dropped', function () {
    const r = new Http1AnswerReader('GET', () => undefined, () => undefined);
    expect(r.started).to.equal(false);
    r.push(Buffer.from('H'));
    expect(r.started).to.equal(true);
  });
});

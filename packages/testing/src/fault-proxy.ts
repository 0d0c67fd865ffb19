import http from 'node:http';
import https from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { KubeClient } from '@topovol/shared';
import { seededRandom } from './seeded-random.js';

/** Fractions (0..1) of requests that get each fault; the rest are forwarded untouched. */
export interface FaultRates {
  /** 429 Too Many Requests with Retry-After: 1, as API Priority and Fairness answers. */
  throttle?: number;
  /** 500 or 503 with a Status body. */
  serverError?: number;
  /** The connection is reset before any answer. */
  reset?: number;
  /**
   * A write (not GET) is forwarded and applied, and its connection reset once the API server has
   * answered, the answer dropped: the client cannot tell it from a reset before the request.
   */
  lostAnswer?: number;
  /** Forwarded after delayMs. */
  delay?: number;
  delayMs?: number;
  /** A watch stream is cut after its first bytes, usually in the middle of an event. */
  cutWatch?: number;
  /**
   * Each kind with a rate above 0 goes, in turn, to the next requests that can take it (watches
   * for cutWatch) until it has happened this many times since set(); then the rates apply. A
   * scenario whose loop sends few requests still meets every kind, whatever the machine's speed.
   */
  atLeast?: number;
}

export type FaultKind = 'throttle' | 'serverError' | 'reset' | 'lostAnswer' | 'delay' | 'cutWatch' | 'forwarded';

/** One request as the proxy handled it, for a failing test to show what its client sent. */
export interface JournalEntry {
  /** Milliseconds since the proxy started. */
  at: number;
  method: string;
  path: string;
  watch: boolean;
  /** The fault injected, 'forwarded', or 'upstream error' (kube-apiserver never answered). */
  outcome: Exclude<FaultKind, 'delay'> | 'upstream error';
  /** kube-apiserver's status code, when it answered. */
  code?: number;
  delayed: boolean;
}

/** How many requests the journal keeps (the latest). */
const JOURNAL_SIZE = 2_000;

/** A request as holdUntilRelease sees it: the path without its query. */
export interface HeldRequest {
  method: string;
  path: string;
  watch: boolean;
}

/**
 * Test tooling, not product code: a plain-HTTP proxy on loopback in front of the real
 * kube-apiserver that injects the faults a real cluster produces under load or during upgrades,
 * at configurable rates and from a seeded generator (a failing run can be replayed). Clients reach
 * it with `server: <url>` and their usual bearer token, which is passed on.
 */
export class FaultProxy {
  private rates: FaultRates = {};
  private random: () => number;
  readonly counts: Record<FaultKind, number> = { throttle: 0, serverError: 0, reset: 0, lostAnswer: 0, delay: 0, cutWatch: 0, forwarded: 0 };
  /** Injections since the last set(), for atLeast. */
  private since: Record<FaultKind, number> = { ...this.counts };
  /** "METHOD path" of every delayed request that writes (not GET): the late writes a slow network delivers. */
  readonly delayedWrites: string[] = [];
  private readonly sockets = new Set<Socket>();
  /** Open watch streams: turning cutWatch on cuts all of them, besides a share of later ones. */
  private readonly watches = new Set<{ cut: () => void; hold: () => void; req: HeldRequest }>();
  /** What holdUntilRelease holds, and how to let each held request or stream go. */
  private holding?: (r: HeldRequest) => boolean;
  private held: { req: HeldRequest; go: () => void }[] = [];
  /** What answerBareNotFound answers itself. */
  private notFound?: (r: HeldRequest) => boolean;
  private readonly journalEntries: JournalEntry[] = [];
  private readonly started = Date.now();

  private constructor(
    private readonly server: http.Server,
    private readonly upstream: URL,
    private readonly ca: Buffer,
    seed: number,
  ) {
    this.random = seededRandom(seed);
  }

  static async start(upstream: string, ca: Buffer, seed = 1): Promise<FaultProxy> {
    const server = http.createServer();
    const proxy = new FaultProxy(server, new URL(upstream), ca, seed);
    server.on('request', (req, res) => proxy.handle(req, res));
    server.on('connection', (s) => {
      proxy.sockets.add(s);
      s.on('close', () => proxy.sockets.delete(s));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return proxy;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** An unthrottled client with this bearer token whose every request goes through the proxy. */
  client(token: string): KubeClient {
    return KubeClient.forEndpoint({ server: this.url, token }, { qps: 0, burst: 1 });
  }

  /** Replaces the fault rates; `{}` forwards everything. */
  set(rates: FaultRates): void {
    this.rates = { ...rates };
    this.since = { throttle: 0, serverError: 0, reset: 0, lostAnswer: 0, delay: 0, cutWatch: 0, forwarded: 0 };
    // Watches opened before the faults would otherwise run on untouched: cut every open one.
    if ((rates.cutWatch ?? 0) > 0) for (const w of [...this.watches]) w.cut();
  }

  /**
   * Holds back what `match` selects until release(): a matching request is forwarded only then,
   * and a matching watch (open ones included) delivers nothing meanwhile, its events kept back in
   * order: a list or a watch lagging behind the others, as on a stalled connection. (kube-apiserver
   * may end a watch whose reader stalls for long; the client then resumes from its last event and
   * the events come late all the same.)
   */
  holdUntilRelease(match: (r: HeldRequest) => boolean): void {
    this.holding = match;
    for (const w of this.watches) if (match(w.req)) w.hold();
  }

  /**
   * Lets go, in the order they were held, what `only` selects (and goes on holding the rest, and
   * what holdUntilRelease selects); without `only`, everything, and holds nothing more.
   */
  release(only?: (r: HeldRequest) => boolean): void {
    if (!only) this.holding = undefined;
    const go = this.held.filter((h) => !only || only(h.req));
    this.held = this.held.filter((h) => !go.includes(h));
    for (const h of go) h.go();
  }

  /**
   * Answers what `match` selects (none, when undefined) with a bare "404 page not found", as Go's
   * http.NotFound writes it for an unknown path: what a proxy or an ingress in front of the API
   * server answers when it routes a request nowhere. It is a 404 that names no object.
   */
  answerBareNotFound(match: ((r: HeldRequest) => boolean) | undefined): void {
    this.notFound = match;
  }

  /** The latest requests (up to 2,000), oldest first. */
  journal(): readonly JournalEntry[] {
    return this.journalEntries;
  }

  /**
   * The journal since `sinceMs` (proxy time) as text, one line per request, for an assertion's
   * message: what the client asked and what became of it.
   */
  journalText(sinceMs = 0): string {
    return this.journalEntries
      .filter((e) => e.at >= sinceMs)
      .map((e) => `${(e.at / 1000).toFixed(3)}s ${e.method} ${e.path}${e.watch ? ' (watch)' : ''} -> ${e.outcome}${e.code === undefined ? '' : ` ${e.code}`}${e.delayed ? ' (delayed)' : ''}`)
      .join('\n');
  }

  /** Milliseconds since the proxy started, the journal's clock. */
  now(): number {
    return Date.now() - this.started;
  }

  private note(seen: HeldRequest, outcome: JournalEntry['outcome'], delayed: boolean, code?: number): void {
    this.journalEntries.push({ at: this.now(), method: seen.method, path: seen.path, watch: seen.watch, outcome, delayed, ...(code === undefined ? {} : { code }) });
    if (this.journalEntries.length > JOURNAL_SIZE) this.journalEntries.splice(0, this.journalEntries.length - JOURNAL_SIZE);
  }

  /** Total injected faults so far. */
  get injected(): number {
    return this.counts.throttle + this.counts.serverError + this.counts.reset + this.counts.lostAnswer + this.counts.delay + this.counts.cutWatch;
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private roll(rate: number | undefined): boolean {
    return rate !== undefined && rate > 0 && this.random() < rate;
  }

  private count(kind: FaultKind): void {
    this.counts[kind]++;
    this.since[kind]++;
  }

  /** The kind atLeast still owes and this request can take: the least injected one. */
  private owed(watch: boolean, write: boolean): FaultKind | undefined {
    const n = this.rates.atLeast ?? 0;
    const kinds = (['cutWatch', 'reset', 'lostAnswer', 'throttle', 'serverError', 'delay'] as const).filter(
      (k) => (this.rates[k] ?? 0) > 0 && this.since[k] < n && (k !== 'cutWatch' || watch) && (k !== 'lostAnswer' || write),
    );
    return kinds.sort((a, b) => this.since[a] - this.since[b])[0];
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse, released = false): void {
    const r = this.rates;
    const watch = /[?&]watch=(true|1)/.test(req.url ?? '');
    const seen: HeldRequest = { method: req.method ?? '', path: (req.url ?? '').split('?')[0]!, watch };
    if (this.notFound?.(seen)) {
      res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8', 'X-Content-Type-Options': 'nosniff' });
      res.end('404 page not found\n');
      return;
    }
    if (!watch && !released && this.holding?.(seen)) {
      this.held.push({ req: seen, go: () => this.handle(req, res, true) });
      return;
    }
    const write = !watch && req.method !== 'GET';
    const owed = this.owed(watch, write);
    const hit = (kind: Exclude<FaultKind, 'forwarded'>): boolean => (owed ? owed === kind : this.roll(r[kind]));
    if (hit('reset')) {
      this.count('reset');
      this.note(seen, 'reset', false);
      req.socket.destroy();
      return;
    }
    if (hit('throttle')) {
      this.count('throttle');
      this.note(seen, 'throttle', false);
      return status(res, 429, 'TooManyRequests', 'injected: too many requests, please try again later', { 'Retry-After': '1' });
    }
    if (hit('serverError')) {
      this.count('serverError');
      this.note(seen, 'serverError', false);
      const code = this.random() < 0.5 ? 500 : 503;
      return status(res, code, code === 500 ? 'InternalError' : 'ServiceUnavailable', 'injected: server error');
    }
    const cut = watch && hit('cutWatch');
    const lost = write && hit('lostAnswer');
    if (hit('delay')) {
      this.count('delay');
      if (req.method !== 'GET') this.delayedWrites.push(`${req.method ?? ''} ${(req.url ?? '').split('?')[0]!}`);
      setTimeout(() => this.forward(req, res, seen, cut, lost, true), r.delayMs ?? 500);
      return;
    }
    this.forward(req, res, seen, cut, lost, false);
  }

  private forward(req: http.IncomingMessage, res: http.ServerResponse, seen: HeldRequest, cut: boolean, lost: boolean, delayed: boolean): void {
    const headers = { ...req.headers, host: this.upstream.host };
    const up = https.request(
      { protocol: 'https:', hostname: this.upstream.hostname, port: this.upstream.port, method: req.method, path: req.url, headers, ca: this.ca },
      (upRes) => {
        this.note(seen, lost ? 'lostAnswer' : cut ? 'cutWatch' : 'forwarded', delayed, upRes.statusCode);
        if (lost) {
          // The API server has answered, so the write was applied (or refused); the client never hears which.
          this.count('lostAnswer');
          upRes.resume();
          upRes.on('end', () => req.socket.destroy());
          return;
        }
        res.writeHead(upRes.statusCode ?? 502, upRes.headers);
        const watchReq: HeldRequest = { ...seen, watch: true };
        const watch = { cut: (): void => undefined, hold: (): void => undefined, req: watchReq };
        watch.hold = (): void => {
          upRes.unpipe(res);
          upRes.pause();
          this.held.push({ req: watchReq, go: () => upRes.pipe(res) });
        };
        // Half of the next chunk, then the connection goes: a truncated JSON event (or, with no
        // event within a second, just the connection).
        watch.cut = (): void => {
          this.watches.delete(watch);
          this.count('cutWatch');
          upRes.unpipe(res);
          const timer = setTimeout(() => res.socket?.destroy(), 1_000);
          upRes.once('data', (chunk: Buffer) => {
            clearTimeout(timer);
            res.write(chunk.subarray(0, Math.max(1, Math.floor(chunk.length / 2))));
            upRes.destroy();
            res.socket?.destroy();
          });
        };
        if (cut) return watch.cut();
        this.count('forwarded');
        upRes.pipe(res);
        if (!/[?&]watch=(true|1)/.test(req.url ?? '')) return;
        this.watches.add(watch);
        res.on('close', () => this.watches.delete(watch));
        if (this.holding?.(watchReq)) watch.hold();
      },
    );
    up.on('error', () => {
      this.note(seen, 'upstream error', delayed);
      res.socket?.destroy();
    });
    // The client went away before the answer was complete (a cancelled watch): stop upstream too.
    res.on('close', () => {
      if (!res.writableFinished) up.destroy();
    });
    req.pipe(up);
  }
}

function status(res: http.ServerResponse, code: number, reason: string, message: string, extra: Record<string, string> = {}): void {
  const body = JSON.stringify({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code });
  res.writeHead(code, { 'Content-Type': 'application/json', ...extra });
  res.end(body);
}

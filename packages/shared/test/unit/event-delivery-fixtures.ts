import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { eventually } from '@topovol/testing';
import { KubeClient } from '../../src/client/kube-client.js';
import { Informer } from '../../src/informer/informer.js';
import type { EventHandler, InformerOptions } from '../../src/informer/informer.js';
import type { KubeObject } from '../../src/informer/object-key.js';
import { Resources } from '../../src/informer/resources.js';
import { metricsRegistry } from '../../src/metrics/registry.js';
import { FakeClock } from '../../src/ratelimit/clock.js';
import { WorkQueue } from '../../src/workqueue/work-queue.js';
import type { WorkQueueOptions } from '../../src/workqueue/work-queue.js';

// Helpers of the work queue and informer unit files (not a test file: mocha loads *.test.js only).

// ---- the work queue ----

let seq = 0;
/** A queue name unique in the process (metric series are per name). */
export const queueName = (): string => `unit-queue-${process.pid}-${++seq}`;

/**
 * Call in a describe: a maker of string-keyed queues (a fake clock unless given, a unique name unless
 * given) that are shut down after each test.
 */
export function queuesShutAfterEach(): (opts?: WorkQueueOptions<string>, name?: string) => WorkQueue {
  const queues: WorkQueue[] = [];
  afterEach(function () {
    for (const q of queues.splice(0)) q.shutDown();
  });
  return (opts = {}, name = queueName()) => {
    const q = new WorkQueue<string>(name, { clock: new FakeClock(), ...opts });
    queues.push(q);
    return q;
  };
}

/** Lets every pending promise callback and one macrotask turn run. */
export const flush = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
export const settle = async (turns = 20): Promise<void> => {
  for (let i = 0; i < turns; i++) await flush();
};

/** The value of one series of a workqueue metric, for the queue named `queue` (histograms: pass metricName). */
export async function metric(name: string, queue: string, metricName = name): Promise<number | undefined> {
  const m = await metricsRegistry.getSingleMetric(name)?.get();
  const v = m?.values.find((s) => s.labels.name === queue && ((s as { metricName?: string }).metricName ?? name) === metricName);
  return v?.value;
}

/** Takes everything currently queued, in order, marking each done. */
export async function drainOrder<K>(q: WorkQueue<K>): Promise<K[]> {
  const out: K[] = [];
  while (q.len() > 0) {
    const k = await q.get();
    if (k === undefined) break;
    out.push(k);
    q.done(k);
  }
  return out;
}

// ---- watch events and objects ----

export const pv = (name: string, rv: number, labels?: Record<string, string>): KubeObject => ({ metadata: { name, resourceVersion: String(rv), ...(labels ? { labels } : {}) } });
export const line = (o: unknown): string => `${JSON.stringify(o)}\n`;
export type WireEvent = { type: string; object: unknown };
/** A watch ERROR event carrying a Status. */
export const status = (code: number, reason: string): WireEvent => ({ type: 'ERROR', object: { kind: 'Status', code, reason, message: reason } });
export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

// ---- a local API server for persistent volumes whose answers each test writes ----

/** One open watch: the test writes its events and ends it. */
export class ScriptedWatch {
  constructor(
    readonly query: URLSearchParams,
    private readonly res: http.ServerResponse,
  ) {}

  /** Writes the events in one write (one chunk, as a server that flushes them together). */
  send(...events: WireEvent[]): void {
    this.res.write(events.map(line).join(''));
  }

  end(...events: WireEvent[]): void {
    this.res.end(events.map(line).join(''));
  }

  /** Ends the response with text as it is (a last line without its newline). */
  endRaw(text: string): void {
    this.res.end(text);
  }

  /** Drops the connection without ending the response. */
  drop(): void {
    this.res.socket?.destroy();
  }

  /** Writes the events as one chunk and closes the connection without the response's last chunk. */
  sendAndCut(...events: WireEvent[]): void {
    const body = events.map(line).join('');
    this.res.socket?.end(`${Buffer.byteLength(body).toString(16)}\r\n${body}\r\n`);
  }
}

export interface ListAnswer {
  rv: number;
  items: KubeObject[];
}
export type Answer = (n: number) => ListAnswer | Promise<ListAnswer>;

/** Lists answered by `answer` (the n-th list, from 1); watches held open for the test. */
export class ScriptedApi {
  lists = 0;
  readonly watches: ScriptedWatch[] = [];
  readonly client: KubeClient;
  /** Limiter waits (lists' and watches') from the `gateFrom`-th on wait until release(). */
  private waits = 0;
  private gateFrom = Infinity;
  private readonly gated: (() => void)[] = [];

  private constructor(
    private readonly srv: http.Server,
    private readonly answer: Answer,
    private readonly onWatch?: (w: ScriptedWatch) => void,
  ) {
    const port = (srv.address() as AddressInfo).port;
    this.client = KubeClient.forEndpoint({ server: `http://127.0.0.1:${port}` }, { qps: 0, burst: 0 });
    const wait = this.client.limiter.wait.bind(this.client.limiter);
    this.client.limiter.wait = (signal?: AbortSignal): Promise<void> => {
      if (++this.waits < this.gateFrom) return wait(signal);
      return new Promise<void>((resolve) => this.gated.push(resolve));
    };
  }

  static async start(answer: Answer, onWatch?: (w: ScriptedWatch) => void): Promise<ScriptedApi> {
    const made: { api?: ScriptedApi } = {};
    const srv = http.createServer((req, res) => void made.api?.serve(req, res));
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
    made.api = new ScriptedApi(srv, answer, onWatch);
    return made.api;
  }

  private async serve(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const q = new URL(req.url ?? '/', 'http://x').searchParams;
    if (q.get('watch') === 'true') {
      res.writeHead(200);
      res.flushHeaders();
      const w = new ScriptedWatch(q, res);
      this.watches.push(w);
      this.onWatch?.(w);
      return;
    }
    const { rv, items } = await this.answer(++this.lists);
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ kind: 'PersistentVolumeList', apiVersion: 'v1', metadata: { resourceVersion: String(rv) }, items }));
  }

  /** The i-th watch (from 0), once the informer opened it. */
  async watch(i: number): Promise<ScriptedWatch> {
    return eventually(() => {
      const w = this.watches[i];
      if (!w) throw new Error(`watch ${i} not opened (${this.watches.length} so far)`);
      return w;
    }, 10_000, 10);
  }

  /** From the n-th limiter wait on (lists and watches both wait), hold each until release(). */
  gateFromWait(n: number): void {
    this.gateFrom = n;
  }

  heldWaits(): number {
    return this.gated.length;
  }

  release(): void {
    this.gateFrom = Infinity;
    for (const r of this.gated.splice(0)) r();
  }

  close(): void {
    this.release();
    this.srv.closeAllConnections();
    this.srv.close();
  }
}

/**
 * Call in a describe: `api` starts a ScriptedApi, `informer` a persistent-volume informer on it
 * (backoff 10-20 ms unless given); both are stopped after each test.
 */
export function scriptedInformers(): {
  api: (answer: Answer, onWatch?: (w: ScriptedWatch) => void) => Promise<ScriptedApi>;
  informer: (a: ScriptedApi, opts?: InformerOptions<KubeObject>) => Informer<KubeObject>;
} {
  const apis: ScriptedApi[] = [];
  const informers: Informer<KubeObject>[] = [];
  afterEach(async function () {
    for (const inf of informers.splice(0)) await inf.stop();
    for (const a of apis.splice(0)) a.close();
  });
  return {
    api: async (answer, onWatch) => {
      const a = await ScriptedApi.start(answer, onWatch);
      apis.push(a);
      return a;
    },
    informer: (a, opts = {}) => {
      const inf = new Informer<KubeObject>(a.client, Resources.persistentVolumes, { backoff: { startMs: 10, maxMs: 20 }, ...opts });
      informers.push(inf);
      return inf;
    },
  };
}

/** What handlers saw, one string per call. */
export function recorder(): { seen: string[]; handler: EventHandler<KubeObject> } {
  const seen: string[] = [];
  const at = (o: KubeObject): string => `${o.metadata?.name}@${o.metadata?.resourceVersion}`;
  return {
    seen,
    handler: {
      onAdd: (o) => void seen.push(`add ${at(o)}`),
      onUpdate: (a, b) => void seen.push(`update ${at(a)}->${at(b)}`),
      onDelete: (o) => void seen.push(`delete ${at(o)}`),
      onRelist: () => void seen.push('relist'),
    },
  };
}

/** The cached objects as name@resourceVersion, sorted. */
export const names = (inf: Informer<KubeObject>): string[] =>
  inf.cache
    .list()
    .map((o) => `${o.metadata?.name}@${o.metadata?.resourceVersion}`)
    .sort();

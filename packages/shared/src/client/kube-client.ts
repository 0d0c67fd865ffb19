import type http from 'node:http';
import { performance } from 'node:perf_hooks';
import type { KubeConfig } from '@kubernetes/client-node';
import { TokenBucket } from '../ratelimit/token-bucket.js';
import { KubeApiError, WriteFencedError } from './errors.js';
import { InvalidPathSegmentError, pathSegmentProblem } from './path-segment.js';
import { collectionPath, describeItem, resourceLabel } from '../informer/resources.js';
import type { ResourceType } from '../informer/resources.js';
import type { KubeObject } from '../informer/object-key.js';
import type { ApiEndpoint } from './endpoint.js';
import { ClientNodeEndpoint } from './client-node-endpoint.js';
import { loadEndpoint } from './load-endpoint.js';
import { StaticEndpoint } from './static-endpoint.js';
import type { StaticEndpointOptions } from './static-endpoint.js';
import { openStream, originOf, send } from './http-transport.js';
import type { HttpOrigin, HttpRequest } from './http-transport.js';
import { ServerClock } from './server-clock.js';
import { withoutManagedFields } from './without-managed-fields.js';
import { listPages, PageSizer } from './paged-list.js';

export interface ClientOptions {
  /** Client-side rate limit; 0 or negative means unthrottled (as --kube-api-qps). */
  qps: number;
  burst: number;
  userAgent?: string;
  /** Per-request timeout for non-watch calls. */
  timeoutMs?: number;
  /**
   * Send requests through Node's http module (true) or the direct transport (false,
   * direct-transport.ts); watches always go through Node's http. Unset: the direct transport
   * unless the environment sets TOPOVOL_DIRECT_TRANSPORT=0 (docs/adr/0016-direct-http-transport.md).
   * nock intercepts only Node's http.
   */
  nodeHttp?: boolean;
}

export type QueryValue = string | number | boolean | undefined;

/**
 * Asked right before each write is sent: a reason not to send it, or undefined. The manager fences
 * a leader-elected loop's writes once its Lease may have passed to another replica (LeaderElector.
 * writeFence), so a leader whose process was frozen (SIGSTOP, a long GC pause, a blocked event
 * loop) does not send its queued writes before its renew loop learns that it lost the Lease.
 */
export type WriteFence = () => string | undefined;

const WRITES: ReadonlySet<string> = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** The direct transport unless the environment opts out (ClientOptions.nodeHttp). */
const DIRECT_BY_DEFAULT = process.env.TOPOVOL_DIRECT_TRANSPORT !== '0';

/** The most of a watch's error answer read (its Status). */
export const ERROR_BODY_MAX_BYTES = 1024 * 1024;

export interface RequestOptions {
  query?: Record<string, QueryValue>;
  body?: unknown;
  contentType?: string;
  signal?: AbortSignal;
  headers?: Record<string, string>;
  /** Read at most this many bytes of the answer; past them the call fails with AnswerTooLargeError. */
  maxBodyBytes?: number;
  /** Parse the answer without its managedFields (withoutManagedFields, cut from the text). */
  withoutManagedFields?: boolean;
}

export type PatchType = 'merge' | 'strategic' | 'json' | 'apply';

const PATCH_CONTENT_TYPE: Record<PatchType, string> = {
  merge: 'application/merge-patch+json',
  strategic: 'application/strategic-merge-patch+json',
  json: 'application/json-patch+json',
  apply: 'application/apply-patch+yaml',
};

export interface WriteOptions {
  fieldManager?: string;
  dryRun?: boolean;
  signal?: AbortSignal;
  /** The answer is parsed without its managedFields, cut from the text first: for callers that drop them anyway (the binder's writes). */
  withoutManagedFields?: boolean;
}

export interface PatchOptions extends WriteOptions {
  subresource?: 'status';
  /** Server-side apply: take ownership of conflicting fields. */
  force?: boolean;
}

export interface DeleteOptions {
  /** Delete only if the object still has this uid / resourceVersion (a destructive write must not race). */
  preconditions?: { uid?: string; resourceVersion?: string };
  propagationPolicy?: 'Foreground' | 'Background' | 'Orphan';
  gracePeriodSeconds?: number;
  /** Admission and validation run, nothing is stored (DeleteOptions.dryRun: All). */
  dryRun?: boolean;
  signal?: AbortSignal;
}

export interface ListOptions {
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  signal?: AbortSignal;
}

export interface ObjectList<T> {
  metadata?: { resourceVersion?: string; continue?: string };
  items: T[];
}

/**
 * The one client every loop shares: one keep-alive connection pool, one client-side token bucket
 * (as client-go's QPS/Burst), and errors thrown as KubeApiError so callers can classify them.
 * Objects are plain JSON as the server sends them (timestamps stay strings), which is also what the
 * informers cache. Where the server is and how to authenticate is an ApiEndpoint (loadEndpoint).
 */
export class KubeClient {
  readonly limiter: TokenBucket;
  readonly server: string;
  /** The API server's clock from its answers' Date headers; shared by every client derived from this one. */
  readonly serverClock: ServerClock;
  private readonly origin: HttpOrigin;
  private agent?: Promise<http.Agent>;
  private builtFor?: Readonly<Record<string, string | string[]>>;
  private readonly built = new Map<string, http.OutgoingHttpHeaders>();
  private readonly listSizers = new Map<string, PageSizer>();

  private constructor(
    private readonly endpoint: ApiEndpoint,
    readonly options: ClientOptions,
    private readonly impersonate?: { user: string; groups: string[] },
    limiter?: TokenBucket,
    serverClock?: ServerClock,
    private readonly fence?: WriteFence,
    /** The client whose connections this one uses (itself unless derived by withWriteFence). */
    private readonly pool?: KubeClient,
  ) {
    this.server = endpoint.server;
    this.serverClock = serverClock ?? new ServerClock();
    this.origin = originOf(endpoint.server);
    this.limiter = limiter ?? new TokenBucket(options.qps, options.burst);
  }

  /** --kubeconfig, else $KUBECONFIG, else in-cluster config (as kube-controller-manager). */
  static load(kubeconfig: string | undefined, options: ClientOptions): KubeClient {
    return new KubeClient(loadEndpoint(kubeconfig), options);
  }

  static forEndpoint(endpoint: ApiEndpoint | StaticEndpointOptions, options: ClientOptions): KubeClient {
    return new KubeClient('agent' in endpoint ? endpoint : new StaticEndpoint(endpoint), options);
  }

  /** A client-node KubeConfig a caller built itself (its credentials are resolved by client-node). */
  static fromKubeConfig(kc: KubeConfig, options: ClientOptions): KubeClient {
    return new KubeClient(ClientNodeEndpoint.fromKubeConfig(kc), options);
  }

  /** The same credentials impersonating a user (for RBAC tests); has its own rate limit and connections. */
  forUser(user: string, groups: string[] = []): KubeClient {
    return new KubeClient(this.endpoint, this.options, { user, groups }, undefined, this.serverClock);
  }

  /**
   * The same credentials and server with a token bucket of their own, so that one kind of write
   * (e.g. capacity objects) has its own API budget and cannot starve the others. It has its own
   * connections too (up to MAX_SOCKETS, which is sized for one client's watches and workers):
   * dropConnections and close on this client do not reach it, nor on it this client.
   */
  withRateLimit(qps: number, burst: number): KubeClient {
    return new KubeClient(this.endpoint, { ...this.options, qps, burst }, this.impersonate, undefined, this.serverClock, this.fence);
  }

  /** The same client reading the API server's time into `clock` (tests: a clock whose local fallback is skewed); its own connections, as withRateLimit. */
  withServerClock(clock: ServerClock): KubeClient {
    return new KubeClient(this.endpoint, this.options, this.impersonate, this.limiter, clock, this.fence);
  }

  /**
   * The same client (rate limit, connections, server clock) whose writes first ask `fence`, and
   * every client derived from it too. A fenced write throws WriteFencedError, unsent.
   */
  withWriteFence(fence: WriteFence): KubeClient {
    const outer = this.fence;
    const both: WriteFence = outer ? () => outer() ?? fence() : fence;
    return new KubeClient(this.endpoint, this.options, this.impersonate, this.limiter, this.serverClock, both, this.pool ?? this);
  }

  /** Request headers: the shared ones below, then a caller's, then the body's content type. */
  private async headers(contentType?: string, extra?: Record<string, string>): Promise<http.OutgoingHttpHeaders> {
    const base = await this.sharedHeaders(contentType);
    return extra ? { ...base, ...extra, ...(contentType ? { 'Content-Type': contentType } : {}) } : base;
  }

  /**
   * The endpoint's credentials and ours, built once per content type and credentials (an endpoint
   * hands out the same object while its credentials are unchanged) and shared by every request,
   * which Node only reads.
   */
  private async sharedHeaders(contentType: string | undefined): Promise<http.OutgoingHttpHeaders> {
    const auth = await this.endpoint.authHeaders();
    if (auth !== this.builtFor) {
      this.builtFor = auth;
      this.built.clear();
    }
    let headers = this.built.get(contentType ?? '');
    if (!headers) {
      const h: http.OutgoingHttpHeaders = { ...auth, Accept: 'application/json', 'User-Agent': this.options.userAgent ?? 'topovol-controller-manager' };
      if (this.impersonate) {
        h['Impersonate-User'] = this.impersonate.user;
        if (this.impersonate.groups.length) h['Impersonate-Group'] = [...this.impersonate.groups];
      }
      if (contentType) h['Content-Type'] = contentType;
      headers = Object.freeze(h);
      this.built.set(contentType ?? '', headers);
    }
    return headers;
  }

  private connection(): Promise<http.Agent> {
    if (this.pool) return this.pool.connection();
    if (this.agent) return this.agent;
    const agent = this.endpoint.agent();
    this.agent = agent;
    // A failure is not kept: building the agent may run a kubeconfig's credential plugin, and one
    // failed run would otherwise fail every request of this client for good.
    agent.catch(() => {
      if (this.agent === agent) this.agent = undefined;
    });
    return agent;
  }

  /** A path below the server with its query, as the transport sends it (no URL object per request). */
  static pathWithQuery(path: string, query?: Record<string, QueryValue>): string {
    let q = '';
    for (const k in query) {
      const v = query[k];
      if (v !== undefined && v !== '') q += `${q ? '&' : '?'}${encodeURIComponent(k)}=${encodeURIComponent(String(v))}`;
    }
    return path + q;
  }

  /** One rate-limited API call; non-2xx answers throw KubeApiError. */
  async request<T>(method: string, path: string, opts: RequestOptions = {}): Promise<T> {
    const text = await this.requestText(method, path, opts);
    return (text ? JSON.parse(opts.withoutManagedFields ? withoutManagedFields(text) : text) : {}) as T;
  }

  /** As request, for endpoints that do not answer JSON (the API server's /metrics): the body as text. */
  async requestText(method: string, path: string, opts: RequestOptions = {}): Promise<string> {
    await this.limiter.wait(opts.signal);
    // No Accept-Encoding: gzip. kube-controller-manager and kube-scheduler set DisableCompression
    // on their clients (cmd/kube-controller-manager/app/options/options.go; kubernetes #80919):
    // next to the API server, gzip of large lists costs both sides CPU and saves no time.
    let body: string | undefined;
    let contentType: string | undefined;
    if (opts.body !== undefined) {
      contentType = opts.contentType ?? 'application/json';
      body = typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
    }
    const headers = await this.headers(contentType, opts.headers);
    const agent = await this.connection();
    // Asked last, after every wait (the rate limiter's may be long): no await between it and the send.
    const fence = this.fence && WRITES.has(method) ? this.fence : undefined;
    const fenced = fence?.();
    if (fenced !== undefined) throw new WriteFencedError(method, path, fenced);
    // And again once a socket is its own: it may have waited for one (every one busy).
    const beforeWrite = fence && ((): Error | undefined => {
      const why = fence();
      return why === undefined ? undefined : new WriteFencedError(method, path, why);
    });
    const answer = await send({
      method,
      origin: this.origin,
      path: KubeClient.pathWithQuery(path, opts.query),
      headers,
      agent,
      body,
      timeoutMs: this.options.timeoutMs ?? 60_000,
      signal: opts.signal,
      maxBodyBytes: opts.maxBodyBytes,
      beforeWrite,
      nodeHttp: this.options.nodeHttp ?? !DIRECT_BY_DEFAULT,
    });
    // Only kube-apiserver's own answers (it sets Audit-Id on each): not a proxy's error page.
    if (answer.headers['audit-id']) this.serverClock.observe(answer.headers.date, answer.headersAt);
    if (answer.status < 200 || answer.status >= 300) {
      throw KubeApiError.fromResponse(answer.status, answer.body, headerValue(answer.headers['retry-after']));
    }
    return answer.body;
  }

  /**
   * A streaming GET (a watch): resolves with the open response once the server answered 200; any
   * other answer throws KubeApiError. Not rate limited, as client-go does not limit watches.
   */
  async openStream(path: string, query: Record<string, QueryValue>, signal: AbortSignal): Promise<http.IncomingMessage> {
    const req: HttpRequest = { method: 'GET', origin: this.origin, path: KubeClient.pathWithQuery(path, query), headers: await this.headers(), agent: await this.connection(), signal };
    const res = await openStream(req);
    if (res.headers['audit-id']) this.serverClock.observe(res.headers.date, performance.now());
    if (res.statusCode === 200) return res;
    // A Status is a few hundred bytes: a longer error body (a proxy's page, or one that never ends)
    // is read no further, so that it can neither hold the watch nor fill the heap.
    const chunks: Buffer[] = [];
    let bytes = 0;
    for await (const c of res) {
      bytes += (c as Buffer).length;
      if (bytes > ERROR_BODY_MAX_BYTES) break;
      chunks.push(c as Buffer);
    }
    throw KubeApiError.fromResponse(res.statusCode ?? 0, Buffer.concat(chunks).toString('utf8'), headerValue(res.headers['retry-after']));
  }

  // Resource helpers: typed by the caller, path built from a ResourceType.

  private objectPath(r: ResourceType, name: string, namespace?: string, sub?: string): string {
    if (r.namespaced && !namespace) throw new Error(`${r.kind} ${name}: namespace required`);
    const nameProblem = pathSegmentProblem(name);
    if (nameProblem) throw new InvalidPathSegmentError('name', name, nameProblem);
    return `${collectionPath(r, namespace)}/${encodeURIComponent(name)}${sub ? `/${sub}` : ''}`;
  }

  // async, like every method that names an object: a name refused before any request is a
  // rejection, not a throw past a caller's .catch().
  async get<T extends KubeObject>(r: ResourceType, name: string, namespace?: string, signal?: AbortSignal): Promise<T> {
    return this.request<T>('GET', this.objectPath(r, name, namespace), { signal });
  }

  /**
   * Lists all pages (of at most 500 objects and LIST_PAGE_MAX_BYTES each). `transform` projects
   * each object as its page arrives, so only the projections are held: a namespace's pods, say,
   * may be as large as their writers made them.
   */
  async list<T extends KubeObject>(r: ResourceType, opts: ListOptions = {}, transform: (o: KubeObject) => T = (o) => o as T): Promise<ObjectList<T>> {
    const items: T[] = [];
    const query = { labelSelector: opts.labelSelector, fieldSelector: opts.fieldSelector };
    const label = resourceLabel(r);
    // One sizer per resource, kept: a namespace of large pods is not cut again at every read.
    let sizer = this.listSizers.get(label);
    if (!sizer) this.listSizers.set(label, (sizer = new PageSizer(500)));
    const rv = await listPages(this, collectionPath(r, opts.namespace), query, sizer, label, (page) => {
      for (const item of page) items.push(transform(describeItem(r, item)));
    }, { signal: opts.signal });
    return { metadata: { resourceVersion: rv }, items };
  }

  async create<T extends KubeObject>(r: ResourceType, obj: T, opts: WriteOptions = {}): Promise<T> {
    return this.request<T>('POST', collectionPath(r, obj.metadata?.namespace), {
      body: obj,
      query: writeQuery(opts),
      signal: opts.signal,
      withoutManagedFields: opts.withoutManagedFields,
    });
  }

  /** PUT with the object's resourceVersion: fails with Conflict if someone else wrote first. */
  async replace<T extends KubeObject>(r: ResourceType, obj: T, opts: WriteOptions & { subresource?: 'status' } = {}): Promise<T> {
    const md = obj.metadata ?? {};
    return this.request<T>('PUT', this.objectPath(r, md.name ?? '', md.namespace, opts.subresource), {
      body: obj,
      query: writeQuery(opts),
      signal: opts.signal,
      withoutManagedFields: opts.withoutManagedFields,
    });
  }

  replaceStatus<T extends KubeObject>(r: ResourceType, obj: T, opts: WriteOptions = {}): Promise<T> {
    return this.replace(r, obj, { ...opts, subresource: 'status' });
  }

  async patch<T extends KubeObject>(
    r: ResourceType,
    name: string,
    namespace: string | undefined,
    type: PatchType,
    patch: unknown,
    opts: PatchOptions = {},
  ): Promise<T> {
    if (type === 'apply' && !opts.fieldManager) throw new Error('server-side apply needs a fieldManager');
    return this.request<T>('PATCH', this.objectPath(r, name, namespace, opts.subresource), {
      body: patch,
      contentType: PATCH_CONTENT_TYPE[type],
      query: { ...writeQuery(opts), force: type === 'apply' && opts.force ? 'true' : undefined },
      signal: opts.signal,
      withoutManagedFields: opts.withoutManagedFields,
    });
  }

  /** Server-side apply of a whole (partial) object under a field manager. */
  apply<T extends KubeObject>(r: ResourceType, obj: T, fieldManager: string, opts: Omit<PatchOptions, 'fieldManager'> = {}): Promise<T> {
    const md = obj.metadata ?? {};
    return this.patch<T>(r, md.name ?? '', md.namespace, 'apply', obj, { ...opts, fieldManager });
  }

  async delete(r: ResourceType, name: string, namespace?: string, opts: DeleteOptions = {}): Promise<void> {
    const body: Record<string, unknown> = { kind: 'DeleteOptions', apiVersion: 'v1' };
    if (opts.preconditions) body.preconditions = opts.preconditions;
    if (opts.propagationPolicy) body.propagationPolicy = opts.propagationPolicy;
    if (opts.gracePeriodSeconds !== undefined) body.gracePeriodSeconds = opts.gracePeriodSeconds;
    // In the body, not the query: kube-apiserver takes a delete's options from its body when it has
    // one and reads the query only when it has none, so a `?dryRun=All` beside this body is ignored
    // and the object really deleted (staging/src/k8s.io/apiserver/pkg/endpoints/handlers/delete.go).
    if (opts.dryRun) body.dryRun = ['All'];
    await this.request<unknown>('DELETE', this.objectPath(r, name, namespace), { body, signal: opts.signal });
  }

  /** Drops every open connection of this client's pool (shared with withWriteFence's clients, not others), watches included, as a network failure would. */
  async dropConnections(): Promise<void> {
    if (this.pool) return this.pool.dropConnections();
    const agent = await this.agent;
    agent?.destroy();
    this.agent = undefined;
  }

  /** Closes idle keep-alive connections (lets the process exit promptly). */
  close(): void {
    void this.agent?.then((a) => a.destroy());
  }
}

const headerValue = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v);

function writeQuery(opts: WriteOptions): Record<string, QueryValue> {
  return { fieldManager: opts.fieldManager, dryRun: opts.dryRun ? 'All' : undefined };
}

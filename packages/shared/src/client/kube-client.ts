import https from 'node:https';
import http from 'node:http';
import fetch, { Headers } from 'node-fetch';
import type { RequestInit, Response } from 'node-fetch';
import { KubeConfig } from '@kubernetes/client-node';
import { TokenBucket } from '../ratelimit/token-bucket.js';
import { KubeApiError } from './errors.js';
import { collectionPath } from '../informer/resources.js';
import type { ResourceType } from '../informer/resources.js';
import type { KubeObject } from '../informer/object-key.js';

export interface ClientOptions {
  /** Client-side rate limit; 0 or negative means unthrottled (as --kube-api-qps). */
  qps: number;
  burst: number;
  userAgent?: string;
  /** Per-request timeout for non-watch calls. */
  timeoutMs?: number;
}

export type QueryValue = string | number | boolean | undefined;

export interface RequestOptions {
  query?: Record<string, QueryValue>;
  body?: unknown;
  contentType?: string;
  signal?: AbortSignal;
  headers?: Record<string, string>;
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

const AUTH_CACHE_MS = 10_000;

/**
 * The one client every loop shares: kubeconfig handling and authentication from client-node, one
 * keep-alive connection pool, one client-side token bucket (as client-go's QPS/Burst), and errors
 * thrown as KubeApiError so callers can classify them. Objects are plain JSON as the server sends
 * them (timestamps stay strings), which is also what the informers cache.
 */
export class KubeClient {
  readonly limiter: TokenBucket;
  private agent?: Promise<http.Agent>;
  private readonly server: string;
  private authCache?: { at: number; headers: Record<string, string[]> };

  private constructor(
    readonly kubeConfig: KubeConfig,
    readonly options: ClientOptions,
    private readonly impersonate?: { user: string; groups: string[] },
    limiter?: TokenBucket,
  ) {
    const cluster = kubeConfig.getCurrentCluster();
    if (!cluster) throw new Error('kubeconfig has no current cluster');
    this.server = cluster.server.replace(/\/+$/, '');
    this.limiter = limiter ?? new TokenBucket(options.qps, options.burst);
  }

  /** --kubeconfig, else $KUBECONFIG, else in-cluster config (as kube-controller-manager). */
  static load(kubeconfig: string | undefined, options: ClientOptions): KubeClient {
    const kc = new KubeConfig();
    const file = kubeconfig || process.env.KUBECONFIG;
    if (file) kc.loadFromFile(file);
    else kc.loadFromCluster();
    return new KubeClient(kc, options);
  }

  static fromKubeConfig(kc: KubeConfig, options: ClientOptions): KubeClient {
    return new KubeClient(kc, options);
  }

  /** The same credentials impersonating a user (for RBAC tests); has its own rate limit. */
  forUser(user: string, groups: string[] = []): KubeClient {
    return new KubeClient(this.kubeConfig, this.options, { user, groups });
  }

  /**
   * The same credentials and server with a token bucket of their own, so that one kind of write
   * (e.g. capacity objects) has its own API budget and cannot starve the others.
   */
  withRateLimit(qps: number, burst: number): KubeClient {
    return new KubeClient(this.kubeConfig, { ...this.options, qps, burst }, this.impersonate);
  }

  /** Fetch options with authentication and the shared connection pool, for streaming requests. */
  async requestInit(method: string, signal?: AbortSignal): Promise<RequestInit> {
    const now = Date.now();
    if (!this.authCache || now - this.authCache.at > AUTH_CACHE_MS) {
      const opts = await this.kubeConfig.applyToFetchOptions({ method: 'GET' });
      const headers: Record<string, string[]> = {};
      new Headers(opts.headers).forEach((v, k) => {
        (headers[k] ??= []).push(v);
      });
      this.authCache = { at: now, headers };
    }
    const headers = new Headers();
    for (const [k, vs] of Object.entries(this.authCache.headers)) for (const v of vs) headers.append(k, v);
    headers.set('Accept', 'application/json');
    headers.set('User-Agent', this.options.userAgent ?? 'topovol-controller-manager');
    if (this.impersonate) {
      headers.set('Impersonate-User', this.impersonate.user);
      for (const g of this.impersonate.groups) headers.append('Impersonate-Group', g);
    }
    this.agent ??= sharedAgent(this.kubeConfig, this.server);
    return { method, headers, agent: await this.agent, signal: signal as RequestInit['signal'] };
  }

  url(path: string, query?: Record<string, QueryValue>): string {
    const u = new URL(this.server + path);
    for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined && v !== '') u.searchParams.set(k, String(v));
    return u.toString();
  }

  /** One rate-limited API call; non-2xx answers throw KubeApiError. */
  async request<T>(method: string, path: string, opts: RequestOptions = {}): Promise<T> {
    const text = await this.requestText(method, path, opts);
    return (text ? JSON.parse(text) : {}) as T;
  }

  /** As request, for endpoints that do not answer JSON (the API server's /metrics): the body as text. */
  async requestText(method: string, path: string, opts: RequestOptions = {}): Promise<string> {
    await this.limiter.wait(opts.signal);
    const timeout = AbortSignal.timeout(this.options.timeoutMs ?? 60_000);
    const signal = opts.signal ? AbortSignal.any([opts.signal, timeout]) : timeout;
    const init = await this.requestInit(method, signal);
    const headers = init.headers as Headers;
    for (const [k, v] of Object.entries(opts.headers ?? {})) headers.set(k, v);
    if (opts.body !== undefined) {
      headers.set('Content-Type', opts.contentType ?? 'application/json');
      init.body = typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
    }
    let res: Response;
    try {
      res = await fetch(this.url(path, opts.query), init);
    } catch (err) {
      // Name the request in transport errors; keep the code so classifyError still works.
      if (timeout.aborted && !opts.signal?.aborted) {
        throw Object.assign(new Error(`${method} ${path}: timed out`), { code: 'ETIMEDOUT' });
      }
      throw err;
    }
    const text = await res.text();
    if (res.status < 200 || res.status >= 300) {
      throw KubeApiError.fromResponse(res.status, text, res.headers.get('retry-after') ?? undefined);
    }
    return text;
  }

  // Resource helpers: typed by the caller, path built from a ResourceType.

  private objectPath(r: ResourceType, name: string, namespace?: string, sub?: string): string {
    if (r.namespaced && !namespace) throw new Error(`${r.kind} ${name}: namespace required`);
    return `${collectionPath(r, namespace)}/${encodeURIComponent(name)}${sub ? `/${sub}` : ''}`;
  }

  get<T extends KubeObject>(r: ResourceType, name: string, namespace?: string, signal?: AbortSignal): Promise<T> {
    return this.request<T>('GET', this.objectPath(r, name, namespace), { signal });
  }

  /** Lists all pages. */
  async list<T extends KubeObject>(r: ResourceType, opts: ListOptions = {}): Promise<ObjectList<T>> {
    const items: T[] = [];
    let cont: string | undefined;
    let rv: string | undefined;
    do {
      const page = await this.request<ObjectList<T>>('GET', collectionPath(r, opts.namespace), {
        query: { labelSelector: opts.labelSelector, fieldSelector: opts.fieldSelector, limit: 500, continue: cont },
        signal: opts.signal,
      });
      items.push(...(page.items ?? []));
      cont = page.metadata?.continue || undefined;
      rv = page.metadata?.resourceVersion;
    } while (cont);
    return { metadata: { resourceVersion: rv }, items };
  }

  create<T extends KubeObject>(r: ResourceType, obj: T, opts: WriteOptions = {}): Promise<T> {
    return this.request<T>('POST', collectionPath(r, obj.metadata?.namespace), {
      body: obj,
      query: writeQuery(opts),
      signal: opts.signal,
    });
  }

  /** PUT with the object's resourceVersion: fails with Conflict if someone else wrote first. */
  replace<T extends KubeObject>(r: ResourceType, obj: T, opts: WriteOptions & { subresource?: 'status' } = {}): Promise<T> {
    const md = obj.metadata ?? {};
    return this.request<T>('PUT', this.objectPath(r, md.name ?? '', md.namespace, opts.subresource), {
      body: obj,
      query: writeQuery(opts),
      signal: opts.signal,
    });
  }

  replaceStatus<T extends KubeObject>(r: ResourceType, obj: T, opts: WriteOptions = {}): Promise<T> {
    return this.replace(r, obj, { ...opts, subresource: 'status' });
  }

  patch<T extends KubeObject>(
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
    await this.request<unknown>('DELETE', this.objectPath(r, name, namespace), {
      body,
      query: { dryRun: opts.dryRun ? 'All' : undefined },
      signal: opts.signal,
    });
  }

  /** Drops every open connection, watches included, as a network failure would. */
  async dropConnections(): Promise<void> {
    const agent = await this.agent;
    agent?.destroy();
    this.agent = undefined;
  }

  /** Closes idle keep-alive connections (lets the process exit promptly). */
  close(): void {
    void this.agent?.then((a) => a.destroy());
  }
}

function writeQuery(opts: WriteOptions): Record<string, QueryValue> {
  return { fieldManager: opts.fieldManager, dryRun: opts.dryRun ? 'All' : undefined };
}

/**
 * One keep-alive agent per client: client-node builds a fresh agent (so a fresh TLS handshake) for
 * every request, which costs more than the request itself on a busy controller.
 */
async function sharedAgent(kc: KubeConfig, server: string): Promise<http.Agent> {
  if (!server.startsWith('https:')) return new http.Agent({ keepAlive: true, maxSockets: 64 });
  const opts: https.RequestOptions = {};
  await kc.applyToHTTPSOptions(opts);
  const agent = opts.agent;
  if (agent instanceof https.Agent) return new https.Agent({ ...agent.options, keepAlive: true, maxSockets: 64 });
  // A proxy agent: use it as client-node would.
  return agent instanceof http.Agent ? agent : new https.Agent({ keepAlive: true, maxSockets: 64 });
}

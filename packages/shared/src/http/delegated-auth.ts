import { createHash } from 'node:crypto';
import { counter } from '../metrics/registry.js';
import { errorMessage, logger } from '../logging/logger.js';

/** Who a token belongs to, as a TokenReview's status.user says (and a SubjectAccessReview's spec takes). */
export interface UserInfo {
  username: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

export type TokenVerdict = { authenticated: true; user: UserInfo } | { authenticated: false; reason: string };
export interface AccessVerdict {
  allowed: boolean;
  reason: string;
}

/** The two reviews a delegated authenticator and authorizer ask of the API server. */
export interface AuthReviews {
  reviewToken(token: string): Promise<TokenVerdict>;
  /** May `user` do `verb` on the non-resource `path`? */
  reviewAccess(user: UserInfo, path: string, verb: string): Promise<AccessVerdict>;
}

/** What a request to a guarded endpoint gets: go on, or this status and text. */
export type AuthAnswer = { status: 200; user: string } | { status: 403; user: string; message: string } | { status: 401 | 500; message: string };

export interface DelegatedAuthOptions {
  /** How long a token's review is reused; kube-controller-manager's --authentication-token-webhook-cache-ttl is 10 s. */
  tokenTtlMs?: number;
  /** How long an access review is reused, allowed or not; its --authorization-webhook-cache-*-ttl are 10 s. */
  accessTtlMs?: number;
  /** Entries kept per cache: anyone who reaches the port may send tokens, and memory is not theirs to spend. */
  maxEntries?: number;
  now?: () => number;
}

const authTotal = counter<'result'>({
  name: 'topovol_metrics_auth_total',
  help: 'Requests to the secure /metrics endpoint (--metrics-secure) by outcome: allowed, unauthenticated (no token, or the TokenReview did not authenticate it), forbidden (the SubjectAccessReview did not allow get on the path), error (a review could not be made).',
  labelNames: ['result'],
});

/**
 * The bearer token of an Authorization header, as kube-apiserver's bearer-token authenticator
 * reads it: two fields, the scheme "Bearer" in any case, a non-empty token.
 */
export function bearerToken(header: string | undefined): string | undefined {
  const fields = (header ?? '').trim().split(/\s+/);
  if (fields.length !== 2 || fields[0]!.toLowerCase() !== 'bearer' || !fields[1]) return undefined;
  return fields[1];
}

/**
 * Authentication and authorization delegated to the API server, for the metrics endpoint: what
 * kube-controller-manager does on its secure port (`--authentication-kubeconfig`,
 * `--authorization-kubeconfig`, k8s.io/apiserver's DelegatingAuthenticationOptions) and
 * controller-runtime's `filters.WithAuthenticationAndAuthorization`. A token is sent in a
 * TokenReview; the user it names in a SubjectAccessReview for the request's non-resource path and
 * verb (`get` on `/metrics`: the `topovol-metrics-reader` ClusterRole). Verdicts, both ways, are
 * reused for a short TTL, so a scrape every few seconds costs two reviews per TTL, and a revoked
 * binding stops a reader within one. Errors are never reused.
 */
export class DelegatedAuth {
  private readonly tokens: TtlCache<TokenVerdict>;
  private readonly access: TtlCache<AccessVerdict>;
  private readonly log = logger().child({ component: 'metrics-auth' });
  /** When each refusal was last logged (by status, and user for a 403): once a minute each, a scraper misconfigured every 15 s would fill the log otherwise. */
  private readonly lastLogged: TtlCache<true>;

  constructor(
    private readonly reviews: AuthReviews,
    o: DelegatedAuthOptions = {},
  ) {
    const now = o.now ?? Date.now;
    const max = o.maxEntries ?? 1024;
    this.tokens = new TtlCache(o.tokenTtlMs ?? 10_000, max, now);
    this.access = new TtlCache(o.accessTtlMs ?? 10_000, max, now);
    this.lastLogged = new TtlCache(60_000, max, now);
  }

  async check(authorization: string | undefined, path: string, verb: string): Promise<AuthAnswer> {
    const answer = await this.decide(authorization, path, verb);
    const result = answer.status === 200 ? 'allowed' : answer.status === 401 ? 'unauthenticated' : answer.status === 403 ? 'forbidden' : 'error';
    authTotal.inc({ result });
    if (answer.status !== 200) this.logRefusal(answer);
    return answer;
  }

  private async decide(authorization: string | undefined, path: string, verb: string): Promise<AuthAnswer> {
    const token = bearerToken(authorization);
    if (!token) return { status: 401, message: 'Unauthorized: a bearer token is required (Authorization: Bearer <token>)' };
    let who: TokenVerdict;
    try {
      who = await this.tokens.getOrLoad(sha256(token), () => this.reviews.reviewToken(token));
    } catch (err) {
      // As kube-apiserver's authentication filter: a review that fails is a 401, never a pass.
      return { status: 401, message: `Unauthorized: the token could not be reviewed: ${errorMessage(err)}` };
    }
    if (!who.authenticated) return { status: 401, message: `Unauthorized${who.reason ? `: ${who.reason}` : ''}` };
    let may: AccessVerdict;
    try {
      may = await this.access.getOrLoad(JSON.stringify([who.user, path, verb]), () => this.reviews.reviewAccess(who.user, path, verb));
    } catch (err) {
      return { status: 500, message: `Internal Server Error: the access review could not be made: ${errorMessage(err)}` };
    }
    if (!may.allowed) {
      const reason = may.reason ? `: ${may.reason}` : '';
      return { status: 403, user: who.user.username, message: `Forbidden: User "${who.user.username}" cannot ${verb} path "${path}"${reason}` };
    }
    return { status: 200, user: who.user.username };
  }

  private logRefusal(answer: Exclude<AuthAnswer, { status: 200 }>): void {
    // Keyed by status and, for a 403, the user the API server named: not by message, whose text a
    // sender of made-up tokens may vary (the TokenReview's error).
    const key = answer.status === 403 ? `403 ${answer.user}` : String(answer.status);
    if (this.lastLogged.peek(key)) return;
    this.lastLogged.set(key, true);
    this.log.info('metrics request refused', { code: answer.status, reason: answer.message });
  }
}

function sha256(s: string): string {
  return createHash('sha256').update(s).digest('hex');
}

/**
 * A map whose entries expire after ttlMs and which keeps at most max of them (the oldest go first);
 * concurrent loads of one key share one call. A failed load is not kept.
 */
export class TtlCache<V> {
  private readonly entries = new Map<string, { value: V; expires: number }>();
  private readonly loading = new Map<string, Promise<V>>();

  constructor(
    private readonly ttlMs: number,
    private readonly max: number,
    private readonly now: () => number,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  peek(key: string): V | undefined {
    const e = this.entries.get(key);
    if (!e) return undefined;
    if (e.expires > this.now()) return e.value;
    this.entries.delete(key);
    return undefined;
  }

  set(key: string, value: V): void {
    this.entries.delete(key);
    while (this.entries.size >= this.max) this.entries.delete(this.entries.keys().next().value as string);
    this.entries.set(key, { value, expires: this.now() + this.ttlMs });
  }

  async getOrLoad(key: string, load: () => Promise<V>): Promise<V> {
    const hit = this.peek(key);
    if (hit !== undefined) return hit;
    let pending = this.loading.get(key);
    if (!pending) {
      // Distinct keys at once (a flood of made-up tokens) wait on the API server, not in memory.
      if (this.loading.size >= this.max) throw new Error(`${this.loading.size} reviews already in flight`);
      pending = load().then((v) => {
        this.set(key, v);
        return v;
      });
      const forget = (): void => void this.loading.delete(key);
      pending.then(forget, forget);
      this.loading.set(key, pending);
    }
    return pending;
  }
}

import { createHash } from 'node:crypto';
import { counter } from '../metrics/registry.js';
import { errorMessage, logger } from '../logging/logger.js';
import { TtlCache } from './ttl-cache.js';

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

/**
 * What a request to a guarded endpoint gets: go on, or this status and text. `detail` is for the
 * log only: an unauthenticated caller gets a bare "Unauthorized", as from kube-apiserver (the
 * review's error may name the manager's own identity or the API server's address).
 */
export type AuthAnswer = { status: 200; user: string } | { status: 403; user: string; message: string } | { status: 401 | 500; message: string; detail: string; error: boolean };

export interface DelegatedAuthOptions {
  /** How long a token's review is reused; kube-controller-manager's --authentication-token-webhook-cache-ttl is 10 s. */
  tokenTtlMs?: number;
  /** How long an access review is reused, allowed or not; its --authorization-webhook-cache-*-ttl are 10 s. */
  accessTtlMs?: number;
  /** Entries kept per cache: anyone who reaches the port may send tokens, and memory is not theirs to spend. */
  maxEntries?: number;
  /**
   * Reviews waiting at once, per cache. About what the review client can answer within a review's
   * timeout: more would only wait to time out, and a flood of made-up tokens would hold the
   * reader's own review back longer.
   */
  maxInFlight?: number;
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
    const inFlight = o.maxInFlight ?? max;
    this.tokens = new TtlCache(o.tokenTtlMs ?? 10_000, max, now, inFlight);
    this.access = new TtlCache(o.accessTtlMs ?? 10_000, max, now, inFlight);
    this.lastLogged = new TtlCache(60_000, max, now);
  }

  async check(authorization: string | undefined, path: string, verb: string): Promise<AuthAnswer> {
    const answer = await this.decide(authorization, path, verb);
    const result = answer.status === 200 ? 'allowed' : answer.status === 403 ? 'forbidden' : answer.error ? 'error' : 'unauthenticated';
    authTotal.inc({ result });
    if (answer.status !== 200) this.logRefusal(answer);
    return answer;
  }

  private async decide(authorization: string | undefined, path: string, verb: string): Promise<AuthAnswer> {
    const token = bearerToken(authorization);
    if (!token) return unauthorized('no bearer token', false);
    let who: TokenVerdict;
    try {
      who = await this.tokens.getOrLoad(sha256(token), () => this.reviews.reviewToken(token));
    } catch (err) {
      // As kube-apiserver's authentication filter: a review that fails is a 401, never a pass.
      return unauthorized(`the token could not be reviewed: ${errorMessage(err)}`, true);
    }
    if (!who.authenticated) return unauthorized(who.reason || 'the token was not authenticated', false);
    let may: AccessVerdict;
    try {
      may = await this.access.getOrLoad(JSON.stringify([who.user, path, verb]), () => this.reviews.reviewAccess(who.user, path, verb));
    } catch (err) {
      return { status: 500, message: 'Internal Server Error', detail: `the access review could not be made: ${errorMessage(err)}`, error: true };
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
    this.log.info('metrics request refused', { code: answer.status, reason: answer.status === 403 ? answer.message : answer.detail });
  }
}

function unauthorized(detail: string, error: boolean): AuthAnswer {
  return { status: 401, message: 'Unauthorized', detail, error };
}

function sha256(s: string): string {
  return createHash('sha256').update(s).digest('hex');
}

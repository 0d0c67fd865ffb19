import type { KubeClient } from '../client/kube-client.js';
import type { AccessVerdict, AuthReviews, TokenVerdict, UserInfo } from './delegated-auth.js';

/** How long one review may take, the client's rate limiter included (a scrape's own timeout is about this). */
export const REVIEW_TIMEOUT_MS = 10_000;

interface TokenReviewStatus {
  authenticated?: boolean;
  user?: { username?: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> };
  error?: string;
}

interface SubjectAccessReviewStatus {
  allowed?: boolean;
  denied?: boolean;
  reason?: string;
  evaluationError?: string;
}

/**
 * TokenReview and SubjectAccessReview through `client` (the manager's identity needs
 * `system:auth-delegator`, bound to each ServiceAccount by config/rbac). A client of its own,
 * so that scrapes, or anyone sending tokens to the port, never wait in the loops' rate limiter
 * nor hold their writes back.
 */
export function kubeAuthReviews(client: KubeClient): AuthReviews {
  return {
    async reviewToken(token: string): Promise<TokenVerdict> {
      const review = await client.request<{ status?: TokenReviewStatus }>('POST', '/apis/authentication.k8s.io/v1/tokenreviews', {
        body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token } },
        signal: AbortSignal.timeout(REVIEW_TIMEOUT_MS),
      });
      const s = review.status ?? {};
      if (!s.authenticated || !s.user?.username) return { authenticated: false, reason: s.error ?? 'the token was not authenticated' };
      const user: UserInfo = { username: s.user.username };
      if (s.user.uid) user.uid = s.user.uid;
      if (s.user.groups?.length) user.groups = s.user.groups;
      if (s.user.extra && Object.keys(s.user.extra).length) user.extra = s.user.extra;
      return { authenticated: true, user };
    },
    async reviewAccess(user: UserInfo, path: string, verb: string): Promise<AccessVerdict> {
      const review = await client.request<{ status?: SubjectAccessReviewStatus }>('POST', '/apis/authorization.k8s.io/v1/subjectaccessreviews', {
        body: { apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview', spec: { user: user.username, uid: user.uid, groups: user.groups, extra: user.extra, nonResourceAttributes: { path, verb } } },
        signal: AbortSignal.timeout(REVIEW_TIMEOUT_MS),
      });
      const s = review.status ?? {};
      return { allowed: s.allowed === true && s.denied !== true, reason: s.reason ?? s.evaluationError ?? '' };
    },
  };
}

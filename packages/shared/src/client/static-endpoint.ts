import { readFileSync } from 'node:fs';
import type http from 'node:http';
import type { ApiEndpoint } from './endpoint.js';
import { keepAliveAgent } from './keep-alive-agent.js';

/** What a kubeconfig's cluster and user resolve to when no plugin is involved. */
export interface StaticEndpointOptions {
  server: string;
  /** PEM bundle the server's certificate must chain to; the system's roots when unset. */
  ca?: Buffer;
  /** kubeconfig `insecure-skip-tls-verify`. */
  insecureSkipTLSVerify?: boolean;
  /** kubeconfig `tls-server-name`: the name checked against the server's certificate. */
  tlsServerName?: string;
  /** Client certificate and key (PEM). */
  cert?: Buffer;
  key?: Buffer;
  /** A bearer token. */
  token?: string;
  /**
   * A file holding a bearer token, re-read once a minute (client-go's cached file token source,
   * what a projected ServiceAccount token needs: the kubelet rotates it in place).
   */
  tokenFile?: string;
  /** HTTP basic authentication. */
  username?: string;
  password?: string;
  /** kubeconfig `as` / `as-groups`: impersonation requested by the kubeconfig itself. */
  impersonateUser?: string;
  impersonateGroups?: string[];
}

const TOKEN_FILE_REREAD_MS = 60_000;

/**
 * An endpoint from plain data: TLS material and a token, token file or basic credentials. The
 * common case (in-cluster ServiceAccount, a kubeconfig with certificates or a token) goes through
 * here without loading @kubernetes/client-node (docs/adr/0012-kubeconfig-without-client-node.md).
 */
export class StaticEndpoint implements ApiEndpoint {
  readonly server: string;
  private fileToken?: { at: number; token: string };
  private auth?: { token: string | undefined; headers: Readonly<Record<string, string | string[]>> };

  constructor(
    private readonly options: StaticEndpointOptions,
    private readonly now: () => number = Date.now,
  ) {
    this.server = options.server.replace(/\/+$/, '');
  }

  agent(): Promise<http.Agent> {
    return Promise.resolve(this.buildAgent());
  }

  private buildAgent(): http.Agent {
    const o = this.options;
    return keepAliveAgent(this.server, {
      ca: o.ca,
      cert: o.cert,
      key: o.key,
      rejectUnauthorized: !o.insecureSkipTLSVerify,
      servername: o.tlsServerName,
    });
  }

  authHeaders(): Promise<Readonly<Record<string, string | string[]>>> {
    const o = this.options;
    const token = o.token || (o.tokenFile ? this.readTokenFile(o.tokenFile) : undefined);
    // The same object while the token is the same: the client reuses headers built on it.
    if (!this.auth || this.auth.token !== token) this.auth = { token, headers: this.buildAuthHeaders(token) };
    return Promise.resolve(this.auth.headers);
  }

  private buildAuthHeaders(token: string | undefined): Readonly<Record<string, string | string[]>> {
    const o = this.options;
    const headers: Record<string, string | string[]> = {};
    if (token) headers.Authorization = `Bearer ${token}`;
    else if (o.username !== undefined) {
      headers.Authorization = `Basic ${Buffer.from(`${o.username}:${o.password ?? ''}`).toString('base64')}`;
    }
    if (o.impersonateUser) headers['Impersonate-User'] = o.impersonateUser;
    if (o.impersonateGroups?.length) headers['Impersonate-Group'] = [...o.impersonateGroups];
    return Object.freeze(headers);
  }

  private readTokenFile(file: string): string {
    const now = this.now();
    if (!this.fileToken || now - this.fileToken.at >= TOKEN_FILE_REREAD_MS) {
      try {
        this.fileToken = { at: now, token: readFileSync(file, 'utf8').trim() };
      } catch (err) {
        // Mid-rotation the file can be briefly missing: keep the last token, as client-go does.
        if (!this.fileToken) throw err;
        this.fileToken = { at: now, token: this.fileToken.token };
      }
    }
    return this.fileToken.token;
  }
}

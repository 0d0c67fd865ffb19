import http from 'node:http';
import https from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';
import type { ApiEndpoint } from './endpoint.js';
import { keepAliveAgent } from './keep-alive-agent.js';
import { MAX_SOCKETS } from './endpoint.js';

const AUTH_CACHE_MS = 10_000;

/**
 * An endpoint whose credentials @kubernetes/client-node resolves: exec plugins, auth-provider
 * plugins and proxies, which Topovol does not reimplement. The library is imported on first use,
 * so a manager whose kubeconfig needs none of these never pays its start-up cost.
 */
export class ClientNodeEndpoint implements ApiEndpoint {
  private authCache?: { at: number; headers: Record<string, string | string[]> };
  private config?: Promise<KubeConfig>;

  private constructor(
    readonly server: string,
    private readonly load: () => Promise<KubeConfig>,
  ) {}

  /** A kubeconfig file, loaded by client-node when first needed. */
  static fromFile(file: string, server: string): ClientNodeEndpoint {
    return new ClientNodeEndpoint(server.replace(/\/+$/, ''), async () => {
      const { KubeConfig } = await import('@kubernetes/client-node');
      const kc = new KubeConfig();
      kc.loadFromFile(file);
      return kc;
    });
  }

  /** A KubeConfig the caller built (tests that already hold one). */
  static fromKubeConfig(kc: KubeConfig): ClientNodeEndpoint {
    const cluster = kc.getCurrentCluster();
    if (!cluster) throw new Error('kubeconfig has no current cluster');
    return new ClientNodeEndpoint(cluster.server.replace(/\/+$/, ''), () => Promise.resolve(kc));
  }

  private kubeConfig(): Promise<KubeConfig> {
    this.config ??= this.load();
    return this.config;
  }

  async agent(): Promise<http.Agent> {
    const kc = await this.kubeConfig();
    // A cluster's proxy-url: client-node's agent goes through the proxy (hpagent's, which extends
    // https.Agent, or a SOCKS one), and requests go through Node's http with it, as client-node
    // sends them; neither the keep-alive agent nor the direct transport would use the proxy.
    if (kc.getCurrentCluster()?.proxyUrl) {
      const opts: https.RequestOptions = {};
      await kc.applyToHTTPSOptions(opts);
      if (opts.agent instanceof http.Agent) {
        // client-node builds it without keep-alive (a CONNECT and a handshake per request) and without
        // a cap: both are read per request, so they are set here as the keep-alive agent has them.
        const agent = opts.agent as http.Agent & { keepAlive?: boolean };
        agent.keepAlive = true;
        agent.maxSockets = MAX_SOCKETS;
        return agent;
      }
      throw new Error(`kubeconfig proxy-url ${kc.getCurrentCluster()?.proxyUrl ?? ''}: client-node built no agent for it`);
    }
    if (!this.server.startsWith('https:')) return keepAliveAgent(this.server);
    const opts: https.RequestOptions = {};
    await kc.applyToHTTPSOptions(opts);
    const agent = opts.agent;
    // client-node builds a fresh agent per call (a TLS handshake per request): keep one alive.
    if (agent instanceof https.Agent) return keepAliveAgent(this.server, agent.options);
    return agent instanceof http.Agent ? agent : keepAliveAgent(this.server);
  }

  async authHeaders(): Promise<Readonly<Record<string, string | string[]>>> {
    const now = Date.now();
    if (!this.authCache || now - this.authCache.at > AUTH_CACHE_MS) {
      const opts: https.RequestOptions = { method: 'GET' };
      await (await this.kubeConfig()).applyToHTTPSOptions(opts);
      const headers: Record<string, string | string[]> = {};
      for (const [k, v] of Object.entries(opts.headers ?? {})) {
        if (Array.isArray(v)) headers[k] = v.map(String);
        else if (v !== undefined) headers[k] = String(v);
      }
      if (opts.auth) headers.Authorization = `Basic ${Buffer.from(opts.auth).toString('base64')}`;
      this.authCache = { at: now, headers };
    }
    return this.authCache.headers;
  }
}

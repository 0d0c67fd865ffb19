import http from 'node:http';
import https from 'node:https';
import { MAX_SOCKETS } from './endpoint.js';
import { DirectPool } from './direct-pool.js';
import type { PoolTarget } from './direct-pool.js';


/** The fields of a request's options that Node's pool key reads and a request of ours can vary. */
function poolKey(o: http.ClientRequestArgs & { servername?: string }): string {
  return `${o.host ?? o.hostname ?? ''}:${o.port ?? ''}:${o.localAddress ?? ''}:${o.family ?? ''}:${o.socketPath ?? ''}:${o.servername ?? ''}`;
}

/**
 * Node's https.Agent names its connection pool per request by concatenating the request's host and
 * every TLS option, the CA, certificate and key PEMs included, and does so again when a socket is
 * freed (lib/https.js, getName). With a client certificate that is a string of several KiB built and
 * looked up as an object key two or three times per request: about a fifth of a PUT's client CPU
 * on this project's bench (hack/bench/README.md, "Profiling"). The TLS options are the agent's own
 * and our requests never carry any (the agent's options win when Node merges them), so the name
 * depends only on the fields poolKey reads: it is computed once per distinct value and reused.
 */
class NamedOnceHttpsAgent extends https.Agent {
  private readonly names = new Map<string, string>();

  override destroy(): void {
    super.destroy();
    directPools.get(this)?.destroy();
  }

  override getName(options?: https.RequestOptions): string {
    const key = poolKey(options ?? {});
    let name = this.names.get(key);
    if (name === undefined) {
      name = super.getName(options);
      this.names.set(key, name);
    }
    return name;
  }
}

class DirectCapableHttpAgent extends http.Agent {
  override destroy(): void {
    super.destroy();
    directPools.get(this)?.destroy();
  }
}

/** The direct transport's connections that go with an agent of ours: same server, same TLS material. */
const directPools = new WeakMap<http.Agent, DirectPool>();

/**
 * The direct transport's pool for requests that would go through `agent` (direct-transport.ts), or
 * undefined for an agent this module did not build (a proxy's, a test's): those go through Node's
 * http module.
 */
export function directPoolOf(agent: http.Agent): DirectPool | undefined {
  return directPools.get(agent);
}

/**
 * One keep-alive pool per client, with the TLS material of a kubeconfig's cluster and user: informer
 * watches (Node's http, through the agent) plus the loops' requests (the direct transport's
 * connections with the same material), each up to MAX_SOCKETS.
 */
export function keepAliveAgent(server: string, tls: https.AgentOptions = {}): http.Agent {
  const u = new URL(server);
  const host = u.hostname.startsWith('[') ? u.hostname.slice(1, -1) : u.hostname;
  if (u.protocol === 'http:') {
    const agent = new DirectCapableHttpAgent({ keepAlive: true, maxSockets: MAX_SOCKETS });
    directPools.set(agent, new DirectPool({ host, port: Number(u.port || 80) }, MAX_SOCKETS));
    return agent;
  }
  const agent = new NamedOnceHttpsAgent({ ...tls, keepAlive: true, maxSockets: MAX_SOCKETS });
  const target: PoolTarget = { host, port: Number(u.port || 443), tls: tlsConnectionOptions(tls) };
  directPools.set(agent, new DirectPool(target, MAX_SOCKETS));
  return agent;
}

/** The agent's TLS options as tls.connect takes them, without the agent's own pool settings. */
function tlsConnectionOptions(o: https.AgentOptions): PoolTarget['tls'] {
  const { keepAlive: _k, keepAliveMsecs: _m, maxSockets: _s, maxTotalSockets: _t, maxFreeSockets: _f, scheduling: _c, timeout: _o, ...rest } = o;
  return rest;
}

import http from 'node:http';
import https from 'node:https';
import { MAX_SOCKETS } from './endpoint.js';


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

/** One keep-alive pool per client, with the TLS material of a kubeconfig's cluster and user: informer watches plus the loops' workers (MAX_SOCKETS). */
export function keepAliveAgent(server: string, tls: https.AgentOptions = {}): http.Agent {
  if (server.startsWith('http:')) return new http.Agent({ keepAlive: true, maxSockets: MAX_SOCKETS });
  return new NamedOnceHttpsAgent({ ...tls, keepAlive: true, maxSockets: MAX_SOCKETS });
}

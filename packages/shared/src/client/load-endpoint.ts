import { existsSync, readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { load as parseYaml } from 'js-yaml';
import type { ApiEndpoint } from './endpoint.js';
import { ClientNodeEndpoint } from './client-node-endpoint.js';
import { StaticEndpoint } from './static-endpoint.js';

/** Where a pod's ServiceAccount credentials are mounted (client-go's rest.InClusterConfig). */
export const SERVICEACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

type Yaml = Record<string, unknown>;

const isObject = (v: unknown): v is Yaml => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

function named(list: unknown, name: string, kind: 'cluster' | 'user' | 'context'): Yaml {
  const entry = (Array.isArray(list) ? list : []).find((e): e is Yaml => isObject(e) && e.name === name);
  if (!entry) throw new Error(`kubeconfig has no ${kind} named "${name}"`);
  const body = entry[kind];
  return isObject(body) ? body : {};
}

/** A file path relative to the kubeconfig's directory, as kubectl and client-go resolve it. */
const resolveFrom = (dir: string, file: string | undefined): string | undefined => (file ? path.resolve(dir, file) : undefined);

function pem(dir: string, file: unknown, data: unknown): Buffer | undefined {
  const f = resolveFrom(dir, str(file));
  if (f) return readFileSync(f);
  const d = str(data);
  return d ? Buffer.from(d, 'base64') : undefined;
}

/**
 * Reads a kubeconfig file's current context. Certificates, tokens, token files, basic credentials
 * and `as`/`as-groups` are handled here; a user with an `exec` or `auth-provider` plugin, or a
 * cluster behind `proxy-url`, is handed to @kubernetes/client-node, which implements those.
 */
export function endpointFromKubeconfig(file: string, context?: string): ApiEndpoint {
  const doc = parseYaml(readFileSync(file, 'utf8'));
  if (!isObject(doc)) throw new Error(`${file}: not a kubeconfig`);
  const contextName = context ?? str(doc['current-context']);
  if (!contextName) throw new Error(`${file}: no current-context`);
  const ctx = named(doc.contexts, contextName, 'context');
  const clusterName = str(ctx.cluster);
  if (!clusterName) throw new Error(`${file}: context "${contextName}" names no cluster`);
  const cluster = named(doc.clusters, clusterName, 'cluster');
  const server = str(cluster.server);
  if (!server) throw new Error(`${file}: cluster "${clusterName}" has no server`);
  const userName = str(ctx.user);
  const user = userName ? named(doc.users, userName, 'user') : {};

  if (user.exec !== undefined || user['auth-provider'] !== undefined || str(cluster['proxy-url'])) {
    return ClientNodeEndpoint.fromFile(file, server);
  }
  const dir = path.dirname(path.resolve(file));
  const groups = Array.isArray(user['as-groups']) ? user['as-groups'].filter((g): g is string => typeof g === 'string') : [];
  return new StaticEndpoint({
    server,
    ca: pem(dir, cluster['certificate-authority'], cluster['certificate-authority-data']),
    insecureSkipTLSVerify: cluster['insecure-skip-tls-verify'] === true,
    tlsServerName: str(cluster['tls-server-name']),
    cert: pem(dir, user['client-certificate'], user['client-certificate-data']),
    key: pem(dir, user['client-key'], user['client-key-data']),
    token: str(user.token),
    // client-go spells it tokenFile; client-node reads token-file.
    tokenFile: resolveFrom(dir, str(user.tokenFile) ?? str(user['token-file'])),
    username: str(user.username),
    password: typeof user.password === 'string' ? user.password : undefined,
    impersonateUser: str(user.as),
    impersonateGroups: groups,
  });
}

/**
 * The pod's own ServiceAccount: $KUBERNETES_SERVICE_HOST/PORT, the mounted CA and the mounted
 * (rotating) token, as client-go's rest.InClusterConfig.
 */
export function inClusterEndpoint(env: NodeJS.ProcessEnv = process.env, dir = SERVICEACCOUNT_DIR): ApiEndpoint {
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT;
  if (!host || !port) {
    throw new Error('unable to load in-cluster configuration, KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be defined');
  }
  const tokenFile = path.join(dir, 'token');
  if (!existsSync(tokenFile)) throw new Error(`unable to load in-cluster configuration: ${tokenFile} does not exist`);
  const caFile = path.join(dir, 'ca.crt');
  return new StaticEndpoint({
    server: `https://${net.isIPv6(host) ? `[${host}]` : host}:${port}`,
    ca: existsSync(caFile) ? readFileSync(caFile) : undefined,
    tokenFile,
  });
}

/** --kubeconfig, else $KUBECONFIG, else the in-cluster configuration (as kube-controller-manager). */
export function loadEndpoint(kubeconfig: string | undefined, env: NodeJS.ProcessEnv = process.env): ApiEndpoint {
  const file = kubeconfig || env.KUBECONFIG;
  return file ? endpointFromKubeconfig(file) : inClusterEndpoint(env);
}

import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Resources } from '@topovol/shared';
import type { KubeClient, Lease } from '@topovol/shared';
import { CLOCK_SKEW_PRELOAD, controllerKubeconfig, INSTALL_NAMESPACE, sharedControlPlane, startManagerBinary } from '@topovol/testing';
import type { ControlPlane, ManagedProcess } from '@topovol/testing';

export { CHAOS_SCALE, recordChaosResult } from '@topovol/testing';

export const BINDER_LEASE = 'topovol-pv-binder';

/**
 * Short election timings keep failover scenarios quick: a lease of ELECTION_LEASE_S, a renew
 * deadline of 6 s, retries every second. Not shorter: a leader whose renewal a loaded machine holds
 * up past the renew deadline steps down in the middle of a scenario that needs it to lead.
 */
export const ELECTION_LEASE_S = 8;
const ELECTION_RENEW_DEADLINE_S = 6;
export const ELECTION_FLAGS = ['--leader-elect=true', `--leader-elect-namespace=${INSTALL_NAMESPACE}`, `--leader-elect-lease-duration=${ELECTION_LEASE_S}s`, `--leader-elect-renew-deadline=${ELECTION_RENEW_DEADLINE_S}s`, '--leader-elect-retry-period=1s'];

export interface BinderManagerOptions {
  /** Defaults to the pv-binder ServiceAccount's kubeconfig (the generated RBAC). */
  kubeconfig?: string;
  leaderElect?: boolean;
  env?: NodeJS.ProcessEnv;
  nodeArgs?: readonly string[];
  /** Resolve once started rather than once ready (a standby is ready too, but a cold start takes time). */
  readyTimeoutMs?: number;
  /** Defaults to the shared control plane. */
  controlPlane?: ControlPlane;
  /** false: resolve once spawned (a process armed with a failpoint may die before /readyz is probed). */
  waitUntilReady?: boolean;
}

/** The pv-binder workers of every manager startBinderManager starts. */
export const BINDER_WORKERS = 8;

/** The real manager binary running only the pv-binder loop, as its own ServiceAccount. */
export async function startBinderManager(name: string, o: BinderManagerOptions = {}): Promise<ManagedProcess> {
  const cp = o.controlPlane ?? (await sharedControlPlane());
  return startManagerBinary({
    name,
    kubeconfig: o.kubeconfig ?? (await controllerKubeconfig('pv-binder', cp)),
    args: ['--controllers=pv-binder', `--concurrent-pv-binder-syncs=${BINDER_WORKERS}`, '--log-format=json', ...(o.leaderElect === false ? ['--leader-elect=false'] : ELECTION_FLAGS)],
    logFile: path.join(cp.dir, `${name}.log`),
    ...(o.env ? { env: o.env } : {}),
    ...(o.nodeArgs ? { nodeArgs: o.nodeArgs } : {}),
    readyTimeoutMs: o.readyTimeoutMs ?? 60_000,
    ...(o.waitUntilReady === false ? { waitUntilReady: false } : {}),
  });
}

/** The leader-election identity a manager logged at start. */
export function identityOf(proc: ManagedProcess): string {
  for (const line of readFileSync(proc.logFile, 'utf8').split('\n')) {
    if (!line.includes('"controller-manager starting"')) continue;
    const identity = (JSON.parse(line) as { identity?: string }).identity;
    if (identity) return identity;
  }
  throw new Error(`${proc.name} logged no identity:\n${proc.logTail(10)}`);
}

export async function binderLease(admin: KubeClient): Promise<Lease | undefined> {
  return admin.get<Lease>(Resources.leases, BINDER_LEASE, INSTALL_NAMESPACE).catch(() => undefined);
}

/** Removes the lease a killed manager left, so the next scenario does not wait for it to expire. */
export async function deleteBinderLease(admin: KubeClient): Promise<void> {
  await admin.delete(Resources.leases, BINDER_LEASE, INSTALL_NAMESPACE).catch(() => undefined);
}

/** The pv-binder ServiceAccount's kubeconfig, pointed at `server` (a fault proxy on plain HTTP). */
export async function kubeconfigVia(server: string, name: string): Promise<string> {
  const text = readFileSync(await controllerKubeconfig('pv-binder'), 'utf8')
    .replace(/^(\s+server: ).*$/m, `$1${server}`)
    .replace(/^(\s+)certificate-authority-data: .*$/m, '$1insecure-skip-tls-verify: true');
  const file = path.join((await sharedControlPlane()).dir, `${name}.kubeconfig`);
  writeFileSync(file, text, { mode: 0o600 });
  return file;
}

/** `node --import` of the clock preload (packages/testing/src/clock-skew-preload.ts). */
export const CLOCK_PRELOAD = CLOCK_SKEW_PRELOAD;

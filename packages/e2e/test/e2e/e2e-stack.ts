// The one storage stack every scenario of the suite runs on: started on first use, stopped by the
// mocha global teardown (.mocharc.e2e.json requires this file), whatever the outcome.
import { GiB } from '@topovol/testing/csi-test-driver';
import { REGION, StorageStack, TOPOVOL_LOOPS, ZONE } from '@topovol/testing';
import type { TopovolLoop } from '@topovol/testing';

export const DRIVER = 'e2e.csi.topovol.dev';
/** The driver's node topology key: each node's storage is its own segment, as for LVM or local disks. */
export const NODE_KEY = 'topology.e2e.csi.topovol.dev/node';
export const NODE_1 = 'e2e-node-1';
export const NODE_2 = 'e2e-node-2';
export const NODE_3 = 'e2e-node-3';
export const NODES = [NODE_1, NODE_2, NODE_3] as const;
/** Node 1 is alone in zone-a; nodes 2 and 3 are in zone-b (the zonal scenario needs both kinds). */
export const ZONE_OF: Record<string, string> = { [NODE_1]: 'zone-a', [NODE_2]: 'zone-b', [NODE_3]: 'zone-b' };
export const REGION_NAME = 'region-1';

/**
 * TOPOVOL_E2E_LOOPS_OFF=pv-binder,capacity,... leaves those loops out, to show which scenarios
 * fail without them (the suite's README records the result).
 */
export function loopsOff(): TopovolLoop[] {
  const names = (process.env.TOPOVOL_E2E_LOOPS_OFF ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  for (const n of names) if (!TOPOVOL_LOOPS.includes(n as TopovolLoop)) throw new Error(`TOPOVOL_E2E_LOOPS_OFF: unknown loop "${n}" (known: ${TOPOVOL_LOOPS.join(', ')})`);
  return names as TopovolLoop[];
}

let stack: Promise<StorageStack> | undefined;

export function e2eStack(): Promise<StorageStack> {
  stack ??= StorageStack.start({
    driver: DRIVER,
    topologyKey: NODE_KEY,
    nodes: NODES.map((name) => ({ name, labels: { [ZONE]: ZONE_OF[name]!, [REGION]: REGION_NAME }, capacity: 100n * GiB })),
    loopsOff: loopsOff(),
    // The StatefulSet scenario needs StatefulSet pods and claims from their templates; the
    // statefulset controller creates them and binds no volume (binding stays Topovol's alone).
    extraKcmControllers: ['statefulset-controller'],
    // Capacity is refreshed on volume and provisioning events; the hourly poll keeps the stale figure
    // the kubernetes #94217 story starts from (something outside Kubernetes took the space) until
    // the scheduler has chosen. A one-minute poll (the default) could correct it first.
    perNodeCapacityArgs: ['--capacity-poll-interval=1h'],
    log: (line) => void process.stderr.write(`[e2e] ${line}\n`),
  });
  return stack;
}

export const mochaHooks = {
  /** Topovol ran as its ServiceAccounts with the generated RBAC: nothing it asked for was refused. */
  async afterAll(this: Mocha.Context): Promise<void> {
    if (!stack) return;
    const refused = (await stack).refusals();
    const lines = refused.map((r) => `${r.user} was refused ${r.verb} ${r.group ? `${r.group}/` : ''}${r.resource}${r.name ? ` ${r.name}` : ''}`);
    if (lines.length) throw new Error(`Topovol's loops were refused by RBAC:\n  ${[...new Set(lines)].join('\n  ')}`);
  },
};

export async function mochaGlobalTeardown(): Promise<void> {
  if (!stack) return;
  const s = stack;
  stack = undefined;
  try {
    await (await s).stop();
  } catch {
    // it never started: nothing to stop
  }
}

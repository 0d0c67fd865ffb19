import { readFileSync } from 'node:fs';
import { loadManifests } from './load-manifests.js';

/** The manager container of a config/manager Deployment or DaemonSet, as the kubelet would run it. */
export interface ManagerWorkload {
  kind: string;
  name: string;
  serviceAccountName: string;
  args: string[];
}

interface PodTemplateOwner {
  kind: string;
  metadata?: { name?: string };
  spec?: { template?: { spec?: { serviceAccountName?: string; containers?: { name: string; args?: string[] }[] } } };
}

/** The manager container's args and ServiceAccount of the (only) workload in a config/manager file. */
export function workloadFromFile(file: string): ManagerWorkload {
  const docs = loadManifests(readFileSync(file, 'utf8')) as unknown as PodTemplateOwner[];
  const w = docs.find((d) => d.kind === 'Deployment' || d.kind === 'DaemonSet');
  const pod = w?.spec?.template?.spec;
  const manager = pod?.containers?.find((c) => c.name === 'manager');
  if (!w || !pod?.serviceAccountName || !manager?.args) throw new Error(`${file}: no manager workload`);
  return { kind: w.kind, name: w.metadata?.name ?? '', serviceAccountName: pod.serviceAccountName, args: manager.args };
}

/** The kubelet's $(VAR) expansion of container args from the container's env. */
export function expandKubeletVars(args: string[], env: Record<string, string>): string[] {
  return args.map((a) => a.replace(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (whole, name: string) => env[name] ?? whole));
}

/**
 * A workload's args for a manager process on the test machine: $(VAR)s expanded from `env`, the
 * bind addresses left out (startManagerBinary sets loopback ones: many managers share the machine)
 * and the CSI socket, if given, in place of the pod's /csi/csi.sock.
 */
export function workloadArgsOnTestMachine(w: ManagerWorkload, env: Record<string, string>, csiAddress?: string): string[] {
  return expandKubeletVars(w.args, env)
    .filter((a) => !a.startsWith('--metrics-bind-address=') && !a.startsWith('--health-probe-bind-address='))
    .map((a) => (a.startsWith('--csi-address=') && csiAddress ? `--csi-address=${csiAddress}` : a));
}

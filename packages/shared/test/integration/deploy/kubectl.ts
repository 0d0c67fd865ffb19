import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { loadManifests } from '../../../src/testing/load-manifests.js';
import type { ControlPlane } from '../../../src/testing/index.js';

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the pinned kubectl against the test control plane (admin unless kubeconfig is given). */
export function kubectl(bin: string, cp: ControlPlane, args: string[], cwd: string): Promise<RunResult> {
  return new Promise((resolve) => {
    execFile(bin, [`--kubeconfig=${cp.kubeconfigPath}`, ...args], { cwd, maxBuffer: 16 << 20, timeout: 120_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

/**
 * A copy of the admin kubeconfig that impersonates `user` (kubeconfig `as:`), so a process started
 * with it is authorized as that ServiceAccount alone; the API server adds the ServiceAccount groups.
 */
export function impersonatingKubeconfig(cp: ControlPlane, user: string, file: string): string {
  const text = readFileSync(cp.kubeconfigPath, 'utf8').replace(/^(\s+token: .*)$/m, `$1\n    as: ${user}`);
  if (!text.includes(`as: ${user}`)) throw new Error('cannot add impersonation to the test kubeconfig');
  writeFileSync(path.join(file), text, { mode: 0o600 });
  return file;
}

interface PodTemplateOwner {
  kind: string;
  spec?: { template?: { spec?: { serviceAccountName?: string; containers?: { name: string; args?: string[] }[] } } };
}

/** The manager container's args and ServiceAccount of the (only) workload in a config/manager file. */
export function workloadFromFile(file: string): { kind: string; serviceAccountName: string; args: string[] } {
  const docs = loadManifests(readFileSync(file, 'utf8')) as unknown as PodTemplateOwner[];
  const w = docs.find((d) => d.kind === 'Deployment' || d.kind === 'DaemonSet');
  const pod = w?.spec?.template?.spec;
  const manager = pod?.containers?.find((c) => c.name === 'manager');
  if (!w || !pod?.serviceAccountName || !manager?.args) throw new Error(`${file}: no manager workload`);
  return { kind: w.kind, serviceAccountName: pod.serviceAccountName, args: manager.args };
}

/** The kubelet's $(VAR) expansion of container args from the container's env. */
export function expandKubeletVars(args: string[], env: Record<string, string>): string[] {
  return args.map((a) => a.replace(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (whole, name: string) => env[name] ?? whole));
}

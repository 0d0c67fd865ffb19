import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { ControlPlane } from '@topovol/testing';

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

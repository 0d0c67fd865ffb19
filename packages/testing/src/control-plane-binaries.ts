import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { repoRoot } from './repo-root.js';

const run = promisify(execFile);

export type ControlPlaneComponent = 'etcd' | 'kube-apiserver' | 'kube-scheduler' | 'kube-controller-manager' | 'kubectl';

/**
 * Paths of pinned control-plane binaries, provided by hack/control-plane-binaries.sh: built from
 * the Go module proxy and cached outside the repo, or taken from KUBEBUILDER_ASSETS.
 */
export async function controlPlaneBinaries(
  components: ControlPlaneComponent[],
): Promise<Record<ControlPlaneComponent, string>> {
  const script = path.join(repoRoot(), 'hack', 'control-plane-binaries.sh');
  try {
    const { stdout } = await run('bash', [script, ...components], {
      maxBuffer: 1 << 20,
      // A cold build takes minutes; it prints progress on stderr, which we let through.
      timeout: 45 * 60_000,
    });
    const lines = stdout.trim().split('\n');
    const dir = lines[lines.length - 1] ?? '';
    const out = {} as Record<ControlPlaneComponent, string>;
    for (const c of components) out[c] = path.join(dir, c);
    return out;
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`control-plane binaries unavailable (${components.join(', ')}): ${e.stderr ?? e.message}`);
  }
}

import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { repoRoot } from './repo-root.js';

const run = promisify(execFile);

export type CsiComponent = 'csi-provisioner';

/**
 * Paths of pinned CSI sidecar binaries, provided by hack/csi-binaries.sh: built from the Go module
 * proxy and cached outside the repo, or taken from TOPOVOL_CSI_ASSETS.
 */
export async function csiBinaries(components: CsiComponent[] = ['csi-provisioner']): Promise<Record<CsiComponent, string>> {
  const script = path.join(repoRoot(), 'hack', 'csi-binaries.sh');
  try {
    const { stdout } = await run('bash', [script, ...components], {
      maxBuffer: 1 << 20,
      // A cold build takes minutes (longer while another Go build holds the shared lock).
      timeout: 45 * 60_000,
    });
    const lines = stdout.trim().split('\n');
    const dir = lines[lines.length - 1] ?? '';
    const out = {} as Record<CsiComponent, string>;
    for (const c of components) out[c] = path.join(dir, c);
    return out;
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`CSI binaries unavailable (${components.join(', ')}): ${e.stderr ?? e.message}`);
  }
}

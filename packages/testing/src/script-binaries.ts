import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { repoRoot } from './repo-root.js';

const run = promisify(execFile);

/**
 * Runs a hack/ binary script (it builds from the Go module proxy or takes an override directory,
 * and prints that directory last) and returns each component's path in it.
 */
export async function binariesFromScript<C extends string>(script: string, components: readonly C[], what: string): Promise<Record<C, string>> {
  try {
    const { stdout } = await run('bash', [path.join(repoRoot(), 'hack', script), ...components], {
      maxBuffer: 1 << 20,
      // A cold build takes minutes (longer while another Go build holds the shared lock); it prints
      // progress on stderr, which we let through.
      timeout: 45 * 60_000,
    });
    const lines = stdout.trim().split('\n');
    const dir = lines[lines.length - 1] ?? '';
    const out = {} as Record<C, string>;
    for (const c of components) out[c] = path.join(dir, c);
    return out;
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`${what} unavailable (${components.join(', ')}): ${e.stderr ?? e.message}`);
  }
}

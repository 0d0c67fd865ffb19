import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import { repoRoot } from './repo-root.js';

/** The machine, once: the figures mean little without it. */
export function machineLine(): string {
  const cpus = os.cpus();
  return `${cpus.length} CPUs (${cpus[0]?.model.trim() ?? 'unknown'}), ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB memory, Linux ${os.release()}, node ${process.version}`;
}

/** `<binary> --version`, first line, or why not. */
export function binaryVersion(binary: string): string {
  try {
    const out = execFileSync(binary, ['--version'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 10_000 });
    return out.trim().split('\n')[0]!.replace(/^.*\//, '');
  } catch (err) {
    return `unknown (${err instanceof Error ? err.message : String(err)})`;
  }
}

/** The commit the manager runs from (dirty when the tree has edits). */
export function topovolVersion(): string {
  try {
    return `topovol ${execFileSync('git', ['-C', repoRoot(), 'describe', '--always', '--dirty'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim()}`;
  } catch {
    return 'topovol (not a git checkout)';
  }
}

/**
 * The exact command lines of this process's children (etcd, kube-apiserver, kube-scheduler,
 * kube-controller-manager, the provisioners, the manager), from /proc, so the report shows the
 * flags that really ran rather than what the bench meant to pass.
 */
export function childCommandLines(): string[] {
  const lines: string[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // Field 4 (ppid) follows the parenthesised command name, which may hold spaces.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid !== process.pid) continue;
      const argv = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').filter((a) => a !== '');
      if (argv.length > 0) lines.push(argv.join(' '));
    } catch {
      // gone meanwhile
    }
  }
  return lines.sort();
}

/** Read once: a process's failpoints are set by whoever starts it, and `process.env` is a slow lookup on a hot path. */
const ARMED = new Set((process.env.TOPOVOL_FAILPOINTS ?? '').split(',').filter((n) => n !== ''));

/**
 * Crash-test failpoints, as etcd's gofail: `TOPOVOL_FAILPOINTS=a,b` in a process's environment at
 * its start makes it kill itself with SIGKILL when it reaches failpoint a or b, so that a test can
 * show a loop finishes its work exactly once after a crash between any two of its writes. Unset
 * (always, outside such tests), a failpoint is a no-op.
 */
export function failpoint(name: string, about?: string): void {
  if (ARMED.size === 0 || !ARMED.has(name)) return;
  process.stderr.write(`failpoint ${name}${about ? ` (${about})` : ''}: killing the process\n`);
  process.kill(process.pid, 'SIGKILL');
}

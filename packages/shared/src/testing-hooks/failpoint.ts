/**
 * Crash-test failpoints, as etcd's gofail: `TOPOVOL_FAILPOINTS=a,b` makes the process kill itself
 * with SIGKILL when it reaches failpoint a or b, so that a test can show a loop finishes its work
 * exactly once after a crash between any two of its writes. Unset (always, outside such tests), a
 * failpoint is a no-op.
 */
export function failpoint(name: string, about?: string): void {
  const armed = process.env.TOPOVOL_FAILPOINTS;
  if (!armed || !armed.split(',').includes(name)) return;
  process.stderr.write(`failpoint ${name}${about ? ` (${about})` : ''}: killing the process\n`);
  process.kill(process.pid, 'SIGKILL');
}

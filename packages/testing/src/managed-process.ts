import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { createWriteStream, readFileSync } from 'node:fs';

const live = new Set<ManagedProcess>();
let hooksInstalled = false;

function installExitHooks(): void {
  if (hooksInstalled) return;
  hooksInstalled = true;
  // Last line of defence besides setpriv's parent-death signal: never leave a control plane behind.
  process.on('exit', () => {
    for (const p of live) p.killNow();
  });
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.once(sig, () => {
      // A program with its own handler (the demo) stops its processes gracefully itself.
      if (process.listenerCount(sig) > 0) return;
      for (const p of live) p.killNow();
      process.exit(130);
    });
  }
}

export interface ManagedProcessOptions {
  name: string;
  command: string;
  args: string[];
  logFile: string;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
}

/**
 * A child process that dies with us: started under `setpriv --pdeathsig KILL` so the kernel kills
 * it even when the test runner itself is SIGKILLed, and tracked so normal exits stop it too.
 */
export class ManagedProcess {
  readonly name: string;
  readonly logFile: string;
  private readonly child: ChildProcess;
  private readonly exited: Promise<number | null>;
  /** The process's output is all in logFile. */
  private readonly flushed: Promise<void>;
  private exitCode: number | null | undefined;

  constructor(opts: ManagedProcessOptions) {
    installExitHooks();
    this.name = opts.name;
    this.logFile = opts.logFile;
    const log = createWriteStream(opts.logFile, { flags: 'a' });
    this.child = spawn('setpriv', ['--pdeathsig', 'KILL', '--', opts.command, ...opts.args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: opts.env ?? process.env,
      cwd: opts.cwd,
    });
    // Neither pipe ends the log on its own (the other may still write); the child's 'close' comes
    // once both are drained into it.
    this.child.stdout?.pipe(log, { end: false });
    this.child.stderr?.pipe(log, { end: false });
    this.flushed = new Promise((resolve) => {
      log.once('close', resolve);
      this.child.once('close', () => log.end());
    });
    live.add(this);
    this.exited = new Promise((resolve) => {
      this.child.once('exit', (code, signal) => {
        this.exitCode = code ?? (signal ? -1 : null);
        live.delete(this);
        resolve(this.exitCode);
      });
      this.child.once('error', () => {
        this.exitCode = -1;
        live.delete(this);
        resolve(-1);
      });
    });
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get running(): boolean {
    return this.exitCode === undefined;
  }

  /**
   * Resolves with the exit code when the process ends and what it wrote is in logFile (a test reads
   * its last lines next: 'exit' can come before the pipes are drained). At most 5 s after the exit:
   * a process that left a child holding its pipes never closes them.
   */
  async waitForExit(): Promise<number | null> {
    const code = await this.exited;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.flushed, new Promise<void>((resolve) => (timer = setTimeout(resolve, 5_000).unref()))]);
    clearTimeout(timer);
    return code;
  }

  /** SIGTERM, then SIGKILL after the grace period. */
  async stop(graceMs = 10_000): Promise<void> {
    if (!this.running) return;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), graceMs);
    await this.exited;
    clearTimeout(timer);
  }

  /** SIGKILL and wait: an abrupt crash, as tests of failover need. */
  async kill(): Promise<void> {
    if (!this.running) return;
    this.child.kill('SIGKILL');
    await this.exited;
  }

  killNow(): void {
    if (this.running) this.child.kill('SIGKILL');
  }

  /** The tail of the process's log, for error messages. */
  logTail(lines = 30): string {
    try {
      return readFileSync(this.logFile, 'utf8').split('\n').slice(-lines).join('\n');
    } catch {
      return '';
    }
  }
}

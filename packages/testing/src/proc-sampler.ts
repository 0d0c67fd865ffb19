import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';

/** Kernel clock ticks per second, the unit of utime/stime in /proc/<pid>/stat. */
const CLK_TCK = ((): number => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** Fields after the parenthesised command name, which may itself hold spaces. */
function statFields(pid: number): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/** utime + stime of a live process, in seconds; undefined once it is gone. */
export function cpuSeconds(pid: number): number | undefined {
  const f = statFields(pid);
  // proc(5): utime and stime are fields 14 and 15; f[0] is field 3 (state).
  return f ? (Number(f[11]) + Number(f[12])) / CLK_TCK : undefined;
}

function statusKiB(pid: number, field: 'VmRSS' | 'VmHWM'): number | undefined {
  try {
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

/** Busy and total CPU seconds of the whole machine so far (all cores), from /proc/stat. */
export function machineCpuSeconds(): { busy: number; total: number } {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '';
  // cpu user nice system idle iowait irq softirq steal ...
  const t = line.trim().split(/\s+/).slice(1).map(Number);
  const total = t.slice(0, 8).reduce((a, b) => a + b, 0);
  const idle = (t[3] ?? 0) + (t[4] ?? 0);
  return { busy: (total - idle) / CLK_TCK, total: total / CLK_TCK };
}

/** Our direct children by command name (comm, at most 15 characters), e.g. the control plane's. */
export function childPids(comm: string): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (name === comm && ppid === process.pid) out.push(Number(entry));
    } catch {
      // exited while we looked
    }
  }
  return out;
}

/**
 * Samples one process's memory from /proc while it runs: peak resident set is the larger of the
 * kernel's high-water mark (VmHWM) and the largest VmRSS we saw, so it survives the process exiting.
 */
export class ProcSampler {
  private peakKiB = 0;
  private timer?: NodeJS.Timeout;
  private startedAt = 0;
  private lastSeriesAt = -Infinity;
  /** Resident set over time, about one point a second: seconds since start(), MiB. */
  readonly rssSeries: { seconds: number; rssMiB: number }[] = [];

  constructor(
    readonly pid: number,
    private readonly intervalMs = 250,
  ) {}

  start(): void {
    this.startedAt = performance.now();
    this.sample();
    this.timer = setInterval(() => this.sample(), this.intervalMs);
  }

  sample(): void {
    const rss = statusKiB(this.pid, 'VmRSS') ?? 0;
    const hwm = statusKiB(this.pid, 'VmHWM') ?? 0;
    this.peakKiB = Math.max(this.peakKiB, rss, hwm);
    const now = performance.now();
    if (rss > 0 && now - this.lastSeriesAt >= 1000) {
      this.lastSeriesAt = now;
      this.rssSeries.push({ seconds: (now - this.startedAt) / 1000, rssMiB: rss / 1024 });
    }
  }

  stop(): void {
    this.sample();
    clearInterval(this.timer);
  }

  get peakRssMiB(): number {
    return this.peakKiB / 1024;
  }

  cpuSeconds(): number | undefined {
    return cpuSeconds(this.pid);
  }
}

import { setTimeout as sleep } from 'node:timers/promises';
import { cpuSeconds, machineCpuSeconds, ProcSampler, readAuditLog } from '@topovol/testing';
import type { ManagedProcess } from '@topovol/testing';
import type { CsiTestDriver } from '@topovol/testing/csi-test-driver';

const WRITE_VERBS = new Set(['create', 'update', 'patch', 'delete', 'deletecollection']);

/** What one user did over the window: requests by "verb resource[/subresource]". */
export interface UserRequests {
  user: string;
  writes: number;
  requests: number;
  byVerb: Record<string, number>;
}

export interface ProcessesAtRest {
  count: number;
  /** utime + stime over the window, all processes together. */
  cpuSeconds: number;
  /** Peak resident set per process (VmHWM), MiB. */
  peakRssMiB: number[];
}

/** The GetCapacity calls the nodes' drivers answered over the window, whoever asked. */
export interface GetCapacityAtRest {
  calls: number;
  /** Distinct (node, parameters, topology) asked: one per item of the contender. */
  items: number;
  /** The most calls one item got. */
  maxPerItem: number;
}

export interface RestResult {
  windowMs: number;
  getCapacity: GetCapacityAtRest;
  /** Busy share of the whole machine (all cores) over the window: other work shares the cores. */
  machineBusy: number;
  users: UserRequests[];
  publishers: ProcessesAtRest;
  companions: ProcessesAtRest;
}

/** The audit event fields the window needs beyond the shared ones. */
/**
 * Every request of the given users the API server received within [from, to), once per audit ID
 * (a request is logged at several stages). Long-running watches count once, when they start.
 */
export function requestsInWindow(file: string, users: readonly string[], from: number, to: number): UserRequests[] {
  const seen = new Set<string>();
  const by = new Map<string, UserRequests>(users.map((u) => [u, { user: u, writes: 0, requests: 0, byVerb: {} }]));
  for (const e of readAuditLog(file)) {
    const u = by.get(e.user.username);
    const at = Date.parse(e.requestReceivedTimestamp ?? '');
    if (!u || !(at >= from && at < to) || seen.has(e.auditID)) continue;
    seen.add(e.auditID);
    u.requests++;
    if (WRITE_VERBS.has(e.verb)) u.writes++;
    const r = e.objectRef?.resource ? `${e.objectRef.resource}${e.objectRef.subresource ? `/${e.objectRef.subresource}` : ''}` : e.requestURI;
    const k = `${e.verb} ${r}`;
    u.byVerb[k] = (u.byVerb[k] ?? 0) + 1;
  }
  return users.map((u) => by.get(u)!);
}

function cpuOf(procs: readonly ManagedProcess[]): number {
  return procs.reduce((sum, p) => sum + (p.pid !== undefined ? (cpuSeconds(p.pid) ?? 0) : 0), 0);
}

function peakRss(procs: readonly ManagedProcess[]): number[] {
  return procs.flatMap((p) => {
    if (p.pid === undefined) return [];
    const s = new ProcSampler(p.pid);
    s.sample();
    return [s.peakRssMiB];
  });
}

/**
 * The quiet window: nothing changes, both kinds of process just run. Counts the audited requests
 * of each user and the processes' CPU over the window; memory is each process's peak so far.
 */
export async function measureRest(
  auditLog: string,
  users: readonly string[],
  publishers: readonly ManagedProcess[],
  companions: readonly ManagedProcess[],
  drivers: readonly CsiTestDriver[],
  windowMs: number,
): Promise<RestResult> {
  const asked0 = drivers.map((d) => d.getCapacityRequests().length);
  const from = Date.now();
  const cpu0 = [cpuOf(publishers), cpuOf(companions)];
  const m0 = machineCpuSeconds();
  await sleep(windowMs);
  const to = Date.now();
  const cpu1 = [cpuOf(publishers), cpuOf(companions)];
  const m1 = machineCpuSeconds();
  const perItem = new Map<string, number>();
  drivers.forEach((d, i) => {
    for (const r of d.getCapacityRequests().slice(asked0[i])) {
      const k = JSON.stringify([i, Object.entries(r.parameters ?? {}).sort(), Object.entries(r.accessibleTopology ?? {}).sort()]);
      perItem.set(k, (perItem.get(k) ?? 0) + 1);
    }
  });
  const counts = [...perItem.values()];
  // The audit log backend writes as requests complete; give the last ones a moment to land.
  await sleep(3_000);
  return {
    windowMs: to - from,
    getCapacity: { calls: counts.reduce((a, b) => a + b, 0), items: counts.length, maxPerItem: Math.max(0, ...counts) },
    machineBusy: (m1.busy - m0.busy) / Math.max(1e-9, m1.total - m0.total),
    users: requestsInWindow(auditLog, users, from, to),
    publishers: { count: publishers.length, cpuSeconds: cpu1[0]! - cpu0[0]!, peakRssMiB: peakRss(publishers) },
    companions: { count: companions.length, cpuSeconds: cpu1[1]! - cpu0[1]!, peakRssMiB: peakRss(companions) },
  };
}

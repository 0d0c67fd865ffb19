import type { Segment } from '../segments/segment.js';

/**
 * The identity of a GetCapacity request: its parameters and its accessible topology, keys sorted.
 * Items with equal keys get equal answers: classes drawing on one pool with the same parameters,
 * and `<ephemeral>` next to a class without parameters.
 */
export function requestKey(parameters: Readonly<Record<string, string>>, segment: Segment): string {
  return JSON.stringify([sorted(parameters), sorted(segment)]);
}

/** The identity of a request's parameters alone (keys sorted), whatever its topology. */
export function parametersKey(parameters: Readonly<Record<string, string>>): string {
  return JSON.stringify(sorted(parameters));
}

function sorted(o: Readonly<Record<string, string>>): [string, string][] {
  return Object.keys(o)
    .sort()
    .map((k) => [k, o[k] ?? '']);
}

/**
 * The GetCapacity calls running, by request, with the instant each started. An item that needs a
 * figure waits for a running call of the same request that started at or after the instant it needed
 * one (covers): that answer is as fresh as its own call's would be, and it is handed to every item of
 * the request when it lands. external-provisioner asks once per (class, segment) even when classes
 * share their parameters (pkg/capacity/capacity.go, one work item per class and topology segment);
 * sharing the call is what keeps such items at one call per poll interval between them.
 */
export class RunningRequests {
  private readonly running = new Map<string, number[]>();

  begin(key: string, at: number): void {
    const starts = this.running.get(key);
    if (starts) starts.push(at);
    else this.running.set(key, [at]);
  }

  end(key: string, at: number): void {
    const starts = this.running.get(key);
    if (!starts) return;
    const i = starts.indexOf(at);
    if (i >= 0) starts.splice(i, 1);
    if (starts.length === 0) this.running.delete(key);
  }

  /** A call of this request is running that started at or after `since`. */
  covers(key: string, since: number): boolean {
    return (this.running.get(key) ?? []).some((at) => at >= since);
  }
}

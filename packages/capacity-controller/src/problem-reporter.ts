import type { KubeObject, Logger } from '@topovol/shared';
import type { CapacityEvents } from './capacity-loop-deps.js';

export interface Problem {
  /** Where `kubectl describe` should show it; undefined logs only. */
  target: KubeObject | undefined;
  /** Identifies the problem across syncs (the object and the reason). */
  id: string;
  reason: string;
  message: string;
  fields: Record<string, unknown>;
}

/**
 * Warning Events and log lines for problems found on every sync: once per problem while its message
 * stays the same, again if it changes or comes back after going away.
 */
export class ProblemReporter {
  private readonly reported = new Map<string, string>();

  constructor(
    private readonly events: CapacityEvents,
    private readonly log: Logger,
  ) {}

  report(problems: readonly Problem[]): void {
    const seen = new Set<string>();
    for (const p of problems) {
      seen.add(p.id);
      if (this.reported.get(p.id) === p.message) continue;
      this.reported.set(p.id, p.message);
      if (p.target) this.events.event(p.target, 'Warning', p.reason, p.message);
      this.log.warn(p.message, { reason: p.reason, ...p.fields });
    }
    for (const id of this.reported.keys()) if (!seen.has(id)) this.reported.delete(id);
  }
}

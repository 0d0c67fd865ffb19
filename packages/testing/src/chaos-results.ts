import { appendFileSync } from 'node:fs';

/**
 * How hard the reliability scenarios push: 1 in the test command (a few minutes in all), more from
 * hack/chaos.sh (TOPOVOL_CHAOS_SCALE=10: ten times the work and the fault durations).
 */
export const CHAOS_SCALE = Math.max(1, Number(process.env.TOPOVOL_CHAOS_SCALE ?? 1));

/** One row of docs/reliability.md's results table. */
export interface ChaosResult {
  scenario: string;
  fault: string;
  /** Rate or duration of the fault, as a reader would say it. */
  intensity: string;
  operations: number;
  violations: number;
  /** Seconds from the end of the fault to the converged end state. */
  convergeSeconds: number;
}

/** Appends a result to $TOPOVOL_CHAOS_RESULTS (JSON lines) when hack/chaos.sh asked for them. */
export function recordChaosResult(r: ChaosResult): void {
  const file = process.env.TOPOVOL_CHAOS_RESULTS;
  if (file) appendFileSync(file, `${JSON.stringify({ ...r, scale: CHAOS_SCALE })}\n`);
}

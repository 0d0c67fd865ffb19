import { counter } from '@topovol/shared';

export type ZonalUpgradeResult = 'upgraded' | 'dry_run' | 'malformed' | 'error';

const upgrades = counter<'result'>({
  name: 'topovol_zonal_pv_upgrades_total',
  help:
    'PVs handled by the zonal-pv-upgrade loop, by result: upgraded (nodeAffinity written), dry_run (would have been written), ' +
    'malformed (unreadable zone/region label, left alone), error (the write failed for a reason other than a conflict, retried unless ' +
    "validation refused the affinity's fields; or the stored volume lacks the affinity or has another, an admission webhook having removed or changed it).",
  labelNames: ['result'],
});

export function countZonalUpgrade(result: ZonalUpgradeResult): void {
  upgrades.inc({ result });
}

/** Exposes every result at 0 once the loop runs, so rates and alerts work before the first event. */
export function initZonalMetrics(): void {
  for (const result of ['upgraded', 'dry_run', 'malformed', 'error'] as const) upgrades.inc({ result }, 0);
}

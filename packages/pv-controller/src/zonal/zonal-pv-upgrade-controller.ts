import { Controller, DONE, objectKey, Resources, WorkQueue } from '@topovol/shared';
import type { ControllerEnv, PersistentVolume } from '@topovol/shared';
import { decideZonalUpgrade } from './decide-zonal-upgrade.js';
import { applyZonalDecision } from './zonal-actuator.js';
import { ZONAL_LABELS } from './zonal-labels.js';
import { initZonalMetrics } from './zonal-metrics.js';

const ZONAL_PV_UPGRADE = 'zonal-pv-upgrade';

/** What the decision reads; other changes (status, claimRef) cannot change its outcome. */
function zonalInput(v: PersistentVolume): string {
  const labels = v.metadata?.labels ?? {};
  return JSON.stringify([v.spec?.nodeAffinity != null, !!v.metadata?.deletionTimestamp, ...ZONAL_LABELS.map((l) => labels[l.key] ?? null)]);
}

/**
 * The zonal-pv-upgrade loop (KEP-490 "Topology-aware volume scheduling", "Zonal PV Upgrade"): keys
 * are PV names (one kind of key, so a plain string); each reconcile decides on the cached PV and
 * converts its zone/region labels to spec.nodeAffinity.
 */
export function setupZonalPvUpgrade(env: ControllerEnv): Controller<string> {
  const { informers, client, events, options, log } = env;
  // The same informer as pv-binder, without a transform: a slimmed PV here would also be what the
  // binder sees when both loops run in one process (the factory shares one cache per resource).
  const pvs = informers.forResource<PersistentVolume>(Resources.persistentVolumes);
  const deps = { client, events, log, dryRun: options.dryRun };
  initZonalMetrics();

  const queue = new WorkQueue<string>(ZONAL_PV_UPGRADE);
  const controller = new Controller<string>(
    ZONAL_PV_UPGRADE,
    async (ctx, name) => {
      const pv = pvs.cache.get(name);
      if (!pv) return DONE;
      const decision = decideZonalUpgrade(pv);
      ctx.log.debug('volume synced', { decision: decision.kind });
      await applyZonalDecision({ ...deps, log: ctx.log }, pv, decision);
      return DONE;
    },
    { queue, workers: options.concurrentWorkers, startKeys: () => pvs.cache.list().map(objectKey) },
  );

  pvs.addEventHandler({
    onAdd: (v) => queue.add(objectKey(v)),
    // The binder rewrites PVs often; only a change to what we read is worth a new decision (and a
    // malformed PV is not re-reported on every status write). Failed writes requeue themselves.
    onUpdate: (old, v) => {
      if (zonalInput(old) !== zonalInput(v)) queue.add(objectKey(v));
    },
  });
  return controller;
}

import { counter, errorMessage, isConflict, isInvalid, isNotFound, logger, Resources } from '@topovol/shared';
import type { CSIDriver, KubeClient, Logger } from '@topovol/shared';
import { buildStorage, expiredPools, largestTotal, mergeConditions, prunePatch } from './build-status.js';
import { CSIDriverCapacities } from './driver-capacity-types.js';
import type { CapacityEntry, CapacityStorage, CSIDriverCapacity, StatusCondition } from './driver-capacity-types.js';

const statusWrites = counter<'writer' | 'result'>({
  name: 'topovol_capacity_status_writes_total',
  help: 'Server-side applies of the aggregated CSIDriverCapacity status, by writer (central, node) and result (ok, conflict, error).',
  labelNames: ['writer', 'result'],
});
const pruned = counter({
  name: 'topovol_capacity_status_pools_pruned_total',
  help: 'Pools removed from the aggregated status because their expiryTime passed (their writer stopped).',
});

export function countStatusWrite(writer: 'central' | 'node', result: 'ok' | 'conflict' | 'error'): void {
  statusWrites.inc({ writer, result });
}

export interface StatusWriterOptions {
  driverName: string;
  fieldManager: string;
  /** Entries are valid this long; the writer refreshes them when half of it is left. */
  expiryMs: number;
  now?: () => number;
}

/**
 * Makes sure the CSIDriverCapacity object exists (named as the driver, owned by the CSIDriver so
 * that uninstalling the driver removes it), by a server-side apply of the spec only; shared with
 * the per-node writers, which apply the same spec (co-ownership, never a conflict).
 */
export async function ensureDriverCapacity(client: KubeClient, driverName: string, fieldManager: string, log: Logger): Promise<void> {
  let owner: CSIDriver | undefined;
  try {
    owner = await client.get<CSIDriver>(Resources.csiDrivers, driverName);
  } catch (err) {
    if (!isNotFound(err)) throw err;
    log.info('no CSIDriver object yet: the CSIDriverCapacity gets no owner reference until there is one', { driver: driverName });
  }
  const obj: CSIDriverCapacity = {
    apiVersion: `${CSIDriverCapacities.group}/${CSIDriverCapacities.version}`,
    kind: CSIDriverCapacities.kind,
    metadata: {
      name: driverName,
      ...(owner?.metadata?.uid ? { ownerReferences: [{ apiVersion: 'storage.k8s.io/v1', kind: 'CSIDriver', name: driverName, uid: owner.metadata.uid }] } : {}),
    },
    spec: { driverName },
  };
  await client.apply(CSIDriverCapacities, obj, fieldManager);
}

/**
 * The central instance's writer. It applies, under its own field manager, only the entries it
 * computes (plus conditions and the printer-column fields); entries of other managers (per-node
 * writers) are untouched by the apply, and entries it no longer sends are removed by the API server.
 * It writes only when the content changed or the expiry needs a refresh, so an idle cluster causes
 * one heartbeat per expiryMs/2 and nothing else.
 */
export class CapacityStatusWriter {
  private lastContent?: string;
  private lastWrite = 0;
  private ensured = false;
  private readonly now: () => number;
  private readonly log: Logger;

  constructor(
    private readonly client: KubeClient,
    private readonly opts: StatusWriterOptions,
  ) {
    this.now = opts.now ?? Date.now;
    this.log = logger().child({ component: 'capacity-status', driver: opts.driverName });
  }

  async publish(entries: CapacityEntry[], conditions: StatusCondition[]): Promise<{ wrote: boolean }> {
    const storage = buildStorage(entries);
    const content = JSON.stringify({ storage, conditions });
    const now = this.now();
    if (content === this.lastContent && now - this.lastWrite < this.opts.expiryMs / 2) return { wrote: false };
    if (!this.ensured) {
      await ensureDriverCapacity(this.client, this.opts.driverName, this.opts.fieldManager, this.log);
      this.ensured = true;
    }
    let current: CSIDriverCapacity | undefined;
    try {
      current = await this.client.get<CSIDriverCapacity>(CSIDriverCapacities, this.opts.driverName);
    } catch (err) {
      if (!isNotFound(err)) throw err;
      this.ensured = false;
      throw new Error(`CSIDriverCapacity ${this.opts.driverName} disappeared; it is re-created on the next try`);
    }
    // The CSIDriver may have been installed after us: take it as owner once it exists.
    if (!current.metadata?.ownerReferences?.length) this.ensured = false;
    const expiryTime = new Date(now + this.opts.expiryMs).toISOString().replace(/\.\d+Z$/, 'Z');
    const stamped: CapacityStorage[] = storage.map((s) => ({ ...s, pools: (s.pools ?? []).map((p) => ({ ...p, expiryTime })) }));
    const body: CSIDriverCapacity = {
      apiVersion: `${CSIDriverCapacities.group}/${CSIDriverCapacities.version}`,
      kind: CSIDriverCapacities.kind,
      metadata: { name: this.opts.driverName },
      status: {
        totalCapacity: largestTotal(storage),
        storageClasses: storage.length,
        storage: stamped,
        conditions: mergeConditions(current.status?.conditions, conditions, new Date(now).toISOString().replace(/\.\d+Z$/, 'Z')),
      },
    };
    try {
      await this.client.apply(CSIDriverCapacities, body, this.opts.fieldManager, { subresource: 'status', force: true });
      countStatusWrite('central', 'ok');
    } catch (err) {
      countStatusWrite('central', isConflict(err) ? 'conflict' : 'error');
      if (isNotFound(err)) this.ensured = false;
      throw err;
    }
    this.lastContent = content;
    this.lastWrite = now;
    if (!this.ensured) await ensureDriverCapacity(this.client, this.opts.driverName, this.opts.fieldManager, this.log).then(() => (this.ensured = true));
    return { wrote: true };
  }

  /** Removes every expired pool (any writer may); returns how many. */
  pruneExpired(): Promise<number> {
    return pruneExpiredPools(this.client, this.opts.driverName, this.now(), this.log);
  }
}

/**
 * Pruning removes entries another manager owns, which an apply cannot do: it is a JSON patch
 * guarded by resourceVersion (see prunePatch). If another pruner or writer got there first the
 * guard fails and the next pass looks again.
 */
export async function pruneExpiredPools(client: KubeClient, driverName: string, now: number, log: Logger): Promise<number> {
  let obj: CSIDriverCapacity;
  try {
    obj = await client.get<CSIDriverCapacity>(CSIDriverCapacities, driverName);
  } catch (err) {
    if (isNotFound(err)) return 0;
    throw err;
  }
  const expired = expiredPools(obj, now);
  if (expired.length === 0) return 0;
  try {
    await client.patch(CSIDriverCapacities, driverName, undefined, 'json', prunePatch(obj, expired), { subresource: 'status' });
  } catch (err) {
    if (isConflict(err) || isInvalid(err) || isNotFound(err)) {
      log.debug('prune raced another writer; next pass', { error: errorMessage(err) });
      return 0;
    }
    throw err;
  }
  pruned.inc(expired.length);
  log.info('pruned expired capacity pools', { pools: expired.map((e) => `${e.storageClassName}/${e.name}`) });
  return expired.length;
}

import type { CSIStorageCapacity } from '@topovol/shared';
import type { ClassProblem } from '../objects/desired-items.js';
import { solePublisherCondition } from '../objects/other-publishers.js';
import type { StatusCondition } from '../status/index.js';

export interface LoopHealth {
  /** Items desired, and how many of them have a figure. */
  total: number;
  measured: number;
  /** The error of some item whose last call failed. */
  failing?: string;
  /** Why the driver does not answer GetCapacity, while it does not. */
  unsupported?: string;
  /** Why CSIStorageCapacity writes are refused, while they are (ObjectActuator.refusal). */
  refused?: string;
  problems: readonly ClassProblem[];
  /** The driver's objects another publisher manages (otherPublishersSelector); absent: not watched. */
  others?: { driverName: string; objects: readonly CSIStorageCapacity[] };
}

/** The conditions of the central loop's aggregated status: Ready, whether pools cover every domain, and whether it publishes alone. */
export function loopConditions(h: LoopHealth): StatusCondition[] {
  // Refused writes first: whatever the driver answers, kube-scheduler reads stale figures.
  const ready: StatusCondition =
    h.refused !== undefined
      ? { type: 'Ready', status: 'False', reason: 'WritesRefused', message: h.refused }
      : h.unsupported !== undefined
      ? { type: 'Ready', status: 'False', reason: 'GetCapacityUnimplemented', message: h.unsupported }
      : h.failing !== undefined
        ? { type: 'Ready', status: 'False', reason: 'GetCapacityFailed', message: h.failing }
        : h.measured < h.total
          ? { type: 'Ready', status: 'False', reason: 'Measuring', message: `${h.measured} of ${h.total} class and segment pairs measured` }
          : { type: 'Ready', status: 'True', reason: 'AllMeasured', message: `${h.total} class and segment pairs measured` };
  // A pool never chosen is a Warning on its class, not a domain left unserved.
  const gaps = h.problems.filter((p) => p.reason !== 'PoolNeverChosen');
  const pools: StatusCondition =
    gaps.length > 0
      ? { type: 'PoolsCoverDomains', status: 'False', reason: gaps[0]!.reason, message: gaps.map((p) => `${p.storageClassName}: ${p.message}`).join('\n') }
      : { type: 'PoolsCoverDomains', status: 'True', reason: 'AllDomainsServed', message: 'every domain with nodes is served by a pool of each pool-constrained class' };
  return h.others ? [ready, pools, solePublisherCondition(h.others.driverName, h.others.objects)] : [ready, pools];
}

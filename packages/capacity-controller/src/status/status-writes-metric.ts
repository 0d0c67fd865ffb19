import { classifyError, counter } from '@topovol/shared';
import type { ApiErrorKind } from '@topovol/shared';

export type StatusWriteOperation = 'create' | 'publish' | 'prune' | 'summary' | 'owner';

/** API writes of the aggregated status, by operation and result (success, conflict, exists, fenced, error). */
const statusWrites = counter<'operation' | 'result'>({
  name: 'topovol_capacity_status_writes_total',
  help: 'Writes of CSIDriverCapacity objects by operation and result (success, conflict, exists, fenced: held unsent while the lease renewal was late, error).',
  labelNames: ['operation', 'result'],
});

const RESULTS: Partial<Record<ApiErrorKind, string>> = { Conflict: 'conflict', AlreadyExists: 'exists', Fenced: 'fenced' };

/** AlreadyExists (another writer created the object first) is its own result: expected, not an error. */
export function countWrite(operation: StatusWriteOperation, err?: unknown): void {
  const result = err === undefined ? 'success' : (RESULTS[classifyError(err).kind] ?? 'error');
  statusWrites.inc({ operation, result });
}

import type { KubeClient } from '@topovol/shared';
import { parsePrometheusText } from '@topovol/testing';
import type { MetricSample } from '@topovol/testing';

/** Updates and patches of volumes and claims (status included) the API server answered, by its own counter. */
export interface VolumeWrites {
  total: number;
  /** By "VERB resource[/subresource]". */
  byKind: Record<string, number>;
}

const WRITE_VERBS = new Set(['PUT', 'PATCH', 'APPLY']);
const RESOURCES = new Set(['persistentvolumes', 'persistentvolumeclaims']);

/**
 * Reads kube-apiserver's apiserver_request_total and sums the updates and patches of volumes and
 * claims. The bench itself only creates (POST) those, so over a binding window the sum is the
 * binder's writes; creates are not counted.
 */
export async function volumeWrites(admin: KubeClient): Promise<VolumeWrites> {
  return parseVolumeWrites(await admin.requestText('GET', '/metrics'));
}

/** Every apiserver_request_total series in a /metrics text: its labels and its value. */
function requestCounts(metricsText: string): MetricSample[] {
  return parsePrometheusText(metricsText).filter((s) => s.name === 'apiserver_request_total');
}

const answered = (labels: Record<string, string>): boolean => /^2\d\d$/.test(labels.code ?? '');

export function parseVolumeWrites(metricsText: string): VolumeWrites {
  const byKind: Record<string, number> = {};
  let total = 0;
  for (const { labels, value } of requestCounts(metricsText)) {
    if (!WRITE_VERBS.has(labels.verb ?? '') || !RESOURCES.has(labels.resource ?? '') || !answered(labels)) continue;
    const kind = `${labels.verb} ${labels.resource}${labels.subresource ? `/${labels.subresource}` : ''}`;
    byKind[kind] = (byKind[kind] ?? 0) + value;
    total += value;
  }
  return { total, byKind };
}

/** after − before, per kind. */
export function writesBetween(before: VolumeWrites, after: VolumeWrites): VolumeWrites {
  const byKind: Record<string, number> = {};
  for (const [k, v] of Object.entries(after.byKind)) {
    const d = v - (before.byKind[k] ?? 0);
    if (d > 0) byKind[k] = d;
  }
  return { total: after.total - before.total, byKind };
}

/**
 * Creates and patches of core/v1 Events the API server answered. Both binders record their Events
 * through the core/v1 API (client-go's record package; Topovol's EventRecorder), kube-scheduler
 * through events.k8s.io/v1, which the API server counts under another group: so over the delayed
 * scenario's window this is the binder's Event writes.
 */
export async function coreEventWrites(admin: KubeClient): Promise<number> {
  return parseCoreEventWrites(await admin.requestText('GET', '/metrics'));
}

export function parseCoreEventWrites(metricsText: string): number {
  let total = 0;
  for (const { labels, value } of requestCounts(metricsText)) {
    if (labels.resource === 'events' && labels.group === '' && (labels.verb === 'POST' || labels.verb === 'PATCH') && answered(labels)) total += value;
  }
  return total;
}

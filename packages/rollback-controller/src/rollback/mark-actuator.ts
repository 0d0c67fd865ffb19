import { errorMessage, isRefusal, Resources } from '@topovol/shared';
import type { EventRecorder, KubeClient, Logger } from '@topovol/shared';
import type { MarkDecision } from './decide-mark.js';
import { ANN_PROVISIONED_FOR_NODE, ANN_PROVISIONED_FOR_POD, ANN_PROVISIONED_FOR_WORKLOAD, ANN_USED_BECAUSE, LABEL_USAGE, Reasons } from './marks.js';
import { countMark, countMarkRefused } from './rollback-metrics.js';

/** The one client call writeMark makes: a merge patch carrying the resourceVersion decided on. */
export type MarkWrites = Pick<KubeClient, 'patch'>;

export interface MarkActuatorDeps {
  client: MarkWrites;
  events: Pick<EventRecorder, 'event'>;
  log: Logger;
  dryRun: boolean;
  /** In dry-run, marks are not written; they are handed here so later decisions can build on them. */
  rememberDryRunMark?: (volumeName: string, labels: Record<string, string>, annotations: Record<string, string>) => void;
}

/** How soon a mark the API server refused is tried again (a policy may be fixed; the work queue's doubling backoff grows to many minutes). */
export const MARK_REFUSED_RETRY_MS = 60_000;

/**
 * Writes a volume's marks with the resourceVersion decided on; the Event follows the write.
 * `refused`: the API server refused the write (403, 422 or 400: the marks' admission policy naming
 * another ServiceAccount after the install moved, a webhook, a narrowed role). Nothing is lost, as
 * without an `unused` mark no volume is rolled back (and a refused `used` mark leaves one a rollback
 * checks again before it acts), but nothing would say so either: a Warning on the volume, a warn
 * log line, `topovol_rollback_volume_marks_refused_total`; tried again after MARK_REFUSED_RETRY_MS.
 */
export async function writeMark(d: MarkActuatorDeps, m: MarkDecision): Promise<'refused' | undefined> {
  if (m.kind === 'none') return undefined;
  const v = m.volume;
  const labels: Record<string, string> = { [LABEL_USAGE]: m.kind === 'markUnused' ? 'unused' : 'used' };
  const annotations: Record<string, string> =
    m.kind === 'markUnused'
      ? { [ANN_PROVISIONED_FOR_NODE]: m.node, [ANN_PROVISIONED_FOR_POD]: m.podUid, [ANN_PROVISIONED_FOR_WORKLOAD]: m.workloadUid }
      : { [ANN_USED_BECAUSE]: m.because, ...(m.node && !m.volume.metadata?.annotations?.[ANN_PROVISIONED_FOR_NODE] ? { [ANN_PROVISIONED_FOR_NODE]: m.node } : {}) };
  const message = m.kind === 'markUnused' ? `provisioned for node ${m.node} for pod ${m.podName}, which has not run: can be rolled back while unused` : `marked used for good: ${m.because}`;
  d.log.info(m.kind === 'markUnused' ? 'marking volume unused' : 'marking volume used', { volume: v.metadata?.name, dryRun: d.dryRun, message });
  if (d.dryRun) d.rememberDryRunMark?.(v.metadata!.name!, labels, annotations);
  else {
    try {
      await d.client.patch(Resources.persistentVolumes, v.metadata!.name!, undefined, 'merge', { metadata: { resourceVersion: v.metadata?.resourceVersion, labels, annotations } });
    } catch (err) {
      if (!isRefusal(err)) throw err;
      const consequence = m.kind === 'markUnused' ? 'so it cannot be rolled back' : 'so it keeps its unused mark, which a rollback checks again before it acts';
      const refused = `the API server refused marking the volume ${labels[LABEL_USAGE]}, ${consequence}; trying again: ${errorMessage(err)}`;
      d.log.warn('volume mark refused by the API server', { volume: v.metadata?.name, mark: labels[LABEL_USAGE], error: errorMessage(err) });
      d.events.event(v, 'Warning', Reasons.MarkRefused, refused);
      countMarkRefused(m.kind === 'markUnused' ? 'unused' : 'used');
      return 'refused';
    }
    countMark(m.kind === 'markUnused' ? 'unused' : 'used');
  }
  d.events.event(v, 'Normal', m.kind === 'markUnused' ? Reasons.MarkedUnused : Reasons.MarkedUsed, message);
  return undefined;
}

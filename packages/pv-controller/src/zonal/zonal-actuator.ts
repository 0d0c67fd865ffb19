import { isDeepStrictEqual } from 'node:util';
import { classifyError, isNotFoundNamed, isRefusal, KubeApiError, Resources, TerminalError } from '@topovol/shared';
import type { EventRecorder, KubeClient, Logger, PersistentVolume } from '@topovol/shared';
import type { ZonalUpgradeDecision } from './decide-zonal-upgrade.js';
import { countZonalUpgrade } from './zonal-metrics.js';

/**
 * Event reasons of this loop, on the PersistentVolume:
 * - ZonalLabelsConverted (Normal): nodeAffinity was written from the zone/region labels (in
 *   dry-run mode: would have been).
 * - MalformedZonalLabels (Warning): a zone/region label value cannot be read (e.g. "a____b"), or
 *   the API server refused the affinity built from it; the PV is left unchanged.
 * - ZonalAffinityNotKept (Warning): the patch was accepted but the stored PV has no nodeAffinity,
 *   or another one (a mutating admission webhook removed or changed it).
 * - ZonalAffinityRefused (Warning): the write was refused other than for the affinity itself (a
 *   ValidatingAdmissionPolicy's or a webhook's denial, another field of the volume), which may
 *   change; retried.
 */
export const REASON_CONVERTED = 'ZonalLabelsConverted';
export const REASON_MALFORMED = 'MalformedZonalLabels';
export const REASON_NOT_KEPT = 'ZonalAffinityNotKept';
export const REASON_REFUSED = 'ZonalAffinityRefused';

export interface ZonalActuatorDeps {
  client: KubeClient;
  events: EventRecorder;
  log: Logger;
  dryRun: boolean;
}

/** Carries out one decision about one PV. */
export async function applyZonalDecision(d: ZonalActuatorDeps, pv: PersistentVolume, decision: ZonalUpgradeDecision): Promise<void> {
  const name = pv.metadata?.name ?? '';
  switch (decision.kind) {
    case 'none':
      return;
    case 'malformed':
      d.log.warn('malformed zonal labels; not converting', { volume: name, reason: decision.reason });
      countZonalUpgrade('malformed');
      d.events.event(pv, 'Warning', REASON_MALFORMED, `${decision.reason}; spec.nodeAffinity not set`);
      return;
    case 'upgrade': {
      if (d.dryRun) {
        d.log.info('dry-run: would set nodeAffinity from zonal labels', { volume: name, nodeAffinity: decision.summary });
        countZonalUpgrade('dry_run');
        d.events.event(pv, 'Normal', REASON_CONVERTED, `dry run: would set spec.nodeAffinity from zone/region labels: ${decision.summary}`);
        return;
      }
      let written: PersistentVolume;
      try {
        // The resourceVersion makes the patch conditional: if the PV changed since our cache saw
        // it (someone may have set nodeAffinity meanwhile), the server answers Conflict and the
        // key is retried on fresh data rather than overwriting.
        written = await d.client.patch<PersistentVolume>(Resources.persistentVolumes, name, undefined, 'merge', {
          metadata: { resourceVersion: pv.metadata?.resourceVersion },
          spec: { nodeAffinity: decision.nodeAffinity },
        });
      } catch (err) {
        // Deleted meanwhile: nothing left to convert. Only the API server's NotFound naming this
        // volume says so; a proxy's plain 404 does not, and the loop has no re-sync that would try
        // again, so anything else is an error, retried.
        if (isNotFoundNamed(err, Resources.persistentVolumes.plural, name)) return;
        const { kind, message } = classifyError(err);
        // A conflict is a race, not a failure, and a write the leader-election fence held was not
        // sent: the retry decides again and is counted then.
        if (kind === 'Conflict' || kind === 'Fenced') throw err;
        countZonalUpgrade('error');
        if (kind === 'Invalid' && namesOnlyAffinity(err)) {
          // Validation refuses the same affinity every time; only a label change can help (and re-queues the volume).
          d.events.event(pv, 'Warning', REASON_MALFORMED, `the API server refused spec.nodeAffinity built from the zone/region labels (${decision.summary}): ${message}`);
          throw new TerminalError(`nodeAffinity refused for volume ${name}`, { cause: err });
        }
        // A ValidatingAdmissionPolicy's denial is a 422 too (its reason defaults to Invalid); a
        // webhook's is a 400 unless it says otherwise (ToStatusErr in k8s.io/apiserver's webhook
        // errors, which keeps a webhook's own causes, fields included), a 403 an authorizer's or a
        // policy's; another field of a legacy volume that today's rules refuse is fixed by an edit
        // that changes no zone label, so no event would bring the volume back. Each may change:
        // say so and retry, with backoff.
        if (isRefusal(err)) d.events.event(pv, 'Warning', REASON_REFUSED, `the API server refused spec.nodeAffinity (${decision.summary}); retrying: ${message}`);
        throw err;
      }
      // A mutating webhook may drop the field: say so rather than report a conversion that did not happen.
      if (written.spec?.nodeAffinity == null) {
        countZonalUpgrade('error');
        d.log.warn('the API server accepted the nodeAffinity patch but the volume has none', { volume: name });
        d.events.event(written, 'Warning', REASON_NOT_KEPT, `the API server accepted spec.nodeAffinity (${decision.summary}) but the stored volume has none: an admission webhook may have removed it`);
        return;
      }
      // Or rewrite it: the affinity is then the webhook's, not the one this Event would describe.
      if (!sameAffinity(written.spec.nodeAffinity, decision.nodeAffinity)) {
        countZonalUpgrade('error');
        d.log.warn('the API server accepted the nodeAffinity patch but stored another affinity', { volume: name, sent: decision.summary });
        d.events.event(written, 'Warning', REASON_NOT_KEPT, `the API server accepted spec.nodeAffinity (${decision.summary}) but the stored volume has another: an admission webhook may have changed it`);
        return;
      }
      d.log.info('set nodeAffinity from zonal labels', { volume: name, nodeAffinity: decision.summary });
      countZonalUpgrade('upgraded');
      d.events.event(written, 'Normal', REASON_CONVERTED, `set spec.nodeAffinity from zone/region labels: ${decision.summary}`);
      return;
    }
  }
}

/** The same affinity as the API server stores it: empty lists and unset fields are left out (omitempty). */
function sameAffinity(stored: unknown, sent: unknown): boolean {
  const plain = (x: unknown): unknown => JSON.parse(JSON.stringify(x, (_k, v: unknown) => (Array.isArray(v) && v.length === 0 ? undefined : v)) ?? 'null');
  return isDeepStrictEqual(plain(stored), plain(sent));
}

/**
 * A 422 from the API server's validation of the affinity this loop wrote: every cause names a field
 * under `spec.nodeAffinity`, the only field the patch sets, and the same write is refused every time
 * until the labels it is built from change. An admission policy's denial names no field (its cause
 * has only a message: validating/dispatcher.go in k8s.io/apiserver); another field named (a legacy
 * volume's, which every update re-validates, or a webhook's own cause) may be fixed without any
 * change this loop watches.
 */
function namesOnlyAffinity(err: unknown): boolean {
  const causes = err instanceof KubeApiError ? (err.status.details?.causes ?? []) : [];
  return causes.length > 0 && causes.every((c) => !!c.field && (c.field === 'spec.nodeAffinity' || c.field.startsWith('spec.nodeAffinity.')));
}

import { counter, objectKey } from '@topovol/shared';
import type { EventRecorder, Informer, KubeObject, Logger, PersistentVolume } from '@topovol/shared';
import { Reasons } from './binder-reasons.js';

/** The field manager of kube-controller-manager's writes (its user agent's first word). */
export const UPSTREAM_MANAGER = 'kube-controller-manager';

const secondBinderWrites = counter<'kind'>({
  name: 'topovol_pv_binder_second_binder_writes_total',
  help: "Bindings this process saw kube-controller-manager's binder write while it ran (a volume's claimRef; kind is always volume): both binders run, which can release volumes (docs/install.md).",
  labelNames: ['kind'],
});

type Fields = { [k: string]: Fields | undefined };

function ownsField(fieldsV1: unknown, path: readonly string[]): boolean {
  let at = fieldsV1 as Fields | undefined;
  for (const p of path) {
    if (typeof at !== 'object' || at === null) return false;
    at = at[p];
  }
  return at !== undefined;
}

/**
 * Whether this object's binding was just written by kube-controller-manager's binder: the cached copy
 * (seen by this process, unbound) did not have it, the new one does, and kube-controller-manager's
 * field manager owns the field. First sightings (a list after a start) are history, not a second
 * binder at work; a hand-made binding (kubectl) has another manager. Only a volume's claimRef
 * counts: a field manager is whatever name the writer gives (`kubectl --field-manager`), and a
 * claim's volumeName is written by anyone who may edit claims in its namespace, so a tenant could
 * raise the alert at will. Volumes are written only by the privileged, and a second binder taking a
 * volume the other did not is the harm the report is for (a claim-only write completes a binding
 * the scheduler pre-bound, the same volume either binder would take).
 */
export function boundByUpstream(raw: KubeObject, cached: KubeObject | undefined): boolean {
  // Not seen before, or seen as another object of that name: history, not a binder at work now.
  if (!cached || cached.metadata?.uid !== raw.metadata?.uid) return false;
  const was = (cached as PersistentVolume).spec?.claimRef;
  const now = (raw as PersistentVolume).spec?.claimRef;
  if (was || !now) return false;
  return (raw.metadata?.managedFields ?? []).some((m) => m.manager === UPSTREAM_MANAGER && m.operation === 'Update' && ownsField(m.fieldsV1, ['f:spec', 'f:claimRef']));
}

/**
 * Reports kube-controller-manager's binder at work next to this one, which it cannot prevent (the
 * two hold different Leases): both bind the same waiting claim to different volumes, and the
 * volume whose claim write lost goes Released (docs/install.md, "one binder per cluster"). A Warning
 * Event on the object, an error log line and a metric, for each binding it sees written while
 * `leading()`: standbys watch the same objects, and would record every Event once more each.
 */
export function watchForSecondBinder(
  pvs: Pick<Informer<PersistentVolume>, 'addRawObserver'>,
  events: Pick<EventRecorder, 'event'>,
  log: Logger,
  leading: () => boolean,
): void {
  const report = (raw: KubeObject): void => {
    if (!leading()) return;
    secondBinderWrites.inc({ kind: 'volume' });
    log.error('another binder is running', { kind: 'volume', object: objectKey(raw), manager: UPSTREAM_MANAGER });
    events.event(raw, 'Warning', Reasons.SecondBinder, `kube-controller-manager's persistentvolume-binder-controller bound this volume while Topovol's pv-binder runs: run one binder (kube-controller-manager --controllers=*,-persistentvolume-binder-controller), or two binders may bind one claim to two volumes and release the other`);
  };
  // managedFields only of cached volumes (boundByUpstream reads none of a first sighting's), and
  // only kube-controller-manager's entries: the binder's own writes' echoes come without them.
  pvs.addRawObserver(
    (raw, cached) => {
      if (boundByUpstream(raw, cached)) report(raw);
    },
    { managedFields: 'cached', managers: [UPSTREAM_MANAGER] },
  );
}

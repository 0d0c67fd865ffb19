import { ANN_BIND_COMPLETED, ANN_BOUND_BY_CONTROLLER, dropManagedFields, failpoint, mergePatchDiff, projectClaim, Resources } from '@topovol/shared';
import type { EventRecorder, KubeClient, Logger, PersistentVolume, PersistentVolumeClaim } from '@topovol/shared';
import type { BinderAction } from './actions.js';
import type { AssumeCache } from './assume-cache.js';
import { claimStatusFor } from './claim-status.js';
import { claimMayHaveBeenBound } from './orphaned-bind.js';
import type { ClaimPhase } from './claim-status.js';

/** The client calls the binder's actuator makes: all writes with a precondition (see BinderActuator). */
export type BinderWrites = Pick<KubeClient, 'replace' | 'replaceStatus' | 'patch'>;

export interface ActuatorDeps {
  client: BinderWrites;
  events: Pick<EventRecorder, 'event'>;
  volumes: AssumeCache<PersistentVolume>;
  claims: AssumeCache<PersistentVolumeClaim>;
  log: Logger;
  dryRun: boolean;
}

// Objects from the caches are shared: writes send new objects that copy what they change (spread
// copies on the hot path, a deep clone where nested fields are deleted), never mutate them.
const clone = <T>(o: T): T => structuredClone(o);
// Every answer is parsed without its managedFields (cut from the text first), as the caches hold
// objects: parsing them only to drop them was a tenth of the binder's JSON work per write.
const ANSWER = { withoutManagedFields: true } as const;
const claimKeyOf = (c: PersistentVolumeClaim): string => `${c.metadata?.namespace}/${c.metadata?.name}`;

/**
 * Performs the binder's actions in order through the shared client, and only writes. Every write
 * carries the resourceVersion the decision saw: a PUT of the volume, a merge patch of a claim (the
 * claim cache holds a projection, see projectClaim), or a PUT of a claim's status built on the whole
 * claim the server has just answered. A stale decision fails with Conflict and is retried on fresh
 * data: no volume is ever bound to two claims.
 * What no precondition can guard (Released, Lost, a selected-node's removal) the glue has confirmed
 * on the server before handing the plan over (verify-on-server.ts).
 */
export class BinderActuator {
  constructor(private readonly d: ActuatorDeps) {}

  async run(actions: BinderAction[]): Promise<void> {
    // Later actions about the same object must build on the result of earlier writes.
    const latestVolume = new Map<string, PersistentVolume>();
    const latestClaim = new Map<string, PersistentVolumeClaim>();
    const vol = (v: PersistentVolume): PersistentVolume => latestVolume.get(v.metadata!.name!) ?? v;
    const clm = (c: PersistentVolumeClaim): PersistentVolumeClaim => latestClaim.get(claimKeyOf(c)) ?? c;
    // The answer without managedFields, as the informer caches volumes: a PUT built from it then
    // sends none, so the server keeps its own (an absent list is not a reset) and the body is
    // about half the size.
    const wroteVolume = (answer: PersistentVolume): void => {
      const v = dropManagedFields(answer);
      latestVolume.set(v.metadata!.name!, v);
      this.d.volumes.assume(v.metadata!.name!, v);
    };
    // Cached as the informer caches claims: the server's answer is the whole claim.
    const wroteClaim = (written: PersistentVolumeClaim): void => {
      const c = projectClaim(written);
      latestClaim.set(claimKeyOf(c), c);
      this.d.claims.assume(claimKeyOf(c), c);
    };

    for (const a of actions) {
      if (a.kind === 'requeueAfter' || a.kind === 'noteSelectedNodeIssue') continue;
      if (this.d.dryRun && a.kind !== 'event') {
        this.d.log.info('dry-run: would act', { action: a.kind, ...describe(a) });
        continue;
      }
      switch (a.kind) {
        case 'bindVolume': {
          const v = vol(a.volume);
          const claim = clm(a.claim);
          let next = v;
          const ref = v.spec?.claimRef;
          const markBound = async (x: PersistentVolume): Promise<PersistentVolume> => {
            const written = await this.d.client.replaceStatus(Resources.persistentVolumes, { ...x, status: { ...x.status, phase: 'Bound', message: undefined } }, ANSWER);
            wroteVolume(written);
            return written;
          };
          // A claim that may have been Bound to this volume and used it re-binds it phase first, so
          // that an Available volume with a claimRef always means a binding that never reached its
          // claim (bindingUnfinished, orphaned-bind.ts).
          if (claimMayHaveBeenBound(claim) && claim.spec?.volumeName === v.metadata?.name && next.status?.phase !== 'Bound') {
            next = await markBound(next);
            failpoint('binder-volume-phase-first', v.metadata?.name);
          }
          const missingMark = a.boundByController && v.metadata?.annotations?.[ANN_BOUND_BY_CONTROLLER] === undefined;
          if (!ref || ref.uid !== claim.metadata?.uid || ref.name !== claim.metadata?.name || ref.namespace !== claim.metadata?.namespace || missingMark) {
            const claimRef = {
              kind: 'PersistentVolumeClaim',
              apiVersion: 'v1',
              namespace: claim.metadata?.namespace,
              name: claim.metadata?.name,
              uid: claim.metadata?.uid,
              resourceVersion: claim.metadata?.resourceVersion,
            };
            const metadata = missingMark ? { ...next.metadata, annotations: { ...next.metadata?.annotations, [ANN_BOUND_BY_CONTROLLER]: 'yes' } } : next.metadata;
            next = await this.d.client.replace(Resources.persistentVolumes, { ...next, metadata, spec: { ...next.spec, claimRef } }, ANSWER);
            wroteVolume(next);
            failpoint('binder-volume-claimref', v.metadata?.name);
          }
          if (next.status?.phase !== 'Bound') {
            await markBound(next);
            failpoint('binder-volume-bound', v.metadata?.name);
          }
          break;
        }
        case 'bindClaim': {
          const c = clm(a.claim);
          const v = vol(a.volume);
          let next = c;
          // The server's answer to the bind is the whole claim: its status is then written with a
          // PUT of that answer (cheaper for kube-apiserver than a patch; hack/bench/README.md,
          // "Claim writes"), never of the projection the cache holds.
          let whole = false;
          const ann = c.metadata?.annotations ?? {};
          if (c.spec?.volumeName !== v.metadata?.name || ann[ANN_BIND_COMPLETED] === undefined || (a.boundByController && ann[ANN_BOUND_BY_CONTROLLER] === undefined)) {
            // Only the absent marks are sent (upstream sets a mark only when it is absent), with the
            // resourceVersion as precondition: a merge patch, not a PUT of the cached claim, so the
            // fields the claim cache does not keep (labels, finalizers, other annotations) are the
            // server's and never written back from a projection.
            const missing: Record<string, string> = {};
            if (ann[ANN_BIND_COMPLETED] === undefined) missing[ANN_BIND_COMPLETED] = 'yes';
            if (a.boundByController && ann[ANN_BOUND_BY_CONTROLLER] === undefined) missing[ANN_BOUND_BY_CONTROLLER] = 'yes';
            const metadata = { resourceVersion: c.metadata?.resourceVersion, ...(Object.keys(missing).length > 0 ? { annotations: missing } : {}) };
            next = dropManagedFields(await this.d.client.patch(Resources.persistentVolumeClaims, c.metadata!.name!, c.metadata!.namespace, 'merge', { metadata, spec: { volumeName: v.metadata?.name } }, ANSWER));
            whole = true;
            wroteClaim(next);
            failpoint('binder-claim-volumename', v.metadata?.name);
          }
          wroteClaim(await this.writeClaimStatus(next, 'Bound', v, whole));
          break;
        }
        case 'claimPhase':
          wroteClaim(await this.writeClaimStatus(clm(a.claim), a.phase, a.volume && vol(a.volume)));
          break;
        case 'volumePhase': {
          const v = vol(a.volume);
          // Upstream's updateVolumePhase: the message is the Event's (or cleared); reason is left alone.
          wroteVolume(await this.d.client.replaceStatus(Resources.persistentVolumes, { ...v, status: { ...v.status, phase: a.phase, message: a.message } }, ANSWER));
          break;
        }
        case 'unbindVolume': {
          const v = clone(vol(a.volume));
          if (a.keepClaimRef && v.spec?.claimRef) v.spec.claimRef = { ...v.spec.claimRef, uid: undefined };
          else {
            delete v.spec!.claimRef;
            if (v.metadata?.annotations) delete v.metadata.annotations[ANN_BOUND_BY_CONTROLLER];
          }
          const written = await this.d.client.replace(Resources.persistentVolumes, v, ANSWER);
          wroteVolume(written);
          failpoint('binder-volume-unbound', v.metadata?.name);
          if (written.status?.phase !== 'Available') {
            const s = clone(written);
            s.status = { ...s.status, phase: 'Available', message: undefined };
            wroteVolume(await this.d.client.replaceStatus(Resources.persistentVolumes, s, ANSWER));
          }
          break;
        }
        case 'annotateClaim': {
          const c = clm(a.claim);
          const annotations: Record<string, string | null> = { ...a.set };
          for (const k of a.remove ?? []) annotations[k] = null;
          // The resourceVersion in a merge patch is a precondition.
          wroteClaim(
            await this.d.client.patch(Resources.persistentVolumeClaims, c.metadata!.name!, c.metadata!.namespace, 'merge', {
              metadata: { resourceVersion: c.metadata?.resourceVersion, annotations },
            }, ANSWER),
          );
          break;
        }
        case 'updateVolumeMeta': {
          const v = clone(vol(a.volume));
          const annotations = { ...v.metadata?.annotations, ...a.set };
          for (const k of a.remove ?? []) delete annotations[k];
          v.metadata = { ...v.metadata, annotations, finalizers: (v.metadata?.finalizers ?? []).filter((f) => !(a.removeFinalizers ?? []).includes(f)) };
          wroteVolume(await this.d.client.replace(Resources.persistentVolumes, v, ANSWER));
          break;
        }
        case 'setClaimClass': {
          const c = clm(a.claim);
          wroteClaim(
            await this.d.client.patch(Resources.persistentVolumeClaims, c.metadata!.name!, c.metadata!.namespace, 'merge', {
              metadata: { resourceVersion: c.metadata?.resourceVersion },
              spec: { storageClassName: a.storageClassName },
            }, ANSWER),
          );
          break;
        }
        case 'event': {
          // A Warning answers bad input or a refusal: logged as well as recorded (the recorder logs
          // at debug), once per Event the spam filter lets through, so a loop re-saying it floods no log.
          const recorded = this.d.events.event(a.target, a.type, a.reason, a.message);
          if (recorded && a.type === 'Warning') {
            const md = a.target.metadata;
            const message = a.message.length > 1024 ? `${a.message.slice(0, 1023)}…` : a.message;
            this.d.log.info('warning', { object: `${a.target.kind}/${md?.namespace ? `${md.namespace}/` : ''}${md?.name ?? ''}`, reason: a.reason, message });
          }
          break;
        }
      }
    }
  }

  /**
   * `whole`: `c` is the server's whole claim, just returned by a write, so its status may be written
   * with a PUT carrying its resourceVersion, as upstream's updateClaimStatus does.
   */
  private async writeClaimStatus(c: PersistentVolumeClaim, phase: ClaimPhase, v?: PersistentVolume, whole = false): Promise<PersistentVolumeClaim> {
    const status = claimStatusFor(c, phase, v);
    if (!status) return c;
    if (whole) return this.d.client.replaceStatus(Resources.persistentVolumeClaims, { ...c, status }, ANSWER);
    // A merge patch of what changed (nulls for what Pending and Lost clear) with the
    // resourceVersion: status fields the cache does not keep, such as conditions, stay the server's.
    const diff = mergePatchDiff(c.status ?? {}, status) ?? {};
    return this.d.client.patch(Resources.persistentVolumeClaims, c.metadata!.name!, c.metadata!.namespace, 'merge', { metadata: { resourceVersion: c.metadata?.resourceVersion }, status: diff }, { subresource: 'status', ...ANSWER });
  }
}

function describe(a: BinderAction): Record<string, string | undefined> {
  switch (a.kind) {
    case 'bindVolume':
    case 'bindClaim':
      return { volume: a.volume.metadata?.name, claim: claimKeyOf(a.claim) };
    case 'volumePhase':
      return { volume: a.volume.metadata?.name, phase: a.phase };
    case 'unbindVolume':
      return { volume: a.volume.metadata?.name };
    case 'updateVolumeMeta':
      return { volume: a.volume.metadata?.name, set: JSON.stringify(a.set ?? {}), remove: (a.remove ?? []).join(','), removeFinalizers: (a.removeFinalizers ?? []).join(',') };
    case 'claimPhase':
      return { claim: claimKeyOf(a.claim), phase: a.phase };
    case 'annotateClaim':
      return { claim: claimKeyOf(a.claim), set: JSON.stringify(a.set ?? {}), remove: (a.remove ?? []).join(',') };
    case 'setClaimClass':
      return { claim: claimKeyOf(a.claim), storageClassName: a.storageClassName };
    case 'event':
      return { reason: a.reason };
    case 'requeueAfter':
      return { ms: String(a.ms) };
    case 'noteSelectedNodeIssue':
      return { claim: claimKeyOf(a.claim), issue: a.issue };
  }
}

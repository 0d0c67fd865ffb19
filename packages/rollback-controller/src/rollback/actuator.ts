import { isAlreadyExists, isConflict, isNotFound, Resources } from '@topovol/shared';
import type { EventRecorder, KubeClient, Logger, PersistentVolume, PersistentVolumeClaim, Pod } from '@topovol/shared';
import { claimTemplate, decodeTemplates, encodeTemplates } from './claim-template.js';
import type { MarkDecision } from './decide-mark.js';
import type { RollbackDecision } from './decide-rollback.js';
import { ANN_PROVISIONED_FOR_NODE, ANN_PROVISIONED_FOR_POD, ANN_RECREATE_CLAIMS, ANN_USED_BECAUSE, LABEL_USAGE, Reasons } from './marks.js';
import { countMark, countRecreated, countRollback } from './rollback-metrics.js';

export interface RollbackActuatorDeps {
  client: KubeClient;
  events: EventRecorder;
  log: Logger;
  dryRun: boolean;
  /** In dry-run, marks are not written; they are handed here so later decisions can build on them. */
  rememberDryRunMark?: (volumeName: string, labels: Record<string, string>, annotations: Record<string, string>) => void;
}

/**
 * Carries out the rollback controller's decisions. Every write carries a precondition
 * (resourceVersion in patches, uid + resourceVersion on deletes): a pod that starts, or any other
 * change between decision and write, makes the write fail instead of racing it.
 */
export class RollbackActuator {
  constructor(private readonly d: RollbackActuatorDeps) {}

  async mark(m: MarkDecision): Promise<void> {
    if (m.kind === 'none') return;
    const v = m.volume;
    const labels: Record<string, string> = { [LABEL_USAGE]: m.kind === 'markUnused' ? 'unused' : 'used' };
    const annotations: Record<string, string> = m.kind === 'markUnused' ? { [ANN_PROVISIONED_FOR_NODE]: m.node, [ANN_PROVISIONED_FOR_POD]: m.podUid } : { [ANN_USED_BECAUSE]: m.because };
    const patch = { metadata: { resourceVersion: v.metadata?.resourceVersion, labels, annotations } };
    const message = m.kind === 'markUnused' ? `provisioned for node ${m.node} for pod ${m.podName}, which has not run: can be rolled back while unused` : `marked used for good: ${m.because}`;
    this.d.log.info(m.kind === 'markUnused' ? 'marking volume unused' : 'marking volume used', { volume: v.metadata?.name, dryRun: this.d.dryRun, message });
    this.d.events.event(v, 'Normal', m.kind === 'markUnused' ? Reasons.MarkedUnused : Reasons.MarkedUsed, message);
    if (this.d.dryRun) {
      this.d.rememberDryRunMark?.(v.metadata!.name!, patch.metadata.labels, patch.metadata.annotations);
      return;
    }
    await this.d.client.patch(Resources.persistentVolumes, v.metadata!.name!, undefined, 'merge', patch);
    countMark(m.kind === 'markUnused' ? 'unused' : 'used');
  }

  /** Returns a requeue delay when the decision asks to look again. */
  async rollback(pod: Pod, r: RollbackDecision): Promise<number | undefined> {
    switch (r.kind) {
      case 'none':
        return undefined;
      case 'wait':
        this.d.log.debug('pod stuck, within grace period', { pod: podKey(pod), why: r.why, ms: r.ms });
        return r.ms;
      case 'refuse':
        this.d.log.info('rollback refused', { pod: podKey(pod), why: r.why });
        this.d.events.event(pod, 'Warning', Reasons.RollbackRefused, `not rolling back provisioning: ${r.why}`);
        countRollback('refused');
        return undefined;
      case 'rollback':
        return this.doRollback(pod, r.pinned, r.why);
    }
  }

  private async doRollback(pod: Pod, pinned: { claim: PersistentVolumeClaim; volume: PersistentVolume; node: string }[], why: string): Promise<number | undefined> {
    const names = pinned.map((p) => p.claim.metadata?.name).join(', ');
    const message = `pod cannot run on node ${pinned[0]!.node} (${why}); rolling back unused volume(s) of claim(s) ${names} so that it can be scheduled elsewhere`;
    this.d.log.info('rolling back provisioning', { pod: podKey(pod), claims: names, why, dryRun: this.d.dryRun });
    this.d.events.event(pod, 'Normal', Reasons.RollbackStarted, message);
    for (const p of pinned) {
      this.d.events.event(p.claim, 'Normal', Reasons.RollbackStarted, `deleting and recreating this claim: its volume ${p.volume.metadata?.name} was provisioned for node ${p.node} and never used; ${why}`);
      this.d.events.event(p.volume, 'Normal', Reasons.RollbackStarted, `claim ${p.claim.metadata?.name} is recreated; this unused volume is released to its reclaim policy (${p.volume.spec?.persistentVolumeReclaimPolicy ?? 'Delete'})`);
    }
    if (this.d.dryRun) {
      countRollback('dry_run');
      return undefined;
    }
    // First record what to recreate, on the pod (precondition: the pod as decided on).
    const templates = [...decodeTemplates(pod.metadata?.annotations?.[ANN_RECREATE_CLAIMS]), ...pinned.map((p) => claimTemplate(p.claim))];
    let written: Pod;
    try {
      written = await this.d.client.patch<Pod>(Resources.pods, pod.metadata!.name!, pod.metadata!.namespace, 'merge', {
        metadata: { resourceVersion: pod.metadata?.resourceVersion, annotations: { [ANN_RECREATE_CLAIMS]: encodeTemplates(templates) } },
      });
    } catch (err) {
      if (isConflict(err) || isNotFound(err)) return this.aborted(pod, 'the pod changed before the rollback started');
      throw err;
    }
    let deleted = 0;
    for (const p of pinned) {
      try {
        await this.d.client.delete(Resources.persistentVolumeClaims, p.claim.metadata!.name!, p.claim.metadata!.namespace, {
          preconditions: { uid: p.claim.metadata?.uid, resourceVersion: p.claim.metadata?.resourceVersion },
        });
        deleted++;
      } catch (err) {
        if (isConflict(err) || isNotFound(err)) {
          this.aborted(pod, `claim ${p.claim.metadata?.name} changed before it could be deleted`);
          continue;
        }
        throw err;
      }
    }
    if (deleted > 0) countRollback('rolled_back');
    return this.recreate(written);
  }

  private aborted(pod: Pod, why: string): undefined {
    this.d.log.info('rollback aborted', { pod: podKey(pod), why });
    this.d.events.event(pod, 'Normal', Reasons.RollbackAborted, `rollback aborted: ${why}; will decide again on fresh state`);
    countRollback('aborted');
    return undefined;
  }

  /**
   * Recreates the claims recorded on the pod once the old ones are gone; drops entries whose claim
   * was not deleted after all (aborted) or was already recreated. Returns a delay while an old
   * claim is still terminating (its protection finalizer).
   */
  async recreate(pod: Pod): Promise<number | undefined> {
    const templates = decodeTemplates(pod.metadata?.annotations?.[ANN_RECREATE_CLAIMS]);
    if (templates.length === 0 || this.d.dryRun) return undefined;
    const pending = [];
    for (const t of templates) {
      const name = t.claim.metadata!.name!;
      const ns = t.claim.metadata!.namespace ?? pod.metadata?.namespace;
      let live: PersistentVolumeClaim | undefined;
      try {
        live = await this.d.client.get<PersistentVolumeClaim>(Resources.persistentVolumeClaims, name, ns);
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
      if (live && live.metadata?.uid === t.replacesUid && live.metadata?.deletionTimestamp) {
        pending.push(t);
        continue;
      }
      if (!live) {
        try {
          const c = await this.d.client.create<PersistentVolumeClaim>(Resources.persistentVolumeClaims, t.claim);
          countRecreated();
          this.d.events.event(c, 'Normal', Reasons.ClaimRecreated, `recreated by a provisioning rollback for pod ${pod.metadata?.name}; Pending until the pod is scheduled again`);
        } catch (err) {
          if (!isAlreadyExists(err)) throw err;
        }
      }
    }
    const annotation = pending.length > 0 ? encodeTemplates(pending) : null;
    await this.d.client
      .patch(Resources.pods, pod.metadata!.name!, pod.metadata!.namespace, 'merge', { metadata: { annotations: { [ANN_RECREATE_CLAIMS]: annotation } } })
      .catch((err: unknown) => {
        if (!isNotFound(err)) throw err;
      });
    return pending.length > 0 ? 1000 : undefined;
  }
}

const podKey = (p: Pod): string => `${p.metadata?.namespace}/${p.metadata?.name}`;

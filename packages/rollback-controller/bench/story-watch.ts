import { Informer, Resources } from '@topovol/shared';
import type { Event, KubeClient, PersistentVolume, PersistentVolumeClaim, Pod } from '@topovol/shared';
import { CLAIMS, NODE_A, NODE_B, POD, volumeNode } from './story-objects.js';

const SELECTED_NODE = 'volume.kubernetes.io/selected-node';
/** docs/rollback.md: the label the rollback loop puts on a volume it has seen evidence of use for. */
const USAGE_LABEL = 'rollback.topovol.io/usage';

/** Wall-clock ms (Date.now()) at which the bench's watches first saw each step of one story. */
export interface Milestones {
  /** The scheduler's first choice: a claim got selected-node a. */
  selectedA?: number;
  /** A claim's volume was created on node a. */
  provisionedOnA?: number;
  /** t0: the first ProvisioningFailed Event on a claim. */
  failed?: number;
  /** The rollback loop marked the node-a volume used (twin). */
  markedUsed?: number;
  /** ProvisioningRollback Event on the pod. */
  rollback?: number;
  /** ProvisioningRollbackRefused Event on the pod. */
  refused?: number;
  /** A claim seen again under its name with a new uid. */
  claimRecreated?: number;
  /** Both claims carry selected-node b. */
  selectedB?: number;
  /** Both claims Bound to volumes on node b. */
  boundOnB?: number;
  /** The pod bound to node b (spec.nodeName). */
  podOnB?: number;
  /** Every volume provisioned on node a for the story is gone. */
  volumesOnAGone?: number;
  /** t1: pod on b, both claims Bound on b and the node-a volume gone, all at once. */
  recovered?: number;
}

export interface StoryFacts {
  provisionedClaim?: string;
  failedClaim?: string;
  failedMessage?: string;
  /** The failure Event's own timestamp (second resolution), as the provisioner recorded it. */
  failedEventTime?: string;
  rollbackMessage?: string;
  refusedMessage?: string;
  /** ProvisioningFailed Events (counting repeats) and rollbacks seen: more than one rollback means the pod went round again. */
  failures: number;
  rollbacks: number;
  volumesOnA: Set<string>;
}

/**
 * Watches one story's namespace (pods, claims, Events) and every PV, recording when each
 * milestone was first seen. Started before the story's objects exist, so no transition is missed.
 */
export class StoryWatch {
  readonly at: Milestones = {};
  readonly facts: StoryFacts = { failures: 0, rollbacks: 0, volumesOnA: new Set() };
  /** Called once, when the first node-a volume is seen (the twin writes its evidence then). */
  onVolumeOnA?: (pv: PersistentVolume) => void;
  private readonly pods: Informer<Pod>;
  private readonly claims: Informer<PersistentVolumeClaim>;
  private readonly events: Informer<Event>;
  private readonly volumes: Informer<PersistentVolume>;
  private readonly firstUid = new Map<string, string>();
  private readonly countedEvents = new Map<string, number>();

  constructor(
    client: KubeClient,
    private readonly ns: string,
  ) {
    this.pods = new Informer<Pod>(client, Resources.pods, { namespace: ns });
    this.claims = new Informer<PersistentVolumeClaim>(client, Resources.persistentVolumeClaims, { namespace: ns });
    this.events = new Informer<Event>(client, Resources.events, { namespace: ns });
    this.volumes = new Informer<PersistentVolume>(client, Resources.persistentVolumes);
    this.pods.addEventHandler({ onAdd: (p) => this.pod(p), onUpdate: (_o, p) => this.pod(p) });
    this.claims.addEventHandler({ onAdd: (c) => this.claim(c), onUpdate: (_o, c) => this.claim(c) });
    this.events.addEventHandler({ onAdd: (e) => this.event(e), onUpdate: (_o, e) => this.event(e) });
    this.volumes.addEventHandler({ onAdd: (v) => this.volume(v), onUpdate: (_o, v) => this.volume(v), onDelete: () => this.evaluate() });
  }

  async start(): Promise<void> {
    for (const i of [this.pods, this.claims, this.events, this.volumes]) i.start();
    await Promise.all([this.pods, this.claims, this.events, this.volumes].map((i) => i.waitForSync()));
  }

  async stop(): Promise<void> {
    await Promise.all([this.pods, this.claims, this.events, this.volumes].map((i) => i.stop()));
  }

  /** Volumes of this story's claims that still exist. */
  liveVolumes(): PersistentVolume[] {
    return this.volumes.cache.list().filter((v) => v.spec?.claimRef?.namespace === this.ns);
  }

  private mark(k: keyof Milestones): void {
    this.at[k] ??= Date.now();
  }

  private pod(p: Pod): void {
    if (p.metadata?.name === POD && p.spec?.nodeName === NODE_B) this.mark('podOnB');
    this.evaluate();
  }

  private claim(c: PersistentVolumeClaim): void {
    const name = c.metadata?.name ?? '';
    const uid = c.metadata?.uid ?? '';
    const first = this.firstUid.get(name);
    if (first === undefined) this.firstUid.set(name, uid);
    else if (first !== uid) this.mark('claimRecreated');
    if (c.metadata?.annotations?.[SELECTED_NODE] === NODE_A) this.mark('selectedA');
    this.evaluate();
  }

  private event(e: Event): void {
    const key = e.metadata?.uid ?? '';
    const count = e.count ?? 1;
    const added = count - (this.countedEvents.get(key) ?? 0);
    this.countedEvents.set(key, count);
    const kind = e.involvedObject?.kind;
    if (e.reason === 'ProvisioningFailed' && kind === 'PersistentVolumeClaim') {
      this.facts.failures += Math.max(0, added);
      if (this.at.failed === undefined) {
        this.mark('failed');
        this.facts.failedClaim = e.involvedObject.name;
        this.facts.failedMessage = e.message;
        this.facts.failedEventTime = e.eventTime ?? e.firstTimestamp ?? undefined;
      }
    }
    if (kind !== 'Pod') return;
    if (e.reason === 'ProvisioningRollback') {
      this.facts.rollbacks += Math.max(0, added);
      if (this.at.rollback === undefined) {
        this.mark('rollback');
        this.facts.rollbackMessage = e.message;
      }
    }
    if (e.reason === 'ProvisioningRollbackRefused' && this.at.refused === undefined) {
      this.mark('refused');
      this.facts.refusedMessage = e.message;
    }
  }

  private volume(v: PersistentVolume): void {
    if (v.spec?.claimRef?.namespace !== this.ns) return;
    if (volumeNode(v) === NODE_A && !this.facts.volumesOnA.has(v.metadata?.name ?? '')) {
      this.facts.volumesOnA.add(v.metadata?.name ?? '');
      if (this.at.provisionedOnA === undefined) {
        this.mark('provisionedOnA');
        this.facts.provisionedClaim = v.spec.claimRef.name;
        this.onVolumeOnA?.(v);
      }
    }
    if (v.metadata?.labels?.[USAGE_LABEL] === 'used') this.mark('markedUsed');
    this.evaluate();
  }

  /** The compound milestones, re-checked on every change. */
  private evaluate(): void {
    const claims = CLAIMS.map((n) => this.claims.cache.get(`${this.ns}/${n}`));
    if (claims.every((c) => c?.metadata?.annotations?.[SELECTED_NODE] === NODE_B)) this.mark('selectedB');
    const onB = claims.every((c) => {
      const v = c?.spec?.volumeName ? this.volumes.cache.get(c.spec.volumeName) : undefined;
      return c?.status?.phase === 'Bound' && v !== undefined && volumeNode(v) === NODE_B;
    });
    if (onB) this.mark('boundOnB');
    const aGone = this.facts.volumesOnA.size > 0 && [...this.facts.volumesOnA].every((n) => !this.volumes.cache.has(n));
    if (aGone) this.mark('volumesOnAGone');
    const pod = this.pods.cache.get(`${this.ns}/${POD}`);
    if (onB && aGone && pod?.spec?.nodeName === NODE_B) this.mark('recovered');
  }
}

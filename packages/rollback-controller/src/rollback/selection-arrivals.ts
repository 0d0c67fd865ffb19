import { ANN_SELECTED_NODE } from '@topovol/shared';
import type { Event, PersistentVolumeClaim } from '@topovol/shared';

/**
 * The order in which this process saw claims' selected nodes and their ProvisioningFailed Events
 * arrive, so that a failure is read as about the claim's current selected node only if it came
 * after that selection. A claim keeps the Events of every earlier attempt (another node, before the
 * provisioner removed the annotation and the scheduler chose again, or an earlier pod's), and their
 * messages do not name the node (a CSI driver's ResourceExhausted says nothing of it). The Events'
 * own times carry the provisioner's clock and the annotation has none, so arrival order here is what
 * relates the two; it errs one way only: an Event delivered before the selection it is about (the
 * claim watch lagging the Event watch) counts from its next occurrence, and what arrives before both
 * caches have listed counts as arrived together (not after). A relist keeps what it finds unchanged.
 */
export class SelectionArrivals {
  private seq = 0;
  /** By claim uid: its selected node and when it was first seen. */
  private readonly selections = new Map<string, { node: string; seq: number }>();
  /** By Event uid: the occurrence last seen and when it arrived. */
  private readonly failures = new Map<string, { occurrence: string; seq: number }>();

  /** @param live whether both caches have listed: before that every arrival is the same moment. */
  constructor(private readonly live: () => boolean) {}

  private next(): number {
    return this.live() ? ++this.seq : 0;
  }

  claimSeen(c: PersistentVolumeClaim): void {
    const uid = c.metadata?.uid ?? '';
    const node = c.metadata?.annotations?.[ANN_SELECTED_NODE];
    if (!node) {
      this.selections.delete(uid);
      return;
    }
    if (this.selections.get(uid)?.node !== node) this.selections.set(uid, { node, seq: this.next() });
  }

  claimGone(c: PersistentVolumeClaim): void {
    this.selections.delete(c.metadata?.uid ?? '');
  }

  failureSeen(e: Event): void {
    const uid = e.metadata?.uid ?? '';
    const occurrence = occurrenceOf(e);
    if (this.failures.get(uid)?.occurrence !== occurrence) this.failures.set(uid, { occurrence, seq: this.next() });
  }

  failureGone(e: Event): void {
    this.failures.delete(e.metadata?.uid ?? '');
  }

  /** Whether the failure's last occurrence arrived after the claim's current selected node did. */
  arrivedSinceSelected(claim: PersistentVolumeClaim, failure: Event): boolean {
    const selected = this.selections.get(claim.metadata?.uid ?? '');
    const arrived = this.failures.get(failure.metadata?.uid ?? '');
    return selected !== undefined && arrived !== undefined && selected.node === claim.metadata?.annotations?.[ANN_SELECTED_NODE] && arrived.seq > selected.seq;
  }

  get size(): number {
    return this.selections.size + this.failures.size;
  }
}

/**
 * What tells one occurrence of a failure from the next: a core/v1 recorder counts a repeat (same
 * message) on the same Event with a new lastTimestamp. An events.k8s.io/v1 series keeps its first
 * occurrence's message for every repeat, which may be another error: its repeats are not new
 * occurrences here (as in stuck-evidence.ts, which dates it by its first).
 */
const occurrenceOf = (e: Event): string => [e.message ?? '', e.lastTimestamp ?? '', e.eventTime ?? '', e.firstTimestamp ?? ''].join('\u0000');

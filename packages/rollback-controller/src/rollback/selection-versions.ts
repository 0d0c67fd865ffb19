import { ANN_SELECTED_NODE } from '@topovol/shared';
import type { Event, PersistentVolumeClaim } from '@topovol/shared';
import { compareResourceVersions } from './resource-version.js';

/**
 * Which of a claim's selected nodes a ProvisioningFailed Event is about. A claim keeps the Events
 * of every earlier attempt (another node, before the provisioner removed the annotation and the
 * scheduler chose again, or an earlier pod's), and their messages do not name the node (a CSI
 * driver's ResourceExhausted says nothing of it). What relates the two is the claim's
 * resourceVersion: the provisioner records the Event on its copy of the claim, and client-go's
 * event reference carries that copy's resourceVersion (`involvedObject.resourceVersion`;
 * k8s.io/client-go/tools/reference), which had the node it provisioned for. So a failure is about
 * the current selection only if that resourceVersion is at or past the one at which this process
 * first saw the claim with its current node (KEP-5504 orders one resource's resourceVersions).
 *
 * Not arrival order: the Events and the claims come on two watches that deliver in any order, an
 * Events relist delivers old Events anew, and a recorder writes an Event asynchronously (its
 * broadcaster, retried), possibly after the annotation's removal and the scheduler's next choice:
 * each made an earlier attempt's failure look like the current one's, and rolled the pinned volumes
 * back while the claim was being provisioned there.
 *
 * It errs one way only, towards "not about it": a failure without a comparable resourceVersion; a
 * repeat of an earlier attempt's Event (a recorder patches count and lastTimestamp, never the
 * reference); a selection first seen late (at start-up, after a claim relist, which may also hide
 * a removal and re-selection of the same node) and so at a resourceVersion past the provisioner's.
 * Such a failure still counts once the provisioner removes the selected node (its reschedule signal,
 * stuck-evidence.ts).
 */
export class SelectionVersions {
  /** By claim uid: its selected node, the resourceVersion it was first seen at, and whether a relist came since. */
  private readonly selections = new Map<string, { node: string; resourceVersion: string; relisted: boolean }>();

  claimSeen(c: PersistentVolumeClaim): void {
    const uid = c.metadata?.uid ?? '';
    const node = c.metadata?.annotations?.[ANN_SELECTED_NODE];
    if (!node) {
      this.selections.delete(uid);
      return;
    }
    const seen = this.selections.get(uid);
    // A claim changed across a relist may have had its node removed and set again: its selection
    // counts from this version.
    if (seen?.node !== node || seen.relisted) this.selections.set(uid, { node, resourceVersion: c.metadata?.resourceVersion ?? '', relisted: false });
  }

  claimGone(c: PersistentVolumeClaim): void {
    this.selections.delete(c.metadata?.uid ?? '');
  }

  /** The claims were listed again (a gap in their watch). */
  claimsRelisted(): void {
    for (const s of this.selections.values()) s.relisted = true;
  }

  /** Whether the failure was recorded on a copy of the claim that had its current selected node. */
  failedSinceSelected(claim: PersistentVolumeClaim, failure: Event): boolean {
    const selected = this.selections.get(claim.metadata?.uid ?? '');
    if (!selected || selected.node !== claim.metadata?.annotations?.[ANN_SELECTED_NODE]) return false;
    if (failure.involvedObject?.uid !== claim.metadata?.uid) return false;
    const order = compareResourceVersions(failure.involvedObject?.resourceVersion ?? '', selected.resourceVersion);
    return order !== undefined && order >= 0;
  }

  get size(): number {
    return this.selections.size;
  }
}

import type { CSINode, Logger } from '@topovol/shared';

type DriverEntry = NonNullable<NonNullable<CSINode['spec']>['drivers']>[number];

/** What `csiNodeOf` saw for the instance's node on its last call. */
type RegistrationState = 'registered' | 'kept' | 'never';

/**
 * Per-node mode: the driver's entry in this node's CSINode as last seen, used while kubelet lists
 * it no more. kubelet drops a driver from the CSINode when its node plugin's registration socket
 * goes (a plugin container restarting, an image update of the plugin alone), and re-adds it once
 * the plugin is back. external-provisioner's `--node-deployment --enable-capacity` takes its one
 * segment from the plugin's NodeGetInfo at start and keeps it (`NewFixedNodeTopology`,
 * pkg/capacity/topology/mock.go, used by cmd/csi-provisioner/csi-provisioner.go), so its objects
 * outlive such a restart; placing the node afresh from the CSINode instead deleted the node's
 * objects and kube-scheduler found no capacity on it until the plugin registered again.
 *
 * Kept for the life of the process, as upstream's segment is. The node itself going (deleted, or
 * being deleted) still removes its objects: `placeNodes` never sees it. Before the driver is first
 * seen registered there is nothing to keep, and the node's objects are left alone
 * (`waitsForRegistration`).
 */
export class KeptRegistration {
  private entry: DriverEntry | undefined;
  private last: RegistrationState = 'never';
  private waitLogged = false;

  constructor(
    private readonly driverName: string,
    private readonly node: string,
    private readonly log: Logger,
  ) {}

  /** The CSINode to place the node with: the current one, or one holding the kept entry. */
  csiNodeOf(current: CSINode | undefined): CSINode | undefined {
    const entry = current?.spec?.drivers?.find((d) => d.name === this.driverName);
    if (entry) this.entry = entry;
    this.moveTo(entry ? 'registered' : this.entry ? 'kept' : 'never');
    if (entry || !this.entry) return current;
    return { ...current, spec: { ...current?.spec, drivers: [...(current?.spec?.drivers ?? []), this.entry] } };
  }

  /** Logs the change either way once. */
  private moveTo(next: RegistrationState): void {
    if (next === this.last) return;
    const fields = { driver: this.driverName, node: this.node };
    if (next === 'kept') this.log.warn('the driver is not registered on this node (its CSINode does not list it, e.g. its node plugin is restarting): the node\'s capacity objects stay for the segment last registered, as external-provisioner --node-deployment keeps its segment', fields);
    else if (this.last === 'kept') this.log.info('the driver is registered on this node again', fields);
    this.last = next;
  }

  /**
   * Whether the node's objects are left as they are because the driver has not been seen registered
   * since this process started (`unplaced`: the node exists but got no segment). An instance that
   * starts while kubelet has the driver unregistered (the DaemonSet's pod replaced: the old
   * registrar's socket went with it) would otherwise delete the objects its predecessor left (owner
   * level 1 or -1 keeps them across pods) until the driver registers and is asked again; upstream's
   * segment, from NodeGetInfo, never depends on the registration. Logged once.
   */
  waitsForRegistration(unplaced: boolean): boolean {
    if (!unplaced || this.last !== 'never') return false;
    if (!this.waitLogged) this.log.info('the driver is not registered on this node yet (its CSINode does not list it): the node\'s existing capacity objects are left as they are until it is', { driver: this.driverName, node: this.node });
    this.waitLogged = true;
    return true;
  }
}

/** The CSINodes a sync places nodes with: per node, with the driver's kept registration (if any). */
export function csiNodeLookup(kept: KeptRegistration | undefined, csiNodes: { get(name: string): CSINode | undefined }): (name: string) => CSINode | undefined {
  return kept ? (n) => kept.csiNodeOf(csiNodes.get(n)) : (n) => csiNodes.get(n);
}

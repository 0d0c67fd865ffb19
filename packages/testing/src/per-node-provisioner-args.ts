export interface PerNodeProvisionerOptions {
  socket: string;
  kubeconfig: string;
  /** With capacity tracking: how often it polls (e.g. `60s`); absent, capacity is off. */
  capacityPollInterval?: string;
  verbosity?: number;
}

/**
 * external-provisioner as a per-node deployment (as csi-driver-host-path or TopoLVM deploy it):
 * it provisions only claims whose selected node is NODE_NAME, passes only that node's topology
 * (strict), never takes Immediate claims, and with capacity on publishes its node's
 * CSIStorageCapacity objects, owned by nobody (no Deployment or DaemonSet in a test)
 * (cmd/csi-provisioner/csi-provisioner.go, pkg/capacity/capacity.go).
 */
export function perNodeProvisionerArgs(o: PerNodeProvisionerOptions): string[] {
  const capacity = o.capacityPollInterval !== undefined;
  return [
    `--csi-address=${o.socket}`,
    `--kubeconfig=${o.kubeconfig}`,
    '--leader-election=false',
    '--node-deployment=true',
    '--node-deployment-immediate-binding=false',
    '--strict-topology=true',
    '--immediate-topology=false',
    `--enable-capacity=${capacity}`,
    ...(capacity ? [`--capacity-poll-interval=${o.capacityPollInterval}`, '--capacity-ownerref-level=-1'] : []),
    `--v=${o.verbosity ?? 3}`,
  ];
}

#!/usr/bin/env bash
# The per-node capacity benchmark (KEP-1472 per-node deployment): Topovol's capacity loop with
# --capacity-node-name against the CSI external-provisioner v6.3.0 with --node-deployment
# --enable-capacity, one instance of each per node (default 50 nodes x 5 StorageClasses), each
# contender on its own fresh etcd + kube-apiserver, one after the other. Prints the time from a
# volume change to the updated CSIStorageCapacity object (p50/p90/max) and the API writes per
# minute at rest, with the ratios. Results go to hack/bench/results/. Not a test: see
# hack/bench/README.md.
#
# usage: hack/bench/capacity.sh [--nodes N] [--classes C] [--changes K] [--poll-interval 1m]
#                               [--quiet-window 6m] [--pools per-class|shared]
#                               [--only topovol|upstream] [--record=false] [--help]
source "$(dirname "$0")/../lib/bootstrap.sh"
bootstrap

echo "==> control-plane binaries: etcd kube-apiserver kube-controller-manager" >&2
# The last line is the assets directory; passing it on means the bench never builds or waits on a build lock.
assets="$(bash hack/control-plane-binaries.sh etcd kube-apiserver kube-controller-manager | tail -n 1)"
export KUBEBUILDER_ASSETS="$assets"
echo "==> CSI binaries: csi-provisioner" >&2
csi_assets="$(bash hack/csi-binaries.sh csi-provisioner | tail -n 1)"
export TOPOVOL_CSI_ASSETS="$csi_assets"

echo "==> bench" >&2
# hack/bench/capacity-labels.sh runs its bench through this same set-up.
exec node "packages/capacity-controller/dist/bench/${TOPOVOL_CAPACITY_BENCH:-capacity-bench}.js" "$@"

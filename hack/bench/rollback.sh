#!/usr/bin/env bash
# The rollback benchmark: plays kubernetes/kubernetes #94217 end to end (a pod with two
# WaitForFirstConsumer claims, the second of which does not fit on the node the scheduler chose)
# on its own etcd + kube-apiserver with kube-scheduler, kube-controller-manager's PV/PVC protection,
# one CSI external-provisioner per node and Topovol's pv-binder and rollback loops, and prints the
# time from the failed provisioning to the pod running its claims on the other node.
# Results go to hack/bench/results/. Not a test: see hack/bench/README.md.
#
# usage: hack/bench/rollback.sh [--runs N] [--manager-args='--rollback-grace-period=5s']
#                               [--twin=false] [--record=false] [--help]
source "$(dirname "$0")/../lib/bootstrap.sh"
bootstrap

echo "==> control-plane binaries: etcd kube-apiserver kube-scheduler kube-controller-manager" >&2
# The last line is the assets directory; passing it on means the bench never builds or waits on a build lock.
assets="$(bash hack/control-plane-binaries.sh etcd kube-apiserver kube-scheduler kube-controller-manager | tail -n 1)"
export KUBEBUILDER_ASSETS="$assets"
echo "==> CSI binaries: csi-provisioner" >&2
csi_assets="$(bash hack/csi-binaries.sh csi-provisioner | tail -n 1)"
export TOPOVOL_CSI_ASSETS="$csi_assets"

echo "==> bench" >&2
exec node packages/rollback-controller/dist/bench/rollback-bench.js "$@"

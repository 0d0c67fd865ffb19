#!/usr/bin/env bash
# The pv-binder benchmark: binds N static PV/PVC pairs (default 10,000) with Topovol's pv-binder and
# with upstream kube-controller-manager's persistentvolume-binder-controller, each on its own fresh
# etcd + kube-apiserver, and prints pairs/s, p50/p99/max latency, peak RSS and CPU with the ratios.
# Results go to hack/bench/results/. Not a test: see hack/bench/README.md.
#
# usage: hack/bench/pv-binder.sh [N] [--n N] [--qps Q] [--burst B] [--only topovol|upstream]
#                                [--namespaces K] [--record=false] [--help]
source "$(dirname "$0")/../lib/bootstrap.sh"
bootstrap

components=(etcd kube-apiserver)
# Upstream is needed unless the run is Topovol alone.
only=""
prev=""
for a in "$@"; do
  case "$a" in --only=*) only="${a#--only=}" ;; esac
  [[ "$prev" == "--only" ]] && only="$a"
  prev="$a"
done
[[ "$only" != "topovol" ]] && components+=(kube-controller-manager)
# The delayed-binding scenario runs the real kube-scheduler.
components+=(kube-scheduler)

echo "==> control-plane binaries: ${components[*]}" >&2
# The last line is the assets directory; passing it on means the bench never builds or waits on a build lock.
assets="$(bash hack/control-plane-binaries.sh "${components[@]}" | tail -n 1)"
export KUBEBUILDER_ASSETS="$assets"

echo "==> bench" >&2
exec node packages/pv-controller/dist/bench/pv-binder-bench.js "$@"

#!/usr/bin/env bash
# The node-label capacity benchmark (KEP-1472 central deployment): Topovol's capacity loop against
# the CSI external-provisioner v6.3.0 with --enable-capacity (no --node-deployment), one publisher
# for the cluster each (default 50 nodes over 5 zones x 5 StorageClasses), each contender on its own
# fresh etcd + kube-apiserver, one after the other. Prints the time from a node label change (a
# node moved into a zone of its own, and back) to the CSIStorageCapacity objects of that segment
# appearing (and going), the GetCapacity calls it took, and the requests at rest, with the ratios.
# Results go to hack/bench/results/. Not a test: see hack/bench/README.md.
#
# usage: hack/bench/capacity-labels.sh [--nodes N] [--zones Z] [--classes C] [--moves K]
#                                      [--poll-interval 1m] [--quiet-window 6m]
#                                      [--only topovol|upstream] [--record=false] [--help]
# The same set-up as hack/bench/capacity.sh (bootstrap, etcd, kube-apiserver, kube-controller-manager,
# csi-provisioner), another entry point.
TOPOVOL_CAPACITY_BENCH=labels-bench exec "$(dirname "$0")/capacity.sh" "$@"

#!/usr/bin/env bash
# Runs the real storage stack on this machine (etcd, kube-apiserver, kube-scheduler,
# kube-controller-manager, per simulated node the project's CSI driver, external-provisioner and
# Topovol's capacity instance, and Topovol's other loops), plays a short story of what Topovol is
# for, and keeps the cluster up for kubectl until Ctrl-C. This is the README's run command.
source "$(dirname "$0")/lib/bootstrap.sh"
bootstrap
echo "==> control-plane binaries" >&2
bash hack/control-plane-binaries.sh etcd kube-apiserver kube-scheduler kube-controller-manager >&2
bash hack/csi-binaries.sh >&2
exec node packages/testing/dist/src/local-demo.js

#!/usr/bin/env bash
# Runs the controller-manager against an embedded local control plane (real etcd and
# kube-apiserver on loopback) with the samples from config/samples, printing a kubeconfig path and
# a live summary until Ctrl-C. This is the README's run command.
source "$(dirname "$0")/lib/bootstrap.sh"
bootstrap
echo "==> control-plane binaries" >&2
bash hack/control-plane-binaries.sh etcd kube-apiserver >&2
exec node packages/shared/dist/src/testing/local-demo.js

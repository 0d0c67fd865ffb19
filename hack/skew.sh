#!/usr/bin/env bash
# The integration and end-to-end suites against the oldest Kubernetes release Topovol supports
# (docs/install.md, "Supported Kubernetes versions"): kube-apiserver, kube-scheduler,
# kube-controller-manager and kubectl v1.35.4, built from the Go module proxy like the default
# v1.37.2 and cached beside it. Its own command, not part of hack/test.sh: it takes as long as the
# integration and end-to-end suites together, plus a first build of the v1.35.4 binaries (about 8
# minutes on 2 cores with the Go module cache warm).
# Extra arguments go to mocha, e.g. `hack/skew.sh --grep install`.
source "$(dirname "$0")/lib/bootstrap.sh"
bootstrap
export TOPOVOL_K8S_VERSION="${TOPOVOL_K8S_VERSION:-v1.35.4}"
# A KUBEBUILDER_ASSETS from the environment would silently test another release.
unset KUBEBUILDER_ASSETS
echo "==> prometheus and promtool (Debian's package)" >&2
bash hack/lib/ensure-prometheus.sh
echo "==> control-plane binaries $TOPOVOL_K8S_VERSION and CSI binaries" >&2
bash hack/control-plane-binaries.sh etcd kube-apiserver kube-scheduler kube-controller-manager kubectl >&2
bash hack/csi-binaries.sh csi-provisioner csi-provisioner-rbac.yaml >&2
# Both suites run even when the first fails: the point is the whole list of what differs.
failed=0
echo "==> integration tests against $TOPOVOL_K8S_VERSION" >&2
pnpm run --silent test:integration "$@" || failed=1
echo "==> end-to-end suite against $TOPOVOL_K8S_VERSION" >&2
pnpm run --silent test:e2e "$@" || failed=1
exit "$failed"

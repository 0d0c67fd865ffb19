#!/usr/bin/env bash
# The integration and end-to-end suites against each older Kubernetes release Topovol supports
# (docs/install.md, "Supported Kubernetes versions"): kube-apiserver, kube-scheduler,
# kube-controller-manager and kubectl v1.35.4 and v1.36.3, built from the Go module proxy like the
# default v1.37.2 and cached beside it. Its own command, not part of hack/test.sh: per release it
# takes as long as the integration and end-to-end suites together, plus a first build of that
# release's binaries (about 8 minutes on 2 cores with the Go module cache warm).
# TOPOVOL_K8S_VERSION=v1.36.3 runs one release only. Extra arguments go to mocha, e.g.
# `hack/skew.sh --grep install`.
source "$(dirname "$0")/lib/bootstrap.sh"
bootstrap
read -r -a versions <<< "${TOPOVOL_K8S_VERSION:-v1.35.4 v1.36.3}"
((${#versions[@]})) || { echo "hack/skew.sh: TOPOVOL_K8S_VERSION names no release" >&2; exit 2; }
# A KUBEBUILDER_ASSETS from the environment would silently test another release.
unset KUBEBUILDER_ASSETS
echo "==> prometheus and promtool (Debian's package)" >&2
bash hack/lib/ensure-prometheus.sh
bash hack/csi-binaries.sh csi-provisioner csi-provisioner-rbac.yaml >&2
# Every suite on every release runs even when one fails: the point is the whole list of what differs.
failed=()
for v in "${versions[@]}"; do
  export TOPOVOL_K8S_VERSION="$v"
  echo "==> control-plane binaries $v" >&2
  if ! bash hack/control-plane-binaries.sh etcd kube-apiserver kube-scheduler kube-controller-manager kubectl >&2; then
    failed+=("$v: binaries"); continue
  fi
  echo "==> integration tests against $v" >&2
  pnpm run --silent test:integration "$@" || failed+=("$v: integration")
  echo "==> end-to-end suite against $v" >&2
  pnpm run --silent test:e2e "$@" || failed+=("$v: end-to-end")
done
if [[ ${#failed[@]} -gt 0 ]]; then
  printf '==> failed: %s\n' "${failed[@]}" >&2
  exit 1
fi
echo "==> passed on ${versions[*]}" >&2

#!/usr/bin/env bash
# Provides pinned Kubernetes control-plane binaries for tests and the local demo (the envtest
# pattern): built from the Go module proxy with the machine's Go, cached outside the repo, never
# rebuilt when present. KUBEBUILDER_ASSETS, as with controller-runtime's envtest, points at a
# directory of ready binaries and skips the build.
#
# usage: hack/control-plane-binaries.sh [component ...]   (default: etcd kube-apiserver)
#        components: etcd kube-apiserver kube-scheduler kube-controller-manager kubectl
# prints: one "name version path" line per component; the last line is the assets directory.
#
# TOPOVOL_K8S_VERSION picks another pinned Kubernetes release for the version-skew runs
# (hack/skew.sh): v1.37.2 (the default, hack/tools/k8s), v1.36.3 (hack/tools/k8s-v1.36) or v1.35.4
# (hack/tools/k8s-v1.35); with KUBEBUILDER_ASSETS it names the release those binaries are (any).
set -euo pipefail

K8S_VERSION="${TOPOVOL_K8S_VERSION:-v1.37.2}"
ETCD_VERSION="v3.6.16"
HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE_ROOT="${TOPOVOL_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/topovol}"
ASSETS_DIR="${CACHE_ROOT}/k8s-${K8S_VERSION}"

components=("$@")
[[ ${#components[@]} -eq 0 ]] && components=(etcd kube-apiserver)

log() { echo "[control-plane-binaries] $*" >&2; }

version_of() {
  case "$1" in
    etcd) echo "$ETCD_VERSION" ;;
    kube-apiserver|kube-scheduler|kube-controller-manager|kubectl) echo "$K8S_VERSION" ;;
    *) log "unknown component '$1' (known: etcd kube-apiserver kube-scheduler kube-controller-manager kubectl)"; exit 2 ;;
  esac
}

if [[ -n "${KUBEBUILDER_ASSETS:-}" ]]; then
  for c in "${components[@]}"; do
    version_of "$c" >/dev/null
    if [[ ! -x "${KUBEBUILDER_ASSETS}/$c" ]]; then
      log "KUBEBUILDER_ASSETS=${KUBEBUILDER_ASSETS} has no executable '$c'"
      exit 1
    fi
    echo "$c (from KUBEBUILDER_ASSETS) ${KUBEBUILDER_ASSETS}/$c"
  done
  echo "${KUBEBUILDER_ASSETS}"
  exit 0
fi

# Only the pinned releases are built; binaries of any other come through KUBEBUILDER_ASSETS (above),
# and the test control plane checks that kube-apiserver reports TOPOVOL_K8S_VERSION.
case "$K8S_VERSION" in
  v1.37.2) K8S_MODULE_DIR="$HACK_DIR/tools/k8s" ;;
  v1.36.3) K8S_MODULE_DIR="$HACK_DIR/tools/k8s-v1.36" ;;
  v1.35.4) K8S_MODULE_DIR="$HACK_DIR/tools/k8s-v1.35" ;;
  *) echo "[control-plane-binaries] TOPOVOL_K8S_VERSION=$K8S_VERSION is not pinned here (v1.37.2, v1.36.3 or v1.35.4)" >&2; exit 2 ;;
esac
command -v go >/dev/null || { log "Go is required to build the control-plane binaries (or set KUBEBUILDER_ASSETS)"; exit 1; }
mkdir -p "$ASSETS_DIR" "$CACHE_ROOT/src"

# One build at a time, across concurrent test runs: the machine has two cores. Only a build takes
# the lock: a binary is moved into place whole, so a run whose binaries are all there never waits
# behind another release's build (a test that starts kube-controller-manager once timed out so).
for c in "${components[@]}"; do
  if [[ ! -x "$ASSETS_DIR/$c" ]]; then
    exec 9>"$CACHE_ROOT/.build.lock"
    flock 9
    break
  fi
done

build() {
  local name="$1" module_dir="$2" pkg="$3"
  local out="$ASSETS_DIR/$name"
  if [[ -x "$out" ]]; then return 0; fi
  # Build in a copy of the pinned module so go.sum updates never touch the repo.
  local work="$CACHE_ROOT/src/$(basename "$module_dir")"
  mkdir -p "$work"
  cp "$module_dir/go.mod" "$module_dir/go.sum" "$work/"
  log "building $name $(version_of "$name") from the Go module proxy (cold builds take minutes on 2 cores)..."
  local start=$SECONDS
  (
    cd "$work"
    # Stamp the version the way upstream's release build does, so /version and kubectl report it.
    local vpkg=k8s.io/component-base/version minor="${K8S_VERSION#v1.}"
    local ldflags="-s -w -X $vpkg.gitVersion=$K8S_VERSION -X $vpkg.gitMajor=1 -X $vpkg.gitMinor=${minor%%.*}"
    ldflags+=" -X k8s.io/client-go/pkg/version.gitVersion=$K8S_VERSION"
    GOFLAGS="-mod=mod -buildvcs=false" go build -trimpath -ldflags="$ldflags" -o "$out.tmp" "$pkg"
  ) &
  local pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    sleep 30
    kill -0 "$pid" 2>/dev/null && log "  ... still building $name ($((SECONDS - start)) s)"
  done
  wait "$pid"
  mv "$out.tmp" "$out"
  log "built $name in $((SECONDS - start)) s"
}

for c in "${components[@]}"; do
  v="$(version_of "$c")"
  case "$c" in
    etcd) build etcd "$HACK_DIR/tools/etcd" go.etcd.io/etcd/server/v3 ;;
    *) build "$c" "$K8S_MODULE_DIR" "k8s.io/kubernetes/cmd/$c" ;;
  esac
  echo "$c $v $ASSETS_DIR/$c"
done
echo "$ASSETS_DIR"

#!/usr/bin/env bash
# Provides the pinned CSI sidecar binaries that interop tests start against the test CSI driver:
# built from the Go module proxy with the machine's Go, cached outside the repo, never rebuilt when
# present. TOPOVOL_CSI_ASSETS points at a directory of ready binaries and skips the build (as
# KUBEBUILDER_ASSETS does for hack/control-plane-binaries.sh).
#
# usage: hack/csi-binaries.sh [component ...]   (default: csi-provisioner)
#        components: csi-provisioner, csi-provisioner-rbac.yaml (external-provisioner's
#        deploy/kubernetes/rbac.yaml at the same version, which the capacity RBAC test compares with)
# prints: one "name version path" line per component; the last line is the assets directory.
set -euo pipefail

# v6.4.0 requires a library version the module proxy refuses to serve; v6.3.0 builds.
PROVISIONER_MODULE="github.com/kubernetes-csi/external-provisioner/v6"
PROVISIONER_VERSION="v6.3.0"
CACHE_ROOT="${TOPOVOL_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/topovol}"
ASSETS_DIR="${CACHE_ROOT}/csi-${PROVISIONER_VERSION}"

components=("$@")
[[ ${#components[@]} -eq 0 ]] && components=(csi-provisioner)

log() { echo "[csi-binaries] $*" >&2; }

version_of() {
  case "$1" in
    csi-provisioner | csi-provisioner-rbac.yaml) echo "$PROVISIONER_VERSION" ;;
    *) log "unknown component '$1' (known: csi-provisioner, csi-provisioner-rbac.yaml)"; exit 2 ;;
  esac
}

if [[ -n "${TOPOVOL_CSI_ASSETS:-}" ]]; then
  for c in "${components[@]}"; do
    version_of "$c" >/dev/null
    if [[ "$c" == *.yaml && ! -f "${TOPOVOL_CSI_ASSETS}/$c" ]] || [[ "$c" != *.yaml && ! -x "${TOPOVOL_CSI_ASSETS}/$c" ]]; then
      hint=""
      [[ "$c" == *.yaml ]] && hint=" (copy deploy/kubernetes/rbac.yaml of external-provisioner $PROVISIONER_VERSION there under that name)"
      log "TOPOVOL_CSI_ASSETS=${TOPOVOL_CSI_ASSETS} has no '$c'$hint"
      exit 1
    fi
    echo "$c (from TOPOVOL_CSI_ASSETS) ${TOPOVOL_CSI_ASSETS}/$c"
  done
  echo "${TOPOVOL_CSI_ASSETS}"
  exit 0
fi

all_present() {
  for c in "${components[@]}"; do [[ -x "$ASSETS_DIR/$c" || ( "$c" == *.yaml && -f "$ASSETS_DIR/$c" ) ]] || return 1; done
}

# The module's directory in Go's module cache (downloaded from the proxy if absent).
provisioner_module_dir() {
  local dir
  dir="$(go mod download -json "$PROVISIONER_MODULE@$PROVISIONER_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
  [[ -n "$dir" && -d "$dir" ]] || { log "go mod download gave no module directory for $PROVISIONER_MODULE@$PROVISIONER_VERSION"; exit 1; }
  echo "$dir"
}

copy_provisioner_rbac() {
  local out="$ASSETS_DIR/csi-provisioner-rbac.yaml"
  if [[ -f "$out" ]]; then return 0; fi
  cp "$(provisioner_module_dir)/deploy/kubernetes/rbac.yaml" "$out.tmp"
  mv "$out.tmp" "$out"
}

if ! all_present; then
  command -v go >/dev/null || { log "Go is required to build the CSI binaries (or set TOPOVOL_CSI_ASSETS)"; exit 1; }
  mkdir -p "$ASSETS_DIR" "$CACHE_ROOT/src"
  # One Go build at a time, shared with hack/control-plane-binaries.sh: the machine has two cores.
  exec 9>"$CACHE_ROOT/.build.lock"
  flock 9
fi

build_provisioner() {
  local out="$ASSETS_DIR/csi-provisioner"
  if [[ -x "$out" ]]; then return 0; fi
  log "building csi-provisioner $PROVISIONER_VERSION from the Go module proxy (cold builds take minutes on 2 cores)..."
  local start=$SECONDS
  # The release is built inside its own downloaded module (its go.mod pins every dependency). The
  # module cache is read-only and -mod=mod may touch go.sum, so build in a writable copy.
  local dir
  dir="$(provisioner_module_dir)"
  local work="$CACHE_ROOT/src/external-provisioner-$PROVISIONER_VERSION"
  rm -rf "$work"
  mkdir -p "$work"
  cp -r "$dir/." "$work/"
  chmod -R u+w "$work"
  (
    cd "$work"
    GOFLAGS="-mod=mod -buildvcs=false" go build -trimpath \
      -ldflags="-s -w -X main.version=$PROVISIONER_VERSION" -o "$out.tmp" ./cmd/csi-provisioner
  ) &
  local pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    sleep 30
    kill -0 "$pid" 2>/dev/null && log "  ... still building csi-provisioner ($((SECONDS - start)) s)"
  done
  wait "$pid"
  mv "$out.tmp" "$out"
  rm -rf "$work"
  log "built csi-provisioner in $((SECONDS - start)) s"
}

for c in "${components[@]}"; do
  v="$(version_of "$c")"
  case "$c" in
    csi-provisioner) build_provisioner ;;
    csi-provisioner-rbac.yaml) copy_provisioner_rbac ;;
  esac
  echo "$c $v $ASSETS_DIR/$c"
done
echo "$ASSETS_DIR"

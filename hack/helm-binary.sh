#!/usr/bin/env bash
# Provides the pinned helm binary that the chart tests (helm lint, helm template) use: built from
# the Go module proxy with the machine's Go, cached outside the repo, never rebuilt when present.
# TOPOVOL_HELM points at a ready helm binary and skips the build (as KUBEBUILDER_ASSETS does for
# hack/control-plane-binaries.sh).
#
# usage: hack/helm-binary.sh
# prints: "helm version path" on one line, then the path of the binary on the last line.
set -euo pipefail

HELM_MODULE="helm.sh/helm/v4"
HELM_VERSION="v4.3.1"
CACHE_ROOT="${TOPOVOL_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/topovol}"
ASSETS_DIR="${CACHE_ROOT}/helm-${HELM_VERSION}"
OUT="$ASSETS_DIR/helm"

log() { echo "[helm-binary] $*" >&2; }

if [[ -n "${TOPOVOL_HELM:-}" ]]; then
  [[ -x "$TOPOVOL_HELM" ]] || { log "TOPOVOL_HELM=${TOPOVOL_HELM} is not executable"; exit 1; }
  echo "helm (from TOPOVOL_HELM) ${TOPOVOL_HELM}"
  echo "${TOPOVOL_HELM}"
  exit 0
fi

if [[ ! -x "$OUT" ]]; then
  command -v go >/dev/null || { log "Go is required to build helm (or set TOPOVOL_HELM)"; exit 1; }
  mkdir -p "$ASSETS_DIR" "$CACHE_ROOT/src"
  # One Go build at a time, shared with the other hack/*-binaries.sh scripts: the machine has two cores.
  exec 9>"$CACHE_ROOT/.build.lock"
  flock 9
fi

build_helm() {
  if [[ -x "$OUT" ]]; then return 0; fi
  log "building helm $HELM_VERSION from the Go module proxy (cold builds take minutes on 2 cores)..."
  local start=$SECONDS
  # Built inside its own downloaded module so its go.mod pins every dependency; the module cache
  # is read-only and -mod=mod may touch go.sum, so build in a writable copy.
  local dir
  dir="$(go mod download -json "$HELM_MODULE@$HELM_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
  [[ -n "$dir" && -d "$dir" ]] || { log "go mod download gave no module directory for $HELM_MODULE@$HELM_VERSION"; exit 1; }
  local work="$CACHE_ROOT/src/helm-$HELM_VERSION"
  rm -rf "$work"
  mkdir -p "$work"
  cp -r "$dir/." "$work/"
  chmod -R u+w "$work"
  (
    cd "$work"
    # Stamp the version the way upstream's Makefile does, so `helm version` reports it.
    GOFLAGS="-mod=mod -buildvcs=false" CGO_ENABLED=0 go build -trimpath \
      -ldflags="-s -w -X helm.sh/helm/v4/internal/version.version=$HELM_VERSION" \
      -o "$OUT.tmp" ./cmd/helm
  ) &
  local pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    sleep 30
    kill -0 "$pid" 2>/dev/null && log "  ... still building helm ($((SECONDS - start)) s)"
  done
  wait "$pid"
  mv "$OUT.tmp" "$OUT"
  rm -rf "$work"
  log "built helm in $((SECONDS - start)) s"
}

build_helm
echo "helm $HELM_VERSION $OUT"
echo "$OUT"

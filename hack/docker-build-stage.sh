#!/usr/bin/env bash
# Runs the Dockerfile without Docker (there is no engine on the CI machine): copies the build
# context (what git would commit, which .dockerignore mirrors) into a temporary directory, runs the
# build stage's ENV and RUN lines there, assembles the runtime stage from its COPY --from=build
# lines, and checks that `node bin/topovol-controller-manager.js --help` exits 0 there, that the
# capacity loop (imported only when set up) loads, that the
# CSI proto the capacity loop needs is found, and that the tree holds the runtime and the controllers
# only: no test harness, manifest renderers or end-to-end suite, and no code importing them. The pnpm store of this machine is reused, so it is
# quick after the first run. Usage: hack/docker-build-stage.sh [--keep]
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
KEEP=false
[ "${1:-}" = "--keep" ] && KEEP=true
TMP="$(mktemp -d "${TMPDIR:-/tmp}/topovol-docker-XXXXXX")"
cleanup() { if $KEEP; then echo "kept $TMP" >&2; else rm -rf "$TMP"; fi; }
trap cleanup EXIT

SRC="$TMP/src"  # the build stage's WORKDIR /src
APP="$TMP/app"  # the runtime stage's WORKDIR /app
mkdir -p "$SRC" "$APP"
(cd "$ROOT" && git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done \
  | tar --null -T - -cf -) | tar -xf - -C "$SRC"

# The Dockerfile's stages as lines: continuations joined, comments dropped.
mapfile -t LINES < <(sed -e ':a' -e '/\\$/N; s/\\\n//; ta' "$ROOT/Dockerfile" | grep -v '^\s*#' | grep -v '^\s*$')

# npm --global goes into the temporary directory, not this machine's prefix.
export NPM_CONFIG_PREFIX="$TMP/npm-global"
export PATH="$NPM_CONFIG_PREFIX/bin:$PATH"

stage=none
for line in "${LINES[@]}"; do
  case "$line" in
    FROM*" AS build"*) stage=build; continue ;;
    FROM*) stage=runtime; continue ;;
  esac
  case "$stage:$line" in
    build:WORKDIR\ /src) ;;
    build:WORKDIR*) echo "docker-build-stage: unsupported build WORKDIR: $line" >&2; exit 1 ;;
    build:ENV\ *) export "${line#ENV }" ;;
    build:COPY\ .\ .) ;;  # done above
    build:RUN\ *)
      echo "==> RUN ${line#RUN }" >&2
      (cd "$SRC" && bash -euo pipefail -c "${line#RUN }") >&2 ;;
    runtime:COPY\ --from=build\ /src/*)
      read -r _ _ from to <<<"$line"
      cp -a "$SRC/${from#/src/}" "$APP/$to" ;;
    runtime:ENTRYPOINT*|runtime:USER*|runtime:WORKDIR\ /app|runtime:ENV*|*:ARG*) ;;
    *) echo "docker-build-stage: unsupported Dockerfile line in $stage stage: $line" >&2; exit 1 ;;
  esac
done

cd "$APP"
node bin/topovol-controller-manager.js --help >/dev/null
# The capacity loop is imported only when it is set up, so --help no longer loads its module graph.
node --input-type=module -e "await import(process.cwd() + '/packages/capacity-controller/dist/src/capacity-controller.js');"
node --input-type=module -e "import { csiProtoPath } from '@topovol/shared/csi'; const p = csiProtoPath(); if (!p.startsWith(process.cwd() + '/packages/shared/dist/')) throw new Error('proto outside dist: ' + p);"
for p in testing manifests e2e; do
  if [ -e "$APP/packages/$p" ] || [ -L "$APP/node_modules/@topovol/$p" ]; then
    echo "docker-build-stage: packages/$p (not run-time code) left in the runtime image" >&2; exit 1
  fi
done
if grep -rlE "['\"]@topovol/(testing|manifests)['\"/]" "$APP/packages" "$APP/bin" --include='*.js' >&2; then
  echo "docker-build-stage: run-time code above imports @topovol/testing or @topovol/manifests" >&2; exit 1
fi
if compgen -G "$APP/node_modules/.pnpm/typescript@*" >/dev/null || compgen -G "$APP/node_modules/.pnpm/mocha@*" >/dev/null; then
  echo "docker-build-stage: dev dependencies left in the runtime image" >&2; exit 1
fi
echo "docker-build-stage: ok ($(du -sh "$APP" | cut -f1) runtime tree)" >&2

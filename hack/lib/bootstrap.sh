# Sourced by hack/demo.sh and hack/test.sh: make a fresh clone runnable. Installs the pinned pnpm
# (from package.json's packageManager) into a cache outside the repo if no matching pnpm is on PATH,
# then the locked dependencies, then builds. Idempotent and quiet when everything is in place.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
CACHE="${TOPOVOL_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/topovol}"
PNPM_VERSION="$(node -p "require('$ROOT/package.json').packageManager.split('@')[1]")"

need_node() {
  command -v node >/dev/null || { echo "error: Node.js >= 20.12 is required (https://nodejs.org)" >&2; exit 1; }
  node -e 'const [a,b]=process.versions.node.split(".").map(Number); process.exit(a>20||(a===20&&b>=12)?0:1)' \
    || { echo "error: Node.js >= 20.12 is required, found $(node --version)" >&2; exit 1; }
}

ensure_pnpm() {
  if command -v pnpm >/dev/null && [ "$(pnpm --version 2>/dev/null)" = "$PNPM_VERSION" ]; then return; fi
  local prefix="$CACHE/pnpm-$PNPM_VERSION"
  if [ ! -x "$prefix/node_modules/.bin/pnpm" ]; then
    echo "==> installing pnpm $PNPM_VERSION into $prefix" >&2
    # npm works where corepack's signature check fails (see docs/adr/0004-pnpm-bootstrap.md).
    npm install --silent --no-audit --no-fund --prefix "$prefix" "pnpm@$PNPM_VERSION" >&2
  fi
  export PATH="$prefix/node_modules/.bin:$PATH"
}

bootstrap() {
  need_node
  ensure_pnpm
  cd "$ROOT"
  echo "==> pnpm install" >&2
  pnpm install --frozen-lockfile --reporter=silent >&2
  echo "==> build" >&2
  pnpm run --silent build >&2
}

#!/usr/bin/env bash
# A Python with matplotlib for the benchmark plots (docs/benchmarks/*.png): a virtualenv from PyPI,
# cached outside the repo. Prints the interpreter's path. $TOPOVOL_PLOT_PYTHON overrides.
set -euo pipefail
if [ -n "${TOPOVOL_PLOT_PYTHON:-}" ]; then echo "$TOPOVOL_PLOT_PYTHON"; exit 0; fi
CACHE="${TOPOVOL_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/topovol}"
VENV="$CACHE/plot-venv-matplotlib-3.11"
if ! "$VENV/bin/python" -c 'import matplotlib' >/dev/null 2>&1; then
  echo "==> installing matplotlib into $VENV" >&2
  python3 -m venv "$VENV" >&2
  "$VENV/bin/pip" install --quiet 'matplotlib>=3.8,<4' >&2
fi
echo "$VENV/bin/python"

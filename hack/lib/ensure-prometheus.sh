#!/usr/bin/env bash
# Prometheus and promtool for the observability tests: Debian's prometheus package (2.42; promtool
# from the Go module proxy fails on a dependency the proxy refuses). Installed once when missing;
# PROMETHEUS and PROMTOOL may point at other binaries instead.
set -euo pipefail
if [ -n "${PROMETHEUS:-}" ] && [ -n "${PROMTOOL:-}" ]; then exit 0; fi
if command -v prometheus >/dev/null && command -v promtool >/dev/null; then exit 0; fi
echo "==> installing Debian's prometheus package (prometheus, promtool)" >&2
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get install -y --no-install-recommends prometheus >&2 || { $SUDO apt-get update >&2 && $SUDO apt-get install -y --no-install-recommends prometheus >&2; }
# The package enables a system service; the tests start their own server on a free port.
$SUDO systemctl disable --now prometheus >/dev/null 2>&1 || true

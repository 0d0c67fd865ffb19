#!/usr/bin/env bash
# Writes docs/benchmarks.md and its plots (docs/benchmarks/*.png) from the last recorded runs of
# hack/bench/pv-binder.sh, capacity.sh, capacity-labels.sh and rollback.sh
# (hack/bench/results/*-latest.json).
# Runs no benchmark.
source "$(dirname "$0")/../lib/bootstrap.sh"
bootstrap
python="$(bash hack/lib/ensure-matplotlib.sh)"
mkdir -p docs/benchmarks
"$python" hack/bench/plot-binding.py hack/bench/results/pv-binder-latest.json docs/benchmarks
"$python" hack/bench/plot-capacity.py hack/bench/results docs/benchmarks
node packages/pv-controller/dist/bench/write-benchmarks-doc.js

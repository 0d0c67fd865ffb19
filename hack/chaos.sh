#!/usr/bin/env bash
# The long reliability run (the test command runs the same scenarios at scale 1): every scenario of
# packages/pv-controller/test/integration/reliability at --scale times the pairs (default 10) and
# the rollback loop under API faults, then
# the memory soak (packages/pv-controller/test/soak, --soak-minutes, default 10) printing the
# manager's resident set every 10 s. Writes the results table and the RSS series to
# hack/chaos-results/<time>.md; with --record, also into docs/reliability.md between its markers.
#
# usage: hack/chaos.sh [--scale N] [--soak-minutes M] [--no-soak] [--record]
source "$(dirname "$0")/lib/bootstrap.sh"

scale=10
soak=10
record=false
run_soak=true
while [[ $# -gt 0 ]]; do
  case "$1" in
    --scale) scale="$2"; shift 2 ;;
    --scale=*) scale="${1#--scale=}"; shift ;;
    --soak-minutes) soak="$2"; shift 2 ;;
    --soak-minutes=*) soak="${1#--soak-minutes=}"; shift ;;
    --no-soak) run_soak=false; shift ;;
    --record) record=true; shift ;;
    -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
    *) echo "error: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

bootstrap
echo "==> control-plane binaries" >&2
assets="$(bash hack/control-plane-binaries.sh etcd kube-apiserver | tail -n 1)"
export KUBEBUILDER_ASSETS="$assets"

out="$(mktemp -d)"
# The integration mocha settings without their spec list, requires made absolute.
node -e '
  const c = require(process.argv[1]);
  delete c.spec;
  c.require = c.require.map((r) => require("path").resolve(r));
  require("fs").writeFileSync(process.argv[2], JSON.stringify(c));
' "$ROOT/.mocharc.integration.json" "$out/mocharc.json"

specs=(packages/pv-controller/dist/test/integration/reliability/*.test.js packages/rollback-controller/dist/test/integration/rollback-faults.test.js)
$run_soak && specs+=(packages/pv-controller/dist/test/soak/*.test.js)
echo "==> reliability scenarios at scale $scale$($run_soak && echo ", soak $soak min")" >&2
status=0
TOPOVOL_CHAOS_SCALE="$scale" TOPOVOL_CHAOS_RESULTS="$out/results.jsonl" \
TOPOVOL_SOAK_MINUTES="$soak" TOPOVOL_SOAK_RSS="$out/rss.csv" \
  pnpm exec mocha --config "$out/mocharc.json" "${specs[@]}" || status=$?

mkdir -p hack/chaos-results
# One time for the file's name and the "Run of" line, so that the docs' block names its file.
now="$(date -u +%Y-%m-%dT%H%M%SZ)"
export CHAOS_RUN_AT="${now:0:13}:${now:13:2}"
report="hack/chaos-results/${now}.md"
node hack/lib/chaos-report.mjs "$out/results.jsonl" "$out/rss.csv" > "$report"
echo "==> results: $report" >&2
cat "$report"
if $record; then node hack/lib/chaos-report.mjs "$out/results.jsonl" "$out/rss.csv" --into docs/reliability.md; fi
exit "$status"

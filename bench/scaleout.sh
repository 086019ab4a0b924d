#!/usr/bin/env bash
# Scale-out on one machine: the same scenario as N = 1, 2 and 4 segments
# (N local processes started at one instant, then runner merge), against
# one reference target with a known 5 ms service time. Prints one row per
# N: arrivals, ok, errors, p50/p99/max of the measured phase, the target's
# own request count for that phase, and the merged verdict. Not part of CI
# (TestScaleOutProof in cmd/runner checks the same on every test run).
#
# Usage: bench/scaleout.sh                 (RATE=2000 DURATION=5s CONNS=16)
#        RATE=4000 NS="1 2 4 8" bench/scaleout.sh
#        RUNNER_BIN=/path/to/runner bench/scaleout.sh   (skip the build)
# Needs Go (or RUNNER_BIN), jq and GNU date. Writes bench/out/scaleout/.
set -euo pipefail
cd "$(dirname "$0")/.."
RATE=${RATE:-2000}
DURATION=${DURATION:-5s}
CONNS=${CONNS:-16}
NS=${NS:-"1 2 4"}
out=bench/out/scaleout
rm -rf "$out" && mkdir -p "$out"
bin=${RUNNER_BIN:-$out/runner}
[ -n "${RUNNER_BIN:-}" ] || go build -o "$bin" ./cmd/runner

"$bin" serve http --listen 127.0.0.1:0 --delay 5ms > "$out/target.log" 2>&1 &
target=$!
trap 'kill $target 2>/dev/null || true' EXIT
for _ in $(seq 50); do grep -q '^listening on' "$out/target.log" && break; sleep 0.1; done
url=$(sed -n 's/^listening on //p' "$out/target.log")
[ -n "$url" ] || { echo "the target did not start: $(cat "$out/target.log")"; exit 1; }

cat > "$out/scenario.yaml" <<YAML
version: 1
name: scaleout
target: {url: "$url"}
driver:
  http: {method: GET, path: "/s?n={{seq}}", timeout: 1s}
phases:
  - {name: warm, warmup: true, duration: 1s, open: {rate: 200/s, connections: $CONNS}}
  - {name: steady, duration: $DURATION, open: {rate: $RATE/s, connections: $CONNS}}
reconcile:
  fetch: {path: /stats}
  expect: [server.requests == requests]
assert: [p99 < 100ms, errors == 0]
YAML

printf 'N\tarrivals\tok\terrors\tp50_ms\tp99_ms\tmax_ms\ttarget_requests\tverdict\n' | tee "$out/table.tsv"
for n in $NS; do
  dir=$out/n$n && mkdir -p "$dir"
  start=$(date -u -d '+3 sec' +%Y-%m-%dT%H:%M:%S.%NZ)
  pids=()
  for k in $(seq 0 $((n - 1))); do
    "$bin" run -q --log-level error --segment "$k/$n" --start-at "$start" --json "$dir/{segment}.json" "$out/scenario.yaml" > "$dir/seg$k.log" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || echo "N=$n: a segment failed (see $dir/seg*.log)"; done
  code=0
  "$bin" merge -q --json "$dir/merged.json" "$dir" > "$dir/merge.log" 2>&1 || code=$?
  jq -r --arg n "$n" --arg code "$code" '.result.phases[] | select(.phase.name == "steady") |
    [$n, .summary.arrivals, .summary.ok, .summary.errors,
     .metrics.response_time.p50_ms, .metrics.response_time.p99_ms, .metrics.response_time.max_ms, (.server.requests // "-"), ($code)] | @tsv' "$dir/merged.json" \
    | awk -v oc="$(jq -r .outcome "$dir/merged.json")" 'BEGIN{OFS="\t"} {$9 = oc " (exit " $9 ")"; print}' | tee -a "$out/table.tsv"
done

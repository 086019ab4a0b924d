#!/usr/bin/env bash
# Micro-benchmarks of the hot paths: recording a result, the engine's own
# per-request overhead (closed loop and open-model pacer over a fake
# target), one request of each driver over loopback (HTTP, binary frame,
# WebSocket: one at a time and 16 in flight on a connection) to stubs
# that allocate nothing per request, so allocs/op are the driver's, and
# to the reference targets in the same process (their allocations
# included), and a link's write watch. Writes bench/out/latest.txt;
# compare two runs with benchstat (go run golang.org/x/perf/cmd/benchstat).
#
# Usage: bench/run.sh          (COUNT=5 runs of each benchmark, about 3 minutes)
#        COUNT=1 bench/run.sh  (one run each, about 30 s)
# The previous bench/out/latest.txt is kept as bench/out/previous.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
COUNT=${COUNT:-5}
[[ $COUNT =~ ^[1-9][0-9]*$ ]] || { echo "run.sh: COUNT must be a whole number >= 1, got '$COUNT'" >&2; exit 2; }
mkdir -p bench/out
tmp=$(mktemp bench/out/latest.XXXXXX)
trap 'rm -f "$tmp"' EXIT
go test -run '^$' -bench . -benchmem -count "$COUNT" \
  ./engine/ ./engine/measure/ ./drivers/http/ ./drivers/internal/correlate/ \
  ./drivers/frame/ ./drivers/websocket/ ./drivers/internal/relink/ | tee "$tmp"
# Only a complete run replaces the last one (benchstat compares the two).
[[ -f bench/out/latest.txt ]] && mv bench/out/latest.txt bench/out/previous.txt
mv "$tmp" bench/out/latest.txt
echo "wrote bench/out/latest.txt (compare: go run golang.org/x/perf/cmd/benchstat bench/out/previous.txt bench/out/latest.txt)"

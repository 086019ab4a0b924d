#!/usr/bin/env bash
# Micro-benchmarks of the hot paths: recording a result, the engine's own
# per-request overhead (closed loop and open-model pacer over a fake
# target), one request of each driver over loopback (HTTP, binary frame,
# WebSocket: one at a time and 16 in flight on a connection) to stubs
# that allocate nothing per request, so allocs/op are the driver's, and
# to the reference targets in the same process (their allocations
# included), and a link's write watch. Writes bench/out/latest.txt;
# compare two runs with benchstat (go run golang.org/x/perf/cmd/benchstat).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p bench/out
go test -run '^$' -bench . -benchmem -count "${COUNT:-5}" \
  ./engine/ ./engine/measure/ ./drivers/http/ ./drivers/correlate/ \
  ./drivers/frame/ ./drivers/websocket/ ./drivers/relink/ | tee bench/out/latest.txt

#!/usr/bin/env bash
# Micro-benchmarks of the hot paths: recording a result, the engine's own
# per-request overhead (closed loop and open-model pacer over a fake
# target), one HTTP request over loopback, one binary-frame and one
# WebSocket request over loopback to the reference targets (one at a time
# and 16 in flight on a connection), and a link's write watch. The frame
# and WebSocket allocs/op include the in-process target's own (the
# client's are zero). Writes bench/out/latest.txt;
# compare two runs with benchstat (go run golang.org/x/perf/cmd/benchstat).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p bench/out
go test -run '^$' -bench . -benchmem -count "${COUNT:-5}" \
  ./engine/ ./engine/measure/ ./drivers/http/ ./drivers/correlate/ \
  ./drivers/frame/ ./drivers/websocket/ ./drivers/relink/ | tee bench/out/latest.txt

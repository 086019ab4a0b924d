#!/usr/bin/env bash
# Micro-benchmarks of the hot paths: recording a result, the engine's own
# per-request overhead (closed loop and open-model pacer over a fake
# target), and one HTTP request over loopback. Writes bench/out/latest.txt;
# compare two runs with benchstat (go run golang.org/x/perf/cmd/benchstat).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p bench/out
go test -run '^$' -bench . -benchmem -count "${COUNT:-5}" \
  ./engine/ ./engine/measure/ ./drivers/http/ ./drivers/correlate/ | tee bench/out/latest.txt

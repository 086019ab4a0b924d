#!/usr/bin/env bash
# Client CPU per request: HTTP/2 against HTTP/1.1 on the same target. Not
# part of CI.
#
# One reference target (`runner serve http`, which speaks HTTP/1.1 and h2c
# on one port) is pinned to core 1; runner is pinned to core 0 and offers
# RATE requests/s (default 5000), uniform, open model, for DURATION seconds
# (default 5) in three shapes:
#   h1        version 1.1, 16 connections × inflight 1
#   h2-conns  version 2,   16 connections × inflight 1 (HTTP/2 framing alone)
#   h2-mux    version 2,    1 connection  × inflight 16 (multiplexed)
# each ROUNDS times (default 3), the order rotating. CPU per request is the
# phase's client CPU (getrusage over the phase's wall time, from runner's
# JSON report: start-up, calibration and reports excluded) times its wall
# time over its requests; the table shows the median over the rounds, the
# achieved rate and the p50 response time, and each shape's CPU per request
# over h1's.
#
# Needs 2 cores, taskset, Go and python3.
# Usage: bench/h2cpu.sh   or   RATE=10000 DURATION=10 ROUNDS=5 bench/h2cpu.sh
# Writes bench/out/h2cpu.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
RATE=${RATE:-5000}
DURATION=${DURATION:-5}
ROUNDS=${ROUNDS:-3}
OUT=bench/out
mkdir -p "$OUT"
work=$(mktemp -d)
bin=$work/runner
go build -o "$bin" ./cmd/runner

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
taskset -c 1 "$bin" serve http --listen "127.0.0.1:$port" >"$work/target.log" 2>&1 &
target=$!
trap 'kill "$target" 2>/dev/null; wait "$target" 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 1 100); do
  curl -sf "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
  sleep 0.1
done

scenario() { # name version connections inflight
  cat >"$work/$1.yaml" <<EOF
version: 1
name: h2cpu-$1
target: {url: "http://127.0.0.1:$port"}
driver: {http: {version: "$2", path: /b, timeout: 5s}}
phases:
  - {name: steady, open: {rate: ${RATE}/s, connections: $3, inflight: $4}, duration: ${DURATION}s}
EOF
}
scenario h1 1.1 16 1
scenario h2-conns 2 16 1
scenario h2-mux 2 1 16

shapes=(h1 h2-conns h2-mux)
: >"$work/raw.tsv"
for round in $(seq 1 "$ROUNDS"); do
  for i in "${!shapes[@]}"; do
    shape=${shapes[$(((i + round) % ${#shapes[@]}))]}
    taskset -c 0 "$bin" run --log-level error --quiet --json "$work/$shape-$round.json" --tsv "$work/r.tsv" "$work/$shape.yaml" >/dev/null || true
    python3 - "$work/$shape-$round.json" "$shape" >>"$work/raw.tsv" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
ph = r["result"]["phases"][0]
s = ph["summary"]
wall = ph["wall"] / 1e9
cpu = ph["client_cpu"] * wall
req = s["requests"]
p50 = ph["metrics"]["response_time"].get("p50_ms") or float("nan")
print(f"{sys.argv[2]}\t{cpu / req * 1e6:.2f}\t{ph['metrics']['achieved_rate']:.0f}\t{s['ok']}\t{req}\t{p50:.3f}")
EOF
  done
done

python3 - "$work/raw.tsv" "$RATE" "$DURATION" "$ROUNDS" <<'EOF' | tee "$OUT/h2cpu.txt"
import statistics, sys
rows = [l.split("\t") for l in open(sys.argv[1]).read().splitlines() if l]
by = {}
for shape, us, rate, ok, req, p50 in rows:
    by.setdefault(shape, []).append((float(us), float(rate), int(ok), int(req), float(p50)))
print(f"client CPU per request, runner serve http, open {sys.argv[2]}/s for {sys.argv[3]}s, median of {sys.argv[4]} rounds")
print(f"{'shape':10} {'µs CPU/req':>11} {'÷ h1':>6} {'achieved/s':>11} {'ok/requests':>13} {'p50 ms':>8}")
base = statistics.median(r[0] for r in by["h1"])
for shape in ["h1", "h2-conns", "h2-mux"]:
    rs = by.get(shape, [])
    if not rs:
        continue
    us = statistics.median(r[0] for r in rs)
    print(f"{shape:10} {us:11.2f} {us / base:6.2f} {statistics.median(r[1] for r in rs):11.0f} {sum(r[2] for r in rs):>6}/{sum(r[3] for r in rs):<6} {statistics.median(r[4] for r in rs):8.3f}")
EOF

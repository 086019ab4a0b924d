#!/usr/bin/env bash
# Client memory over a long run: does the runner's client process keep a
# flat RSS through a long open-model HTTP run? Not part of CI.
#
# Builds the runner and runs bench/soak-http.yaml: an open model at RATE
# (default 5000/s) over 50 keep-alive connections for DURATION (default
# 11m) against `runner serve http`, which the runner spawns as its child.
# Every INTERVAL seconds (default 5) the runner process's own VmRSS,
# VmHWM, RssAnon and RssFile (/proc/PID/status; not the target's, which
# is sampled apart) go to bench/out/soak-rss.tsv. At the end it prints
# RSS at minute 2 and minute 10 (the sample nearest each, in time since
# the runner started; with its anonymous and file-backed parts), the
# min and max over minutes 2-10 and max/min (the goal: within ±10 %,
# i.e. max/min <= 1.10 by the strict reading).
#
# RSS alone cannot tell a leak from memory touched for the first time, so
# the heap is reported too: the run's progress log lines (every 5 s, in
# the phase's own time) carry the runner's heap_kib (heap objects: live
# plus garbage not yet collected), heap_live_kib (live at the last GC),
# go_mapped_kib (all the Go runtime holds from the OS) and gc_cycles; they
# go to bench/out/soak-heap.tsv and the summary prints them at minute 2
# and minute 10. A leak grows heap_kib across GCs; a flat heap under a
# rising RSS is pages of already-allocated memory (the histograms'
# buckets, the timeline) touched for the first time: RssAnon stays below
# go_mapped_kib, RssFile below the binary's size.
#
# Usage: nohup bench/soak.sh >bench/out/soak.log 2>&1 &   (about 11.5 minutes)
#        DURATION=3m RATE=2000/s bench/soak.sh             (a shorter try;
#                                  minutes 2-10 then shrink to what exists)
#        RUNNER_BIN=/path/to/runner bench/soak.sh          (skip the build)
# GOGC is passed through (unset, `runner run` uses GOGC=400).
# Writes bench/out/soak-rss.tsv, bench/out/soak-heap.tsv, bench/out/soak.txt
# (the summary) and the run's console output, JSON and TSV in
# bench/out/soak-logs/.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=$ROOT/bench/out
LOGS=$OUT/soak-logs
DURATION=${DURATION:-11m}
RATE=${RATE:-5000/s}
INTERVAL=${INTERVAL:-5}

die() { echo "soak.sh: $*" >&2; exit 2; }

[[ $DURATION =~ ^[1-9][0-9]*(s|m|h)$ ]] || die "DURATION must be like 11m, 660s or 1h, got '$DURATION'"
[[ $RATE =~ ^[1-9][0-9]*$ ]] && RATE=$RATE/s
[[ $RATE =~ ^[1-9][0-9]*/(s|m)$ ]] || die "RATE must be like 5000/s, got '$RATE'"
[[ $INTERVAL =~ ^[1-9][0-9]*$ ]] || die "INTERVAL must be whole seconds >= 1, got '$INTERVAL'"
mkdir -p "$OUT" "$LOGS"

if [[ -n ${RUNNER_BIN:-} ]]; then
  [[ -x $RUNNER_BIN ]] || die "RUNNER_BIN=$RUNNER_BIN is not an executable"
  BIN=$RUNNER_BIN
else
  BIN=$OUT/runner
  echo "building runner into $BIN"
  go build -o "$BIN" ./cmd/runner || die "go build ./cmd/runner failed"
fi

CLIENT_PID=
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  if [[ -n $CLIENT_PID ]] && kill -0 "$CLIENT_PID" 2>/dev/null; then
    # One TERM: the runner stops the load, writes its results and stops
    # the target it spawned.
    kill -TERM "$CLIENT_PID" 2>/dev/null || true
    for _ in $(seq 1 50); do
      kill -0 "$CLIENT_PID" 2>/dev/null || break
      sleep 0.2
    done
    kill -KILL "$CLIENT_PID" 2>/dev/null || true
    wait "$CLIENT_PID" 2>/dev/null || true
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

kib() { awk -v k="$2" '$1 == k":" { print $2; exit }' "/proc/$1/status" 2>/dev/null || true; }

TSV=$OUT/soak-rss.tsv
rm -f "$LOGS/run.json" "$LOGS/run.tsv"
echo "soak: open model $RATE over 50 connections for $DURATION against a spawned runner serve http; sampling every ${INTERVAL}s into $TSV"
SOAK_RATE=$RATE SOAK_DURATION=$DURATION \
  "$BIN" run --log-format json --json "$LOGS/run.json" --tsv "$LOGS/run.tsv" \
  bench/soak-http.yaml >"$LOGS/run.out" 2>"$LOGS/run.err" </dev/null &
CLIENT_PID=$!
t0=$(date +%s.%N)
printf 't_s\tvmrss_kib\tvmhwm_kib\ttarget_rss_kib\trssanon_kib\trssfile_kib\n' >"$TSV"
while kill -0 "$CLIENT_PID" 2>/dev/null; do
  rss=$(kib "$CLIENT_PID" VmRSS)
  hwm=$(kib "$CLIENT_PID" VmHWM)
  anon=$(kib "$CLIENT_PID" RssAnon)
  file=$(kib "$CLIENT_PID" RssFile)
  [[ -n $rss ]] || break
  # The spawned target: the runner's child process (for information).
  child=$(cat /proc/"$CLIENT_PID"/task/*/children 2>/dev/null | tr ' ' '\n' | grep -m1 . || true)
  trss=
  [[ -n $child ]] && trss=$(kib "$child" VmRSS)
  awk -v t="$(date +%s.%N)" -v t0="$t0" -v r="$rss" -v h="$hwm" -v tr="${trss:--}" -v a="${anon:--}" -v f="${file:--}" \
    'BEGIN { printf "%.1f\t%s\t%s\t%s\t%s\t%s\n", t - t0, r, h, tr, a, f }' >>"$TSV"
  sleep "$INTERVAL"
done
rc=0
wait "$CLIENT_PID" || rc=$?
CLIENT_PID=

{
  echo "Client RSS over a long open-model run: $RATE, 50 connections, $DURATION, runner serve http (child); $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host: $(uname -sr), $(nproc --all) cores, GOGC=${GOGC:-unset (runner uses 400)}; runner exit $rc"
  grep -E '^ *(load|throughput|errors|client) ' "$LOGS/run.out" | sed 's/^ */  /' || true
  grep -E '^verdict' "$LOGS/run.out" || true
  awk -F'\t' '
    NR == 1 { next }
    { n++; t[n] = $1; r[n] = $2; h = $3; an[n] = $5; fi[n] = $6 }
    function nearest(s,   k, b, d, bd) {
      b = 0; bd = -1
      for (k = 1; k <= n; k++) { d = t[k] - s; if (d < 0) d = -d; if (bd < 0 || d < bd) { bd = d; b = k } }
      return b
    }
    END {
      if (!n) { print "no samples"; exit 1 }
      a = nearest(120); z = nearest(600)
      mn = -1; mx = 0
      for (k = 1; k <= n; k++) if (t[k] >= 120 && t[k] <= 600) {
        if (mn < 0 || r[k] < mn) { mn = r[k]; tmn = t[k] }
        if (r[k] > mx) { mx = r[k]; tmx = t[k] }
      }
      printf "samples %d over %.0f s; first sample (t=%.0fs) %.1f MiB, peak VmHWM %.1f MiB\n", n, t[n], t[1], r[1] / 1024, h / 1024
      printf "minute 2  (t=%.0fs): %.1f MiB\n", t[a], r[a] / 1024
      printf "minute 10 (t=%.0fs): %.1f MiB\n", t[z], r[z] / 1024
      printf "  of which anonymous (heap, stacks) %.1f -> %.1f MiB, file-backed (the binary) %.1f -> %.1f MiB\n", an[a] / 1024, an[z] / 1024, fi[a] / 1024, fi[z] / 1024
      if (mn > 0) {
        printf "minutes 2-10: min %.1f MiB (t=%.0fs), max %.1f MiB (t=%.0fs), max/min %.3f, minute 10 / minute 2 %.3f\n", mn / 1024, tmn, mx / 1024, tmx, mx / mn, r[z] / r[a]
        printf "goal (flat within +-10%%): %s\n", (mx / mn <= 1.10 ? "met" : "NOT met")
      } else print "no samples between minute 2 and minute 10 (DURATION too short)"
    }' "$TSV"
  echo "samples: $TSV (t_s since the runner started)"
  # The runner's heap from its progress log lines (JSON, one a line).
  HEAP=$OUT/soak-heap.tsv
  awk '
    function num(k,   m) { if (match($0, "\"" k "\":[0-9.]+")) { m = substr($0, RSTART, RLENGTH); sub(/^[^:]*:/, "", m); return m } return "" }
    BEGIN { printf "phase_s\theap_kib\theap_live_kib\tgo_mapped_kib\tgc_cycles\n" }
    /"message":"progress"/ && /"heap_kib"/ { printf "%.1f\t%s\t%s\t%s\t%s\n", num("elapsed") / 1000, num("heap_kib"), num("heap_live_kib"), num("go_mapped_kib"), num("gc_cycles") }
  ' "$LOGS/run.err" >"$HEAP"
  awk -F'\t' '
    NR == 1 { next }
    { n++; t[n] = $1; h[n] = $2; l[n] = $3; g[n] = $4; c[n] = $5 }
    function nearest(s,   k, b, d, bd) {
      b = 0; bd = -1
      for (k = 1; k <= n; k++) { d = t[k] - s; if (d < 0) d = -d; if (bd < 0 || d < bd) { bd = d; b = k } }
      return b
    }
    function line(what, k) { printf "%s (phase t=%.0fs): heap %.1f MiB, live at last GC %.1f MiB, Go-mapped %.1f MiB, %d GC cycles\n", what, t[k], h[k] / 1024, l[k] / 1024, g[k] / 1024, c[k] }
    END {
      if (!n) { print "heap: no progress lines with heap figures in the log"; exit }
      line("heap, first", 1); line("heap, minute 2 ", nearest(120)); line("heap, minute 10", nearest(600)); line("heap, last    ", n)
      mn = -1; mx = 0
      for (k = 1; k <= n; k++) if (t[k] >= 120 && t[k] <= 600) { if (mn < 0 || h[k] < mn) mn = h[k]; if (h[k] > mx) mx = h[k] }
      if (mn > 0) printf "heap minutes 2-10: min %.1f MiB, max %.1f MiB, max/min %.3f\n", mn / 1024, mx / 1024, mx / mn
    }' "$HEAP"
  echo "heap samples: $HEAP (phase_s: the phase's own clock, about 1 s behind t_s)"
} | tee "$OUT/soak.txt"

#!/usr/bin/env bash
# Client CPU cost per request: runner side by side with peer load generators
# (wrk, ab, hey, bombardier, fortio, vegeta). Not part of CI.
#
# One reference target (`runner serve http`) is pinned to core 1; every load
# generator is pinned to core 0 and drives it closed-loop at full speed with
# 50 keep-alive connections for DURATION seconds. Each tool runs ROUNDS times,
# the tool order rotating from round to round. /usr/bin/time measures the
# tool's user and system CPU, max RSS and wall time; the request count comes
# from the tool's own output. The table shows the median over the rounds of
# each column (taken column by column), the share of the client core the
# tool used (near 100 %: the client was the bottleneck), and runner's CPU
# per request divided by each peer's.
#
# Needs a machine with at least 2 cores, taskset, /usr/bin/time (GNU), Go,
# and python3 for the open-model part (runner's JSON report); peers are installed (apt-get for wrk and ab, go install into
# bench/out/bin for the rest), and a peer that cannot be installed is skipped
# with a note. Set SKIP_INSTALL=1 to use only what is already there, and
# FORCE_INSTALL=1 to rebuild Go peers already in bench/out/bin.
#
# A second part offers OPEN_RATE requests/s (default 20000) for
# OPEN_DURATION seconds (default 5) with 50 connections to the same target,
# open model, one round per tool that can pace (runner, fortio, bombardier,
# hey with a per-worker rate, vegeta), and prints each one's achieved rate
# over the offered one, its CPU per request and, for runner, the p99 send
# lag (actual send minus intended start) from its JSON report. OPEN_RATE=0
# skips it; OPEN_TOOLS picks the tools (runner-precise: runner with
# dispatch_window 0s; runner-goroutines: runner with --no-event-loop).
#
# PERF=1 re-splits each closed-loop run's CPU into user and system by
# perf's samples (cpu-clock at 4 kHz, perf from Debian's linux-perf): the
# kernel's own split, which /usr/bin/time reports, counts whole ticks (250
# a second), so a tool's user time per request moves by 10 % or more from
# run to run. The total (user + system) is the kernel's either way.
#
# Usage: bench/peers.sh            (DURATION=10 ROUNDS=3: about 5 minutes)
#        DURATION=5 ROUNDS=1 bench/peers.sh
#        TOOLS="runner wrk" bench/peers.sh
#        RUNNER_BIN=/path/to/runner bench/peers.sh   (skip the build)
# Writes bench/out/peers.txt (the table), bench/out/peers-raw.tsv (one row
# per tool and round) and the tools' output in bench/out/peers-logs/.
#
# Caveats: every tool pays its own start-up inside the measured CPU (runner
# also calibrates its timer and writes its reports, about the same for all
# durations), so short DURATIONs favour the tools that start fastest;
# req/s is requests / DURATION. The tools do not do the same work per
# request (runner and fortio record full latency histograms, vegeta keeps
# every result, wrk is C with an event loop), which is the point of the
# comparison rather than a flaw in it.
set -euo pipefail

BENCH=peers.sh
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
DURATION=${DURATION:-10}
ROUNDS=${ROUNDS:-3}
OPEN_RATE=${OPEN_RATE:-20000}
OPEN_DURATION=${OPEN_DURATION:-5}
# runner runs with its default dispatch window (1 ms above 5,000/s),
# runner-precise with dispatch_window: 0s (each arrival on its own instant),
# runner-goroutines as runner with --no-event-loop (the pacer and a
# goroutine per connection instead of the event loop).
OPEN_TOOLS=${OPEN_TOOLS:-"runner runner-precise runner-goroutines fortio bombardier hey vegeta"}
ALL_TOOLS="runner wrk ab hey bombardier fortio vegeta"
TOOLS=${TOOLS:-$ALL_TOOLS}

[[ $DURATION =~ ^[1-9][0-9]*$ ]] || die "DURATION must be a whole number of seconds >= 1, got '$DURATION'"
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "ROUNDS must be a whole number >= 1, got '$ROUNDS'"
[[ $OPEN_RATE =~ ^[0-9]+$ ]] || die "OPEN_RATE must be a whole number of requests/s (0: skip the open-model part), got '$OPEN_RATE'"
[[ $OPEN_DURATION =~ ^[1-9][0-9]*$ ]] || die "OPEN_DURATION must be a whole number of seconds >= 1, got '$OPEN_DURATION'"
if ((OPEN_RATE > 0 && OPEN_RATE % CONNS != 0)); then
  die "OPEN_RATE must be a multiple of $CONNS (hey paces per worker), got $OPEN_RATE"
fi
for t in $TOOLS; do
  [[ " $ALL_TOOLS " == *" $t "* ]] || die "unknown tool '$t' in TOOLS (known: $ALL_TOOLS)"
done
bench_setup peers-logs

# ---------------------------------------------------------------- install
install_peers $TOOLS
build_runner

active=()
for t in $TOOLS; do
  case $t in
    ab) exe=ab ;;
    *) exe=$t ;;
  esac
  if command -v "$exe" >/dev/null; then
    active+=("$t")
  else
    note "$exe not available: skipping $t"
  fi
done
((${#active[@]})) || die "no tool available"

# ---------------------------------------------------------------- target
start_target

# ---------------------------------------------------------------- tools
# run_tool TOOL LOG: runs TOOL pinned to the client core under /usr/bin/time,
# its stdout and stderr in LOG, the time figures in LOG.time.
# With MODE=open the tool offers OPEN_RATE for OPEN_DURATION instead.
run_tool() {
  local tool=$1 log=$2
  if [[ ${MODE:-closed} == open ]]; then
    case $tool in
      runner-precise) open_cmd runner "$OPEN_RATE" "$OPEN_DURATION" 0s ;;
      runner-goroutines)
        open_cmd runner "$OPEN_RATE" "$OPEN_DURATION"
        CMD=("${CMD[@]:0:2}" --no-event-loop "${CMD[@]:2}") ;;
      *) open_cmd "$tool" "$OPEN_RATE" "$OPEN_DURATION" ;;
    esac
    # PERF splits the closed loop's CPU only: its sampling is not paid
    # by the open-model runs.
    PERF=0 run_pinned "$tool" $((OPEN_DURATION + 60)) "$log"
    return
  fi
  case $tool in
    runner)
      rm -f "$WORK/runner.tsv" "$WORK/runner.json"
      runner_scenario "$WORK/scenario.yaml" closed "$DURATION"
      CMD=(runner run -q --log-level warn --json "$WORK/runner.json" --tsv "$WORK/runner.tsv" "$WORK/scenario.yaml") ;;
    wrk) CMD=(wrk -t1 -c"$CONNS" -d"${DURATION}s" "$URL") ;;
    ab) CMD=(ab -k -c "$CONNS" -t "$DURATION" -n 10000000 "$URL") ;;
    hey) CMD=(hey -c "$CONNS" -z "${DURATION}s" "$URL") ;;
    bombardier) CMD=(bombardier -c "$CONNS" -d "${DURATION}s" "$URL") ;;
    fortio) CMD=(fortio load -c "$CONNS" -qps 0 -t "${DURATION}s" "$URL") ;;
    vegeta)
      CMD=(vegeta attack -rate=0 -max-workers "$CONNS" -duration "${DURATION}s"
        -targets "$WORK/vegeta.targets" -output "$WORK/vegeta.bin") ;;
  esac
  # 1 a rule failed (none here), 4 inconclusive (typically: the client
  # core is saturated, which is the point): both are complete runs.
  run_pinned "$tool" $((DURATION + 60)) "$log"
}

RAW=$OUT/peers-raw.tsv
printf 'tool\tround\trequests\terrors\tuser_s\tsys_s\tmaxrss_kib\twall_s\n' >"$RAW"
failed=()
n=${#active[@]}
total=$((n * ROUNDS))
step=0
for ((round = 1; round <= ROUNDS; round++)); do
  for ((i = 0; i < n; i++)); do
    tool=${active[$(((i + round - 1) % n))]}
    step=$((step + 1))
    log=$LOGS/$tool-$round.log
    printf '[%d/%d] round %d: %-10s ' "$step" "$total" "$round" "$tool"
    if ! run_tool "$tool" "$log"; then
      echo "FAILED (exit status; see $log)"
      failed+=("$tool#$round")
      continue
    fi
    if ! parsed=$(parse "$tool" "$log") || [[ -z $parsed ]]; then
      echo "FAILED (could not read the request count; see $log)"
      failed+=("$tool#$round")
      continue
    fi
    read -r reqs errs <<<"$parsed"
    user="" sys="" rss="" wall=""
    read -r user sys rss wall <<<"$(time_figures "$log")" || true
    if [[ -z $wall ]] || ((reqs == 0)); then
      echo "FAILED (no CPU figures or no requests; see $log)"
      failed+=("$tool#$round")
      continue
    fi
    read -r user sys <<<"$(perf_split "$log" "$user" "$sys")"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$tool" "$round" "$reqs" "$errs" "$user" "$sys" "$rss" "$wall" >>"$RAW"
    awk -v r="$reqs" -v e="$errs" -v u="$user" -v s="$sys" -v d="$DURATION" -v w="$wall" \
      'BEGIN { printf "%9d req  %8.0f req/s  %6.2f µs CPU/req  core %3.0f%%  errors %d\n", r, r / d, (u + s) * 1e6 / r, (w > 0 ? (u + s) * 100 / w : 0), e }'
    sleep 1
  done
done

# ---------------------------------------------------------------- table
table() {
  echo "Client CPU per request: $URL (runner serve http on core $TARGET_CORE), each tool on core $CLIENT_CORE"
  echo "$CONNS keep-alive connections, closed loop, ${DURATION}s, median of $ROUNDS round(s); $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host: $(uname -sr), $(nproc --all) cores, $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null || echo '?'), $(go version | awk '{ print $3 }')"
  echo
  awk -F'\t' -v d="$DURATION" -v perfsplit="${PERF:-0}" -v order="${active[*]}" '
    function median(list, k,   a, m, i, j, t) {
      m = split(list, a, " ")
      for (i = 2; i <= m; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] + 0 > t + 0; j--) a[j + 1] = a[j]; a[j + 1] = t }
      return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
    }
    NR == 1 { next }
    {
      t = $1; n[t]++
      req[t] = req[t] " " $3; err[t] = err[t] " " $4
      cpu[t] = cpu[t] " " ($5 + $6) * 1e6 / $3; usr[t] = usr[t] " " $5 * 1e6 / $3
      rss[t] = rss[t] " " $7 / 1024; core[t] = core[t] " " ($8 > 0 ? ($5 + $6) * 100 / $8 : 0)
    }
    END {
      k = split(order, tools, " ")
      for (i = 1; i <= k; i++) { t = tools[i]; if (n[t]) { c[t] = median(cpu[t]); u[t] = median(usr[t]) } }
      printf "%-11s %6s %10s %9s %7s %22s %6s %8s %18s\n", "tool", "rounds", "requests", "req/s", "errors", "CPU µs/req (user)", "core", "RSS MiB", "runner/peer (user)"
      for (i = 1; i <= k; i++) {
        t = tools[i]
        if (!n[t]) { printf "%-11s %6s   (no successful round)\n", t, 0; continue }
        r = median(req[t])
        ratio = (t == "runner" || !n["runner"]) ? "-" : sprintf("%.2fx (%.2fx)", c["runner"] / c[t], u["runner"] / u[t])
        printf "%-11s %6d %10d %9.0f %7d %13.2f (%6.2f) %5.0f%% %8.1f %18s\n", t, n[t], r, r / d, median(err[t]), c[t], u[t], median(core[t]), median(rss[t]), ratio
      }
      print ""
      print "CPU µs/req = (user + system CPU of the tool process) / requests; runner/peer > 1 means runner spends more client CPU per request"
      print "(in brackets: user-space CPU alone" (perfsplit == 1 ? ", split from the total by perf samples at 4 kHz: PERF=1)." : ", as the kernel splits it, in whole ticks).")
      print "core = that CPU / the tool wall time: near 100% the client core is the bottleneck; well below, the target is, and the"
      print "tool CPU per request is inflated by idle wake-ups (fewer responses per read), so compare saturated tools with care."
    }' "$RAW"
  if ((${#failed[@]})); then
    echo "failed rounds (not in the medians): ${failed[*]}"
  fi
}
echo
table | tee "$OUT/peers.txt"

# ---------------------------------------------------------------- open model
if ((OPEN_RATE > 0)); then
  echo
  echo "Open model: $OPEN_RATE req/s offered for ${OPEN_DURATION}s, $CONNS connections, one round per tool"
  OPEN_TXT=$WORK/open.txt
  printf "%-17s %10s %10s %9s %17s %6s %13s %12s %s\n" tool requests "req/s" achieved "CPU µs/req (user)" core "send lag p99" "early max" verdict >"$OPEN_TXT"
  for tool in $OPEN_TOOLS; do
    [[ " ${active[*]} " == *" ${tool%%-*} "* ]] || continue
    log=$LOGS/$tool-open.log
    printf 'open: %-10s ' "$tool"
    if ! MODE=open run_tool "$tool" "$log"; then
      echo "FAILED (exit status; see $log)"
      continue
    fi
    if ! parsed=$(parse "${tool%%-*}" "$log") || [[ -z $parsed ]]; then
      echo "FAILED (could not read the request count; see $log)"
      continue
    fi
    read -r reqs errs <<<"$parsed"
    read -r user sys rss wall <<<"$(time_figures "$log")" || true
    lag="-" early="-" outcome="-"
    achieved=$(awk -v r="$reqs" -v d="$OPEN_DURATION" -v o="$OPEN_RATE" 'BEGIN { printf "%.4f", r / d / o }')
    if [[ $tool == runner* ]]; then
      read -r a o l _ outcome _ e _ <<<"$(runner_json "$log")"
      if [[ $a != "?" ]]; then
        achieved=$(awk -v a="$a" -v o="$o" 'BEGIN { printf "%.4f", a / o }')
        lag=$(awk -v l="$l" 'BEGIN { printf "%.3f ms", l }')
        early=$(awk -v e="$e" 'BEGIN { printf "%.3f ms", e }')
      fi
    fi
    echo "done"
    awk -v t="$tool" -v r="$reqs" -v d="$OPEN_DURATION" -v a="$achieved" -v u="$user" -v s="$sys" -v w="$wall" -v l="$lag" \
      -v e="$early" -v v="$outcome" 'BEGIN { printf "%-17s %10d %10.0f %9s %9.2f (%5.2f) %5.0f%% %13s %12s %s\n", t, r, r / d, a, (u + s) * 1e6 / r, u * 1e6 / r, (w > 0 ? (u + s) * 100 / w : 0), l, e, v }' >>"$OPEN_TXT"
    sleep 1
  done
  {
    echo
    echo "Open model: $OPEN_RATE req/s offered for ${OPEN_DURATION}s to the same target, $CONNS connections, each tool on core $CLIENT_CORE"
    cat "$OPEN_TXT"
    echo "achieved = requests / (offered rate x duration); runner's is its own achieved_rate / offered_rate from its JSON report"
    echo "(arrivals sent in the window), and its send lag is actual send minus intended start, every request (0 for one sent early);"
    echo "early max: the most a request went out before its intended start (runner: dispatch window, 1 ms by default above 5,000/s;"
    echo "runner-precise: dispatch_window 0s). The peers do not report when they sent each request."
    echo "verdict: runner's own (pass, or inconclusive when its run-validity checks found it could not keep up);"
    echo "runner-goroutines: runner with --no-event-loop (the pacer and a goroutine per connection)."
  } | tee -a "$OUT/peers.txt"
fi
echo "wrote $OUT/peers.txt, $RAW and logs in $LOGS"

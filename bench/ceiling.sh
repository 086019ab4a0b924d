#!/usr/bin/env bash
# The open-model ceiling on one client core: the highest offered rate at
# which runner, and each peer measured the same way, still keeps up. Not
# part of CI.
#
# One reference target (`runner serve http`) is pinned to core 1; every load
# generator is pinned to core 0 and offers an open-model rate to GET / over
# 50 keep-alive connections for DURATION seconds, starting at START
# requests/s and going up by STEP up to MAX. A tool stops at its first
# failing step; with RETRY=1 a failing step is run once more first (the
# machine is shared) and only a second failure ends the tool. A step passes
# when
#   - achieved/offered >= 0.999 (peers: completed requests / DURATION over
#     the offered rate, and the tool must not have run longer than
#     DURATION + 0.5 s, which would overstate that; runner: the phase's own
#     achieved_rate / offered_rate from its JSON report, arrivals sent in
#     the phase's window),
#   - no errors,
#   - for runner, the p99 send lag (actual send minus intended start, every
#     request) is under 100 µs, the verdict is conclusive (exit status not
#     4, outcome not "inconclusive"), and no request went out early (with
#     runner-grouped: none earlier than the window, from the report's
#     send_early),
#   - and the target was not the bottleneck: its process used under 90 % of
#     its core over the step (utime+stime from /proc/PID/stat before and
#     after, over DURATION), and its core as a whole (the target, the
#     network interrupts there over DURATION, and other processes over the
#     whole step) was under 90 % busy. Otherwise the step is "target-bound"
#     (the target and its interrupts used 90 %: the tool stops there, and
#     what it passed is a lower bound, not a client ceiling) or "disturbed"
#     (other processes filled the target's core).
# The ceiling is the highest passing rate (the true one lies below the next
# STEP). When the failure that ended a tool came while other processes ran
# for 50 ms or more on the client core or on the target's (a descheduled
# target answers late, and a tool waiting for a free connection then sends
# late; 50 ms is 1 % of a 5 s step, and what the averages show as 0 % on a
# quiet machine stays under 10 ms),
# or when the tool stopped target-bound, the ceiling is shown as a lower
# bound (">="), or as "inconclusive" when that was the first step.
#
# runner is runner with `dispatch_window: 0s` in its open phase (each
# arrival sent at its own instant; runner's default is 1ms above 5,000/s),
# and runner-grouped runner with `dispatch_window: WINDOW` (default 1ms,
# runner's default above 5,000/s): arrivals due within the window of a
# group's first are sent together, up to the window early. Each step checks
# in runner's report that the phase used that window. A runner that does
# not know the key (it then sends every arrival at its own instant) runs
# without it, and runner-grouped is skipped with a note.
#
# Caveats: 2 cores shared with whatever else runs (the load average is
# printed, and the "others" and "oth.t" columns show what other processes
# took from the client and the target core during each step). The peers do not report
# send lag, so their figure is achieved/offered only, which favours them:
# they pace differently and nothing here measures how far their sends
# strayed from a uniform schedule (fortio by default fires all its
# connections' ticks together, rate/50 per connection; bombardier uses a
# token bucket; vegeta paces one attack loop and drops ticks when all its
# workers are busy; hey, if added to TOOLS, paces each worker at rate/50 and
# does not catch up). Client CPU per request and the client core share come
# from /usr/bin/time over the whole tool process, start-up included (runner
# also calibrates its timer and writes its reports), so they are higher at
# low rates than the phase alone costs.
#
# Needs 2 cores, taskset, timeout, /usr/bin/time (GNU), Go and python3;
# peers are installed into bench/out/bin with `go install` (SKIP_INSTALL=1:
# use only what is there).
#
# Usage: bench/ceiling.sh     (up to 15 steps × 5 s per tool; a tool that
#                              passes everything takes about 2 minutes, so
#                              at most about 10 minutes, less as tools stop)
#        DURATION=3 STEP=10000 MAX=60000 bench/ceiling.sh
#        TOOLS="runner runner-grouped" WINDOW=500us bench/ceiling.sh
#        RUNNER_BIN=/path/to/runner bench/ceiling.sh   (skip the build)
#        LAG_P99_MAX_MS=0.5 bench/ceiling.sh   (runner's send lag bound,
#                              default 0.1: for a machine whose timer
#                              wake-ups alone miss 100 µs at p99)
# Writes bench/out/ceiling.txt (each step, then the summary),
# bench/out/ceiling-raw.tsv (one row per run) and the tools' output in
# bench/out/ceiling-logs/.
set -euo pipefail

BENCH=ceiling.sh
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
DURATION=${DURATION:-5}
START=${START:-10000}
STEP=${STEP:-5000}
MAX=${MAX:-80000}
RETRY=${RETRY:-1}
WINDOW=${WINDOW:-1ms}
ALL_TOOLS="runner runner-grouped fortio bombardier vegeta hey"
TOOLS=${TOOLS:-runner runner-grouped fortio bombardier vegeta}
RATIO_MIN=0.999                          # achieved/offered
LAG_P99_MAX_MS=${LAG_P99_MAX_MS:-0.1}    # runner's send lag p99, ms
TARGET_MAX=0.90                          # share of the target's core
OTHERS_MAX_MS=50                         # CPU time of other processes on the client or the target core

[[ $DURATION =~ ^[1-9][0-9]*$ ]] || die "DURATION must be a whole number of seconds >= 1, got '$DURATION'"
for v in START STEP MAX; do
  [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "$v must be a whole number of requests/s >= 1, got '${!v}'"
done
((MAX >= START)) || die "MAX ($MAX) must be at least START ($START)"
(((MAX - START) / STEP < 200)) || die "START=$START STEP=$STEP MAX=$MAX makes more than 200 steps"
[[ $RETRY == 0 || $RETRY == 1 ]] || die "RETRY must be 0 or 1, got '$RETRY'"
[[ $LAG_P99_MAX_MS =~ ^[0-9]+(\.[0-9]+)?$ ]] && awk -v l="$LAG_P99_MAX_MS" 'BEGIN { exit !(l > 0) }' ||
  die "LAG_P99_MAX_MS must be a positive number of milliseconds, got '$LAG_P99_MAX_MS'"
[[ $WINDOW =~ ^[0-9]+(\.[0-9]+)?(ns|us|µs|ms|s)$ ]] || die "WINDOW must be a duration such as 1ms or 500us, got '$WINDOW'"
for t in $TOOLS; do
  [[ " $ALL_TOOLS " == *" $t "* ]] || die "unknown tool '$t' in TOOLS (known: $ALL_TOOLS)"
done
if [[ " $TOOLS " == *" hey "* ]] && ((START % CONNS || STEP % CONNS)); then
  die "with hey in TOOLS, START and STEP must be multiples of $CONNS (hey paces each of its $CONNS workers), got $START and $STEP"
fi
command -v python3 >/dev/null || die "python3 not found (it reads runner's JSON report)"
CLK_TCK=$(getconf CLK_TCK)
WINDOW_NS=$(awk -v w="$WINDOW" 'BEGIN {
  n = w + 0; u = w; sub(/^[0-9.]+/, "", u)
  printf "%.0f", n * (u == "ns" ? 1 : u == "us" || u == "µs" ? 1e3 : u == "ms" ? 1e6 : 1e9) }')
bench_setup ceiling-logs

# ---------------------------------------------------------------- tools
peers=()
for t in $TOOLS; do [[ $t == runner* ]] || peers+=("$t"); done
install_peers "${peers[@]}"
build_runner
start_target

# window_known WINDOW: whether this runner accepts open.dispatch_window
# (an older one rejects the key); any other rejection ends the script.
window_known() {
  local msg
  runner_scenario "$WORK/check.yaml" "$START" "$DURATION" "$1"
  msg=$(runner validate "$WORK/check.yaml" 2>&1) && return 0
  [[ $msg == *dispatch_window*"unknown key"* ]] && return 1
  die "runner validate rejects a scenario with dispatch_window: $1: $msg"
}
# A runner that knows the window defaults it to 1ms above 5,000/s: plain
# runner asks for 0s (each arrival at its own instant) so that it stays
# the precise pacer beside runner-grouped; an older runner has no window.
RUNNER_WINDOW=
if window_known 0s; then
  RUNNER_WINDOW=0s
fi
active=()
for t in $TOOLS; do
  if [[ $t == runner-grouped ]]; then
    if [[ -z $RUNNER_WINDOW ]] || ! window_known "$WINDOW"; then
      note "this runner does not know dispatch_window yet (runner validate: unknown key): skipping runner-grouped"
      continue
    fi
  elif ! command -v "$t" >/dev/null; then
    note "$t not available: skipping it"
    continue
  fi
  active+=("$t")
done
((${#active[@]})) || die "no tool available"

# ---------------------------------------------------------------- measuring
# snapshot: prints "target_ticks c0_tasks c0_total c1_tasks c1_irq
# c1_total" in clock ticks: the target's utime+stime (/proc/PID/stat fields
# 14 and 15, after the command name, which may hold spaces), and for the
# client core (c0) and the target core (c1) from /proc/stat the time spent
# in tasks (user+nice+system+steal: steal is time the hypervisor gave to
# others), in interrupts (irq+softirq) and in all (idle and iowait too).
snapshot() {
  local stat
  stat=$(<"/proc/$TARGET_PID/stat") || die "cannot read /proc/$TARGET_PID/stat: the target is gone"
  stat=${stat##*) }
  awk -v st="$stat" -v c0="cpu$CLIENT_CORE" -v c1="cpu$TARGET_CORE" '
    BEGIN { split(st, f, " "); t = f[12] + f[13] }
    $1 == c0 { a = $2 + $3 + $4 + $9; b = $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9 }
    $1 == c1 { c = $2 + $3 + $4 + $9; d = $7 + $8; e = $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9 }
    END { print t, a, b, c, d, e }' /proc/stat
}

# step_cmd TOOL RATE: sets CMD for one step.
step_cmd() {
  case $1 in
    runner) open_cmd runner "$2" "$DURATION" "$RUNNER_WINDOW" ;;
    runner-grouped) open_cmd runner "$2" "$DURATION" "$WINDOW" ;;
    *) open_cmd "$1" "$2" "$DURATION" ;;
  esac
}

RAW=$OUT/ceiling-raw.tsv
TXT=$WORK/steps.txt
printf 'tool\toffered\tattempt\trequests\terrors\tachieved_ratio\tuser_s\tsys_s\twall_s\tcpu_us_per_req\tclient_core\tothers_client_core\ttarget_core\ttarget_core_all\tirq_target_core\tothers_target_core\tothers_client_ms\tothers_target_ms\tsend_lag_p99_ms\tsend_early_max_ms\tstatus\treason\n' >"$RAW"

# run_step TOOL RATE ATTEMPT: runs one step, appends its row to RAW and its
# line to TXT, and sets STATUS (pass, fail, target-bound, or disturbed when
# the target's core was saturated by other processes), REASON and
# DISTURBED (1 when the step failed while other processes ran
# OTHERS_MAX_MS or more on the client core or on the target's: an average
# over the step hides how they ran, and 20 ms in one go is enough to spoil a
# p99: the target, descheduled, answers late and fills the connections, and
# a tool waiting for a free one sends late).
run_step() {
  local tool=$1 rate=$2 attempt=$3 log rc=0 before after parsed reqs errs
  local user="" sys="" rss="" wall="" a o lag="" rerrs outcome code early="" window ratio="" figures want=0
  log=$LOGS/$tool-$rate-$attempt.log
  STATUS=fail REASON="" DISTURBED=0
  step_cmd "$tool" "$rate"
  before=$(snapshot)
  run_pinned "${tool%-grouped}" $((DURATION + 60)) "$log" || rc=$?
  after=$(snapshot)
  read -r user sys rss wall <<<"$(time_figures "$log")" || true
  if ((rc != 0)); then
    REASON="exit status $rc; see $log"
    ((rc != 124)) || REASON="killed by timeout after $((DURATION + 60))s; see $log"
  elif [[ -z $wall ]]; then
    REASON="no CPU figures from /usr/bin/time; see $log"
  elif ! parsed=$(parse "${tool%-grouped}" "$log") || [[ -z $parsed ]]; then
    REASON="could not read the request count; see $log"
  fi
  read -r reqs errs <<<"${parsed:-0 0}"
  if [[ -z $REASON && $tool == runner* ]]; then
    read -r a o lag rerrs outcome code early window <<<"$(runner_json "$log")"
    [[ $tool == runner-grouped ]] && want=$WINDOW_NS
    if [[ $a == "?" ]]; then
      REASON="no readable JSON report; see $log"
    elif [[ $window != "$want" ]]; then
      REASON="runner paced with a dispatch window of $window ns, not $want ns; see $log"
    elif ! awk -v o="$o" -v r="$rate" 'BEGIN { exit !(o == r) }'; then
      REASON="runner offered $o/s, not $rate/s; see $log"
    else
      ratio=$(awk -v a="$a" -v o="$o" 'BEGIN { printf "%.4f", a / o }')
      errs=$rerrs
    fi
  elif [[ -z $REASON ]]; then
    ratio=$(awk -v r="$reqs" -v d="$DURATION" -v o="$rate" 'BEGIN { printf "%.4f", r / d / o }')
  fi
  # figures: cpu_us_per_req client_core others_client_core target_core
  # target_core_all irq_target_core others_target_core, then the other
  # processes' CPU on the client and on the target core in ms
  figures=$(awk -v b="$before" -v e="$after" -v clk="$CLK_TCK" -v d="$DURATION" \
    -v u="${user:-0}" -v s="${sys:-0}" -v w="${wall:-0}" -v r="$reqs" '
    function pos(x) { return x > 0 ? x : 0 }
    BEGIN {
      split(b, x, " "); split(e, y, " ")
      for (i = 1; i <= 6; i++) dd[i] = y[i] - x[i]
      tool = u + s
      others0 = dd[3] > 0 ? pos(dd[2] / clk - tool) / (dd[3] / clk) : 0
      target = dd[1] / clk / d
      irq1 = dd[5] / clk / d
      others1 = dd[6] > 0 ? pos(dd[4] - dd[1]) / dd[6] : 0
      printf "%.2f %.3f %.3f %.3f %.3f %.3f %.3f %.0f %.0f", (r > 0 ? tool * 1e6 / r : 0), (w > 0 ? tool / w : 0), others0,
        target, target + irq1 + others1, irq1, others1, pos(dd[2] / clk - tool) * 1000, pos(dd[4] - dd[1]) / clk * 1000
    }')
  local cpu client others0 target all1 irq1 others1 others0_ms others1_ms
  read -r cpu client others0 target all1 irq1 others1 others0_ms others1_ms <<<"$figures"
  if [[ -z $REASON ]]; then
    local why=()
    if awk -v t="$target" -v i="$irq1" -v m="$TARGET_MAX" 'BEGIN { exit !(t + i >= m) }'; then
      STATUS=target-bound
      why+=("target-bound at $rate/s: the target used $(pct "$target") of its core, its network interrupts $(pct "$irq1")")
    elif awk -v t="$all1" -v m="$TARGET_MAX" 'BEGIN { exit !(t >= m) }'; then
      # The target may have been starved rather than busy: no client
      # ceiling can be read from this step either way.
      STATUS=disturbed
      why+=("the target's core was $(pct "$all1") busy, $(pct "$others1") of it other processes (target $(pct "$target"), interrupts $(pct "$irq1"))")
    fi
    ((errs == 0)) || why+=("$errs errors")
    awk -v r="$ratio" -v m="$RATIO_MIN" 'BEGIN { exit !(r < m) }' && why+=("achieved/offered $ratio < $RATIO_MIN")
    if [[ $tool == runner* ]]; then
      awk -v l="$lag" -v m="$LAG_P99_MAX_MS" 'BEGIN { exit !(l >= m) }' &&
        why+=("send lag p99 $(awk -v l="$lag" 'BEGIN { printf "%.3f", l }') ms >= $LAG_P99_MAX_MS ms")
      [[ $code == 4 || $outcome == inconclusive ]] && why+=("verdict inconclusive (outcome $outcome, exit $code; see $log)")
      [[ $code == 4 || $code == 0 ]] || why+=("runner exit code $code (outcome $outcome; see $log)")
      # Early sends are the window's by design, and nothing else's: a
      # request sent earlier than the window allows (or early at all
      # without one) would be a burst the scenario did not ask for.
      if [[ $early == - ]]; then
        [[ $tool == runner ]] || why+=("no send_early in the report: cannot check the window")
      elif awk -v e="$early" -v w="$want" 'BEGIN { exit !(e * 1e6 > w) }'; then
        why+=("sent up to $early ms early, beyond a window of $want ns")
      fi
    elif awk -v w="$wall" -v d="$DURATION" 'BEGIN { exit !(w > d + 0.5) }'; then
      why+=("ran ${wall}s for a ${DURATION}s step: requests / DURATION would overstate its rate")
    fi
    if ((${#why[@]} == 0)); then
      STATUS=pass REASON=ok
    else
      REASON=$(IFS=';' && echo "${why[*]}" | sed 's/;/; /g')
    fi
  fi
  if [[ $STATUS == disturbed ]]; then
    DISTURBED=1
  elif [[ $STATUS == fail ]] && ((others0_ms >= OTHERS_MAX_MS || others1_ms >= OTHERS_MAX_MS)); then
    DISTURBED=1
    REASON="$REASON (disturbed: other processes ran $others0_ms ms on the client core, $others1_ms ms on the target's)"
  fi
  [[ $tool == runner* ]] || lag="" early=""
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$tool" "$rate" "$attempt" \
    "$reqs" "$errs" "${ratio:--}" "${user:--}" "${sys:--}" "${wall:--}" "$cpu" "$client" "$others0" "$target" "$all1" "$irq1" "$others1" "$others0_ms" "$others1_ms" \
    "${lag:-n/a}" "${early:-n/a}" "$STATUS" "$REASON" >>"$RAW"
  awk -v t="$tool" -v r="$rate" -v n="$attempt" -v a="${ratio:--}" -v c="$cpu" -v cc="$client" -v o0="$others0" \
    -v tg="$target" -v a1="$all1" -v o1="$others1" -v l="${lag:-}" -v st="$STATUS" -v why="$REASON" '
    function p(x) { return sprintf("%3.0f%%", x * 100) }
    BEGIN {
      lag = l == "" ? "n/a" : sprintf("%.3f ms", l)
      printf "%-15s %8d %2d %8s %10.2f %6s %6s %6s %6s %6s %10s  %s%s\n", t, r, n, a, c, p(cc), p(o0), p(tg), p(a1), p(o1), lag, st,
        (why == "ok" ? "" : ": " why)
    }' | tee -a "$TXT"
}

# pct FRACTION: prints FRACTION as a whole percentage.
pct() { awk -v f="$1" 'BEGIN { printf "%.0f %%", f * 100 }'; }

# ---------------------------------------------------------------- steps
printf '%-15s %8s %2s %8s %11s %6s %6s %6s %6s %6s %10s  %s\n' tool offered '#' "ach/off" "CPU µs/req" client others target "t.core" "oth.t" "lag p99" result | tee "$TXT"
declare -A CEILING WHY
for tool in "${active[@]}"; do
  CEILING[$tool]="< $START/s" WHY[$tool]=""
  for ((rate = START; rate <= MAX; rate += STEP)); do
    run_step "$tool" "$rate" 1
    if [[ $STATUS != pass && $RETRY == 1 ]]; then
      sleep 1
      run_step "$tool" "$rate" 2
    fi
    if [[ $STATUS == pass ]]; then
      CEILING[$tool]="$rate/s"
      WHY[$tool]="every step passed, the last offered $rate/s (MAX=$MAX/s, START=$START/s, STEP=$STEP/s)"
      sleep 1
      continue
    fi
    bound=$DISTURBED
    if [[ $STATUS == target-bound ]]; then
      WHY[$tool]="$REASON (not a client ceiling)"
      bound=1
    else
      WHY[$tool]="$rate/s failed: $REASON"
    fi
    # The client was not what stopped this step, or not alone: what passed
    # is a lower bound, and nothing at all when no step passed.
    if ((bound)); then
      if [[ ${CEILING[$tool]} == "<"* ]]; then
        CEILING[$tool]=inconclusive
      else
        CEILING[$tool]=">= ${CEILING[$tool]}"
      fi
    fi
    break
  done
  [[ ${WHY[$tool]} == every* ]] && CEILING[$tool]=">= ${CEILING[$tool]}"
  sleep 1
done

# ---------------------------------------------------------------- report
{
  echo "Open-model ceiling on one client core: $URL (runner serve http on core $TARGET_CORE), each tool on core $CLIENT_CORE"
  echo "$CONNS keep-alive connections, GET /, ${DURATION}s per step, $START/s + $STEP/s up to $MAX/s, retry $RETRY; $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host: $(uname -sr), $(nproc --all) cores, $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null || echo '?'), $(go version | awk '{ print $3 }'); load average $LOAD1 before, $(cut -d' ' -f1 /proc/loadavg) after"
  echo
  cat "$TXT"
  echo
  echo "ach/off: achieved/offered (runner: its JSON's achieved_rate / offered_rate; peers: requests / DURATION / offered)."
  echo "CPU µs/req and client: the tool process's user+sys CPU (/usr/bin/time, start-up included) per request and over its wall time."
  echo "others: other processes' share of the client core over the step. target: the target process's CPU over DURATION;"
  echo "t.core: the target's core busy (target and interrupts over DURATION, other processes over the step); oth.t: that"
  echo "core's other processes alone."
  echo "lag p99: runner's send lag (actual send - intended start), p99 over every request."
  echo
  printf '%-15s %-12s %s\n' tool ceiling "why it stopped"
  for tool in "${active[@]}"; do
    printf '%-15s %-12s %s\n' "$tool" "${CEILING[$tool]}" "${WHY[$tool]}"
  done
  echo
  echo "A step passes with achieved/offered >= $RATIO_MIN, no errors and the target's core under $(pct "$TARGET_MAX") busy; runner's also"
  echo "with send lag p99 < $LAG_P99_MAX_MS ms and a conclusive verdict. The peers report no send lag: their ceiling is achieved/offered"
  echo "alone, which favours them (a tool that sends late or in bursts but keeps the count passes). runner sends each arrival"
  echo "at its own instant ($([[ -n $RUNNER_WINDOW ]] && echo "dispatch_window: $RUNNER_WINDOW" || echo "a runner without dispatch_window")); runner-grouped sends the arrivals due within"
  echo "dispatch_window $WINDOW together, up to $WINDOW early. \">=\": every step passed, or the tool stopped"
  echo "target-bound, or its last step failed while other processes ran $OTHERS_MAX_MS ms or more on the client or the target core"
  echo "(or saturated the target's: \"disturbed\"): the ceiling is at least that (\"inconclusive\" if that was the first step)."
} >"$OUT/ceiling.txt"
echo
sed -n '/^tool  *ceiling/,$p' "$OUT/ceiling.txt"
echo "wrote $OUT/ceiling.txt, $RAW and logs in $LOGS"

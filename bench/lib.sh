# Shared shell functions of the benchmarks that set runner beside its peers
# (bench/peers.sh, bench/ceiling.sh). Sourced, not run: the caller sets BENCH
# (its name, for messages) and `set -euo pipefail` first, then calls
# bench_setup, and uses the rest as it needs.
#
# Conventions: one reference target (`runner serve http`) pinned to core
# TARGET_CORE (1), every load generator pinned to core CLIENT_CORE (0) under
# /usr/bin/time and `timeout`, 127.0.0.1 only, everything written under
# bench/out/ (gitignored); Go peers are installed into bench/out/bin.

CONNS=50
CLIENT_CORE=0
TARGET_CORE=1

die() { echo "$BENCH: $*" >&2; exit 2; }
note() { echo "$BENCH: $*" >&2; }

# bench_setup LOGDIR: checks the host (Go, taskset, GNU time, 2 cores), warns
# when the load average says other work shares the cores, sets ROOT, OUT, BIN
# and LOGS (bench/out/LOGDIR), and puts BIN first on PATH.
bench_setup() {
  cd "$(dirname "${BASH_SOURCE[0]}")/.."
  ROOT=$PWD
  OUT=$ROOT/bench/out
  BIN=$OUT/bin
  LOGS=$OUT/$1
  command -v go >/dev/null || die "go not found on PATH"
  command -v taskset >/dev/null || die "taskset not found (util-linux)"
  command -v timeout >/dev/null || die "timeout not found (coreutils)"
  [[ -x /usr/bin/time ]] || die "/usr/bin/time not found (Debian package: time)"
  local cores
  cores=$(nproc --all)
  ((cores >= 2)) || die "need at least 2 cores (client on core $CLIENT_CORE, target on core $TARGET_CORE), have $cores"
  LOAD1=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo 0)
  if awk -v l="$LOAD1" 'BEGIN { exit !(l > 1.0) }'; then
    note "warning: load average is $LOAD1 before the benchmark: other work on these cores skews the figures"
  fi
  mkdir -p "$BIN" "$LOGS"
  export PATH="$BIN:$PATH"
}

# install_peers TOOL...: installs the peers among TOOL that are missing: wrk
# and ab with apt-get (when root), vegeta, hey, bombardier and fortio with
# `go install` into BIN. SKIP_INSTALL=1 installs nothing, FORCE_INSTALL=1
# rebuilds the Go peers already in BIN. A peer that cannot be installed is
# left out with a note (the caller skips tools it cannot find).
install_peers() {
  local want=" $* " need_apt=() mod bin
  if [[ $want == *" wrk "* ]] && ! command -v wrk >/dev/null; then need_apt+=(wrk); fi
  if [[ $want == *" ab "* ]] && ! command -v ab >/dev/null; then need_apt+=(apache2-utils); fi
  if ((${#need_apt[@]})); then
    if [[ ${SKIP_INSTALL:-0} == 1 ]]; then
      note "SKIP_INSTALL=1: not installing ${need_apt[*]}"
    elif command -v apt-get >/dev/null && [[ $(id -u) == 0 ]]; then
      echo "installing ${need_apt[*]} with apt-get"
      if ! apt-get install -y "${need_apt[@]}" >"$LOGS/apt-get.log" 2>&1; then
        note "apt-get install ${need_apt[*]} failed (see $LOGS/apt-get.log); trying apt-get update first"
        { apt-get update && apt-get install -y "${need_apt[@]}"; } >>"$LOGS/apt-get.log" 2>&1 ||
          note "apt-get install ${need_apt[*]} failed again; skipping them"
      fi
    else
      note "cannot apt-get install ${need_apt[*]} (no apt-get or not root); skipping them"
    fi
  fi
  for mod in github.com/tsenart/vegeta/v12@v12.13.0 github.com/rakyll/hey@latest \
    github.com/codesenberg/bombardier@latest fortio.org/fortio@v1.63.0; do
    bin=${mod%@*}
    bin=${bin%/v[0-9]*}
    bin=${bin##*/}
    [[ $want == *" $bin "* ]] || continue
    if [[ -x $BIN/$bin && ${FORCE_INSTALL:-0} != 1 ]]; then
      continue
    fi
    if [[ ${SKIP_INSTALL:-0} == 1 ]]; then
      note "SKIP_INSTALL=1: not installing $bin"
      continue
    fi
    echo "installing $mod into $BIN"
    GOBIN=$BIN go install "$mod" >"$LOGS/install-$bin.log" 2>&1 ||
      note "go install $mod failed (see $LOGS/install-$bin.log); skipping $bin"
  done
}

# build_runner: puts the runner under test in BIN/runner: a copy of
# RUNNER_BIN when it is set, else a fresh build of ./cmd/runner.
build_runner() {
  if [[ -n ${RUNNER_BIN:-} ]]; then
    [[ -x $RUNNER_BIN ]] || die "RUNNER_BIN=$RUNNER_BIN is not an executable"
    [[ $RUNNER_BIN -ef $BIN/runner ]] || cp "$RUNNER_BIN" "$BIN/runner"
    echo "using runner binary $RUNNER_BIN (not rebuilt)"
  else
    echo "building runner into $BIN"
    go build -o "$BIN/runner" ./cmd/runner ||
      die "go build ./cmd/runner failed (RUNNER_BIN=path uses a prebuilt binary instead)"
  fi
}

# start_target: makes the scratch directory WORK, installs the cleanup trap
# (stops the tool in flight and the target, removes WORK), and starts
# `runner serve http --listen 127.0.0.1:0` pinned to TARGET_CORE; sets
# TARGET_PID, PORT and URL (http://127.0.0.1:PORT/). Its output goes to
# LOGS/target.out and LOGS/target.err.
start_target() {
  WORK=$(mktemp -d "${TMPDIR:-/tmp}/$BENCH.XXXXXX")
  TARGET_PID=
  TOOL_PID=
  trap cleanup EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  # Piped into head, the script dies of SIGPIPE: stop the target first.
  trap 'exit 141' PIPE
  taskset -c "$TARGET_CORE" "$BIN/runner" serve http --listen 127.0.0.1:0 \
    >"$LOGS/target.out" 2>"$LOGS/target.err" &
  TARGET_PID=$!
  PORT=
  local _
  for _ in $(seq 1 100); do
    PORT=$(sed -n 's|^listening on http://127\.0\.0\.1:\([0-9][0-9]*\).*|\1|p' "$LOGS/target.out" | head -n1)
    [[ -n $PORT ]] && break
    kill -0 "$TARGET_PID" 2>/dev/null || die "target exited early: $(cat "$LOGS/target.err")"
    sleep 0.1
  done
  [[ -n $PORT ]] || die "target did not print 'listening on http://127.0.0.1:PORT' within 10s"
  URL=http://127.0.0.1:$PORT/
  echo "GET $URL" >"$WORK/vegeta.targets"
  echo "target: runner serve http on $URL (pid $TARGET_PID, core $TARGET_CORE)"
}

# cleanup is the EXIT trap start_target installs; it keeps the exit status.
cleanup() {
  local rc=$? _
  trap - EXIT INT TERM PIPE
  ((rc == 0)) || echo >&2
  if [[ -n ${TOOL_PID:-} ]] && kill -0 "$TOOL_PID" 2>/dev/null; then
    kill -- "$TOOL_PID" 2>/dev/null || true
    wait "$TOOL_PID" 2>/dev/null || true
  fi
  if [[ -n ${TARGET_PID:-} ]] && kill -0 "$TARGET_PID" 2>/dev/null; then
    kill -TERM "$TARGET_PID" 2>/dev/null || true
    for _ in 1 2 3 4 5 6 7 8 9 10; do
      kill -0 "$TARGET_PID" 2>/dev/null || break
      sleep 0.2
    done
    kill -KILL "$TARGET_PID" 2>/dev/null || true
    wait "$TARGET_PID" 2>/dev/null || true
  fi
  [[ -n ${WORK:-} ]] && rm -rf "$WORK"
  exit "$rc"
}

# runner_scenario FILE MODEL DURATION [WINDOW]: writes a runner scenario for
# the target: MODEL is "closed" (CONNS connections at full speed) or a rate
# in requests/s (open model, CONNS connections, with dispatch_window WINDOW
# when it is given), for DURATION seconds.
runner_scenario() {
  local file=$1 model=$2 dur=$3 window=${4:-} phase
  if [[ $model == closed ]]; then
    phase="{closed: {connections: $CONNS}, duration: ${dur}s}"
  elif [[ -n $window ]]; then
    phase="{open: {rate: $model/s, connections: $CONNS, dispatch_window: $window}, duration: ${dur}s}"
  else
    phase="{open: {rate: $model/s, connections: $CONNS}, duration: ${dur}s}"
  fi
  cat >"$file" <<EOF
version: 1
name: $BENCH-runner
target: {url: http://127.0.0.1:$PORT}
driver: {http: {path: /}}
phases: [$phase]
EOF
}

# open_cmd TOOL RATE DURATION [WINDOW]: sets the array CMD to TOOL's command
# offering RATE requests/s (open model) for DURATION seconds over CONNS
# connections; for runner it also writes the scenario (WINDOW: its
# dispatch_window, none when empty). hey paces each of its CONNS workers at
# RATE/CONNS, so RATE must be a multiple of CONNS for it.
open_cmd() {
  local tool=$1 rate=$2 dur=$3 window=${4:-}
  case $tool in
    runner)
      rm -f "$WORK/runner.tsv" "$WORK/runner.json"
      runner_scenario "$WORK/open.yaml" "$rate" "$dur" "$window"
      CMD=(runner run -q --log-level warn --json "$WORK/runner.json" --tsv "$WORK/runner.tsv" "$WORK/open.yaml") ;;
    fortio) CMD=(fortio load -c "$CONNS" -qps "$rate" -t "${dur}s" "$URL") ;;
    bombardier) CMD=(bombardier -c "$CONNS" -r "$rate" -d "${dur}s" "$URL") ;;
    hey) CMD=(hey -c "$CONNS" -q $((rate / CONNS)) -z "${dur}s" "$URL") ;;
    vegeta)
      CMD=(vegeta attack -rate="$rate" -max-workers "$CONNS" -duration "${dur}s"
        -targets "$WORK/vegeta.targets" -output "$WORK/vegeta.bin") ;;
    *) die "open_cmd: $tool cannot pace" ;;
  esac
}

# run_pinned TOOL LIMIT LOG: runs CMD pinned to the client core under
# /usr/bin/time, killed after LIMIT seconds; its stdout and stderr go to
# LOG, the time figures ("user sys maxrss_kib wall") to LOG.time. For
# vegeta the text report is appended to LOG; for runner the JSON and TSV
# reports are kept as LOG.json and LOG.tsv, and exit status 1 (a rule
# failed) and 4 (inconclusive) count as complete runs (the caller reads the
# outcome from LOG.json). Returns the tool's exit status otherwise.
run_pinned() {
  local tool=$1 limit=$2 log=$3 rc=0
  rm -f "$log.time" "$log.json" "$log.tsv"
  # timeout runs in a process group of its own and passes a TERM on to it,
  # which is how cleanup stops a tool in flight.
  local wrap=()
  if [[ ${PERF:-0} == 1 ]]; then
    # Sampled at 4 kHz: the user/system split of the tool's CPU (perf_split).
    wrap=(perf record -q -e cpu-clock -F 4000 -o "$log.perf" --)
  fi
  timeout -k 5 "$limit" taskset -c "$CLIENT_CORE" "${wrap[@]}" \
    /usr/bin/time -f '%U %S %M %e' -o "$log.time" "${CMD[@]}" >"$log" 2>&1 </dev/null &
  TOOL_PID=$!
  wait "$TOOL_PID" || rc=$?
  TOOL_PID=
  if [[ $tool == vegeta && -s $WORK/vegeta.bin ]]; then
    vegeta report "$WORK/vegeta.bin" >>"$log" 2>&1 || true
    rm -f "$WORK/vegeta.bin"
  fi
  if [[ $tool == runner* ]]; then
    [[ -s $WORK/runner.tsv ]] && cp "$WORK/runner.tsv" "$log.tsv"
    [[ -s $WORK/runner.json ]] && cp "$WORK/runner.json" "$log.json"
    [[ $rc == 1 || $rc == 4 ]] && rc=0
  fi
  return "$rc"
}

# time_figures LOG: prints "user_s sys_s maxrss_kib wall_s" from LOG.time,
# nothing when /usr/bin/time wrote none (the tool was killed).
time_figures() {
  grep -E '^[0-9.]+ [0-9.]+ [0-9]+ [0-9.]+$' "$1.time" 2>/dev/null | tail -n1 || true
}

# perf_split LOG USER SYS: with PERF=1, prints "user sys" re-split by the
# share of LOG.perf's samples taken in user space (the tool's code, its
# libraries and the vDSO): the kernel's own split counts whole ticks (250
# a second here), too few to tell a tool's user time within 10 %.
# Without PERF=1 (or without samples) it prints USER SYS unchanged.
perf_split() {
  local log=$1 user=$2 sys=$3 share
  if [[ ${PERF:-0} != 1 || ! -s $log.perf ]]; then
    echo "$user $sys"
    return
  fi
  share=$(perf report -i "$log.perf" --sort dso --stdio 2>/dev/null |
    awk '!/^#/ && NF >= 2 && $2 != "[kernel.kallsyms]" { gsub("%", "", $1); s += $1 } END { print s + 0 }')
  awk -v u="$user" -v s="$sys" -v p="$share" 'BEGIN { t = u + s; printf "%.4f %.4f\n", t * p / 100, t * (1 - p / 100) }'
}

# parse TOOL LOG: prints "requests errors" from the tool's own output.
parse() {
  local tool=$1 log=$2
  case $tool in
    runner)
      awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
        { r += $col["requests"]; e += $col["errors"] }
        END { if (NR > 1) print r, e }' "$log.tsv" ;;
    wrk)
      awk '/ requests in / { r = $1 }
        /Socket errors:/ { gsub(/,/, ""); e += $4 + $6 + $8 + $10 }
        /Non-2xx or 3xx responses:/ { e += $NF }
        END { if (r != "") print r, e + 0 }' "$log" ;;
    ab)
      awk '/^Complete requests:/ { r = $3 } /^Failed requests:/ { e += $3 }
        /^Non-2xx responses:/ { e += $3 }
        END { if (r != "") print r, e + 0 }' "$log" ;;
    hey)
      awk '/^Status code distribution:/ { s = 1; next } /^Error distribution:/ { s = 2; next }
        s == 1 && /\[[0-9]+\][ \t]+[0-9]+ responses/ {
          code = $1; gsub(/[^0-9]/, "", code); r += $2; if (code !~ /^2/) e += $2 }
        s == 2 && /^ *\[[0-9]+\]/ { n = $1; gsub(/[^0-9]/, "", n); r += n; e += n }
        END { if (r != "") print r, e + 0 }' "$log" ;;
    bombardier)
      awk '/1xx - .*2xx - / { gsub(/,/, ""); r = $6; e = $3 + $9 + $12 + $15 }
        /^ *others - / { e += $3 }
        END { if (r != "") print r + e, e + 0 }' "$log" ;;
    fortio)
      awk '/^All done [0-9]+ calls/ { r = $3 }
        /^Code -?[0-9]+ : / { if ($2 !~ /^2/) e += $4 }
        END { if (r != "") print r, e + 0 }' "$log" ;;
    vegeta)
      awk '/^Requests +\[total/ { gsub(/,/, ""); r = $5 }
        /^Status Codes +\[code:count\]/ {
          for (i = 4; i <= NF; i++) { split($i, kv, ":"); if (kv[1] !~ /^2/) e += kv[2] } }
        END { if (r != "") print r, e + 0 }' "$log" ;;
  esac
}

# runner_json LOG: prints "achieved_rate offered_rate send_lag_p99_ms errors
# outcome exit_code send_early_max_ms dispatch_window_ns" of the first
# phase of runner's JSON report LOG.json (errors: the phase's failed
# requests; outcome and exit_code: the run's, e.g. inconclusive and 4;
# send_early_max_ms: how early the earliest request went out with a
# dispatch window, "-" from a runner that does not report it;
# dispatch_window_ns: the window the phase used, 0 when the report has
# none), "? ? ? ? ? ? ? ?" when the report is missing or unreadable.
runner_json() {
  python3 - "$1.json" <<'PY' 2>/dev/null || echo "? ? ? ? ? ? ? ?"
import json, sys
d = json.load(open(sys.argv[1]))
ph = d["result"]["phases"][0]
m = ph["metrics"]
se = m.get("send_early")
early = "-" if se is None else (se["max_ms"] if se["samples"] else 0)
window = ph["phase"].get("dispatch_window_ns", 0)
print(m["achieved_rate"], m["offered_rate"], m["send_lag"]["p99_ms"], ph["summary"]["errors"], d["outcome"], d["exit_code"], early, window)
PY
}

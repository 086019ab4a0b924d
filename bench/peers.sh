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
# skips it.
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

cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=$ROOT/bench/out
BIN=$OUT/bin
LOGS=$OUT/peers-logs
DURATION=${DURATION:-10}
ROUNDS=${ROUNDS:-3}
CONNS=50
OPEN_RATE=${OPEN_RATE:-20000}
OPEN_DURATION=${OPEN_DURATION:-5}
OPEN_TOOLS="runner fortio bombardier hey vegeta"
ALL_TOOLS="runner wrk ab hey bombardier fortio vegeta"
TOOLS=${TOOLS:-$ALL_TOOLS}
CLIENT_CORE=0
TARGET_CORE=1

die() { echo "peers.sh: $*" >&2; exit 2; }
note() { echo "peers.sh: $*" >&2; }

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
command -v go >/dev/null || die "go not found on PATH"
command -v taskset >/dev/null || die "taskset not found (util-linux)"
[[ -x /usr/bin/time ]] || die "/usr/bin/time not found (Debian package: time)"
cores=$(nproc --all)
((cores >= 2)) || die "need at least 2 cores (client on core $CLIENT_CORE, target on core $TARGET_CORE), have $cores"

load1=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo 0)
if awk -v l="$load1" 'BEGIN { exit !(l > 1.0) }'; then
  note "warning: load average is $load1 before the benchmark: other work on these cores skews the figures"
fi

mkdir -p "$BIN" "$LOGS"
export PATH="$BIN:$PATH"

# ---------------------------------------------------------------- install
install_peers() {
  local need_apt=() mod bin
  command -v wrk >/dev/null || need_apt+=(wrk)
  command -v ab >/dev/null || need_apt+=(apache2-utils)
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
install_peers

if [[ -n ${RUNNER_BIN:-} ]]; then
  [[ -x $RUNNER_BIN ]] || die "RUNNER_BIN=$RUNNER_BIN is not an executable"
  [[ $RUNNER_BIN -ef $BIN/runner ]] || cp "$RUNNER_BIN" "$BIN/runner"
  echo "using runner binary $RUNNER_BIN (not rebuilt)"
else
  echo "building runner into $BIN"
  go build -o "$BIN/runner" ./cmd/runner ||
    die "go build ./cmd/runner failed (RUNNER_BIN=path uses a prebuilt binary instead)"
fi

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
WORK=$(mktemp -d "${TMPDIR:-/tmp}/peers.XXXXXX")
TARGET_PID=
TOOL_PID=
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  ((rc == 0)) || echo >&2
  if [[ -n $TOOL_PID ]] && kill -0 "$TOOL_PID" 2>/dev/null; then
    kill -- "$TOOL_PID" 2>/dev/null || true
    wait "$TOOL_PID" 2>/dev/null || true
  fi
  if [[ -n $TARGET_PID ]] && kill -0 "$TARGET_PID" 2>/dev/null; then
    kill -TERM "$TARGET_PID" 2>/dev/null || true
    for _ in 1 2 3 4 5 6 7 8 9 10; do
      kill -0 "$TARGET_PID" 2>/dev/null || break
      sleep 0.2
    done
    kill -KILL "$TARGET_PID" 2>/dev/null || true
    wait "$TARGET_PID" 2>/dev/null || true
  fi
  rm -rf "$WORK"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

taskset -c "$TARGET_CORE" "$BIN/runner" serve http --listen 127.0.0.1:0 \
  >"$LOGS/target.out" 2>"$LOGS/target.err" &
TARGET_PID=$!
PORT=
for _ in $(seq 1 100); do
  PORT=$(sed -n 's|^listening on http://127\.0\.0\.1:\([0-9][0-9]*\).*|\1|p' "$LOGS/target.out" | head -n1)
  [[ -n $PORT ]] && break
  kill -0 "$TARGET_PID" 2>/dev/null || die "target exited early: $(cat "$LOGS/target.err")"
  sleep 0.1
done
[[ -n $PORT ]] || die "target did not print 'listening on http://127.0.0.1:PORT' within 10s"
URL=http://127.0.0.1:$PORT/
echo "target: runner serve http on $URL (pid $TARGET_PID, core $TARGET_CORE)"

cat >"$WORK/scenario.yaml" <<EOF
version: 1
name: peers-runner
target: {url: http://127.0.0.1:$PORT}
driver: {http: {path: /}}
phases: [{closed: {connections: $CONNS}, duration: ${DURATION}s}]
EOF
cat >"$WORK/open.yaml" <<EOF
version: 1
name: peers-runner-open
target: {url: http://127.0.0.1:$PORT}
driver: {http: {path: /}}
phases: [{open: {rate: $OPEN_RATE/s, connections: $CONNS}, duration: ${OPEN_DURATION}s}]
EOF
echo "GET $URL" >"$WORK/vegeta.targets"

# ---------------------------------------------------------------- tools
# run_tool TOOL LOG: runs TOOL pinned to the client core under /usr/bin/time,
# its stdout and stderr in LOG, the time figures in LOG.time.
# With MODE=open the tool offers OPEN_RATE for OPEN_DURATION instead.
run_tool() {
  local tool=$1 log=$2 limit=$((DURATION + 60)) rc=0
  local -a cmd
  if [[ ${MODE:-closed} == open ]]; then
    limit=$((OPEN_DURATION + 60))
    local d=${OPEN_DURATION}s
    case $tool in
      runner)
        rm -f "$WORK/runner.tsv" "$WORK/runner.json"
        cmd=(runner run -q --log-level warn --json "$WORK/runner.json" --tsv "$WORK/runner.tsv" "$WORK/open.yaml") ;;
      fortio) cmd=(fortio load -c "$CONNS" -qps "$OPEN_RATE" -t "$d" "$URL") ;;
      bombardier) cmd=(bombardier -c "$CONNS" -r "$OPEN_RATE" -d "$d" "$URL") ;;
      hey) cmd=(hey -c "$CONNS" -q $((OPEN_RATE / CONNS)) -z "$d" "$URL") ;;
      vegeta)
        cmd=(vegeta attack -rate="$OPEN_RATE" -max-workers "$CONNS" -duration "$d"
          -targets "$WORK/vegeta.targets" -output "$WORK/vegeta.bin") ;;
    esac
  else
  case $tool in
    runner)
      rm -f "$WORK/runner.tsv" "$WORK/runner.json"
      cmd=(runner run -q --log-level warn --json "$WORK/runner.json" --tsv "$WORK/runner.tsv" "$WORK/scenario.yaml") ;;
    wrk) cmd=(wrk -t1 -c"$CONNS" -d"${DURATION}s" "$URL") ;;
    ab) cmd=(ab -k -c "$CONNS" -t "$DURATION" -n 10000000 "$URL") ;;
    hey) cmd=(hey -c "$CONNS" -z "${DURATION}s" "$URL") ;;
    bombardier) cmd=(bombardier -c "$CONNS" -d "${DURATION}s" "$URL") ;;
    fortio) cmd=(fortio load -c "$CONNS" -qps 0 -t "${DURATION}s" "$URL") ;;
    vegeta)
      cmd=(vegeta attack -rate=0 -max-workers "$CONNS" -duration "${DURATION}s"
        -targets "$WORK/vegeta.targets" -output "$WORK/vegeta.bin") ;;
  esac
  fi
  # timeout runs in a process group of its own and passes a TERM on to it,
  # which is how cleanup stops a tool in flight.
  timeout -k 5 "$limit" taskset -c "$CLIENT_CORE" \
    /usr/bin/time -f '%U %S %M %e' -o "$log.time" "${cmd[@]}" >"$log" 2>&1 </dev/null &
  TOOL_PID=$!
  wait "$TOOL_PID" || rc=$?
  TOOL_PID=
  if [[ $tool == vegeta && -s $WORK/vegeta.bin ]]; then
    vegeta report "$WORK/vegeta.bin" >>"$log" 2>&1 || true
  fi
  if [[ $tool == runner ]]; then
    [[ -s $WORK/runner.tsv ]] && cp "$WORK/runner.tsv" "$log.tsv"
    [[ -s $WORK/runner.json ]] && cp "$WORK/runner.json" "$log.json"
    # 1 a rule failed (none here), 4 inconclusive (typically: the client
    # core is saturated, which is the point): both are complete runs.
    [[ $rc == 1 || $rc == 4 ]] && rc=0
  fi
  return "$rc"
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
    read -r user sys rss wall < <(grep -E '^[0-9.]+ [0-9.]+ [0-9]+ [0-9.]+$' "$log.time" | tail -n1) || true
    if [[ -z $wall ]] || ((reqs == 0)); then
      echo "FAILED (no CPU figures or no requests; see $log)"
      failed+=("$tool#$round")
      continue
    fi
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
  awk -F'\t' -v d="$DURATION" -v order="${active[*]}" '
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
      print "(in brackets: user-space CPU alone)."
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
# runner_open LOG: "achieved offered sendlag_p99_ms" from runner's JSON.
runner_open() {
  python3 - "$1.json" <<'PY' 2>/dev/null || echo "? ? ?"
import json, sys
ph = json.load(open(sys.argv[1]))["result"]["phases"][0]
m = ph["metrics"]
print(m["achieved_rate"], m["offered_rate"], m["send_lag"]["p99_ms"])
PY
}

if ((OPEN_RATE > 0)); then
  echo
  echo "Open model: $OPEN_RATE req/s offered for ${OPEN_DURATION}s, $CONNS connections, one round per tool"
  OPEN_TXT=$WORK/open.txt
  printf "%-11s %10s %10s %9s %17s %6s %16s\n" tool requests "req/s" achieved "CPU µs/req (user)" core "send lag p99" >"$OPEN_TXT"
  for tool in $OPEN_TOOLS; do
    [[ " ${active[*]} " == *" $tool "* ]] || continue
    log=$LOGS/$tool-open.log
    printf 'open: %-10s ' "$tool"
    if ! MODE=open run_tool "$tool" "$log"; then
      echo "FAILED (exit status; see $log)"
      continue
    fi
    if ! parsed=$(parse "$tool" "$log") || [[ -z $parsed ]]; then
      echo "FAILED (could not read the request count; see $log)"
      continue
    fi
    read -r reqs errs <<<"$parsed"
    read -r user sys rss wall < <(grep -E '^[0-9.]+ [0-9.]+ [0-9]+ [0-9.]+$' "$log.time" | tail -n1) || true
    lag="-"
    achieved=$(awk -v r="$reqs" -v d="$OPEN_DURATION" -v o="$OPEN_RATE" 'BEGIN { printf "%.4f", r / d / o }')
    if [[ $tool == runner ]]; then
      read -r a o l <<<"$(runner_open "$log")"
      if [[ $a != "?" ]]; then
        achieved=$(awk -v a="$a" -v o="$o" 'BEGIN { printf "%.4f", a / o }')
        lag=$(awk -v l="$l" 'BEGIN { printf "%.3f ms", l }')
      fi
    fi
    echo "done"
    awk -v t="$tool" -v r="$reqs" -v d="$OPEN_DURATION" -v a="$achieved" -v u="$user" -v s="$sys" -v w="$wall" -v l="$lag" \
      'BEGIN { printf "%-11s %10d %10.0f %9s %9.2f (%5.2f) %5.0f%% %16s\n", t, r, r / d, a, (u + s) * 1e6 / r, u * 1e6 / r, (w > 0 ? (u + s) * 100 / w : 0), l }' >>"$OPEN_TXT"
    sleep 1
  done
  {
    echo
    echo "Open model: $OPEN_RATE req/s offered for ${OPEN_DURATION}s to the same target, $CONNS connections, each tool on core $CLIENT_CORE"
    cat "$OPEN_TXT"
    echo "achieved = requests / (offered rate x duration); runner's is its own achieved_rate / offered_rate from its JSON report"
    echo "(arrivals sent in the window), and its send lag is actual send minus intended start, every request."
  } | tee -a "$OUT/peers.txt"
fi
echo "wrote $OUT/peers.txt, $RAW and logs in $LOGS"

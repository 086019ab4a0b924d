#!/usr/bin/env bash
# Client memory per idle connection: how much resident memory the runner's
# client process spends to hold CONNS open, idle WebSocket and binary frame
# (LKDF) connections. Not part of CI.
#
# For each driver: builds the runner, starts the reference target
# (`runner serve ws-gateway` or `runner serve frame`) as a process of its own
# on 127.0.0.1, then runs bench/idle-DRIVER.yaml: phase "base" holds one
# connection for BASE, phase "idle" holds CONNS connections for HOLD (each
# sends one message when the phase starts, then thinks for an hour). Every
# second the runner's client process's VmRSS and VmHWM (/proc/PID/status)
# are sampled, with the phase it was in, into bench/out/idle-DRIVER-rss.tsv.
#
#   baseline  median VmRSS over the "base" phase (1 connection, before the
#             CONNS connections are dialled)
#   open      VmRSS at the first sample 2 s into the "idle" phase (the
#             runner logs its start once every connection is dialled; the
#             first 2 s carry each connection's one message and reply)
#   held      median VmRSS over the second half of the "idle" phase, its
#             last 3 s left out (the JSON's connections_established says
#             how many were open)
#   per conn  (open|held|peak - baseline) / CONNS, in KiB; peak is VmHWM
#             of the whole run (with the end of the phase: closing every
#             connection, summaries), the worst case.
#   idle KiB/s  how fast VmRSS grew while the connections sat idle
#             (garbage the GC has not collected yet is resident too; see
#             GOGC below).
#
# Target and client share the machine, so each needs CONNS + reserve
# descriptors: the script raises `ulimit -n` (the soft limit up to the
# hard one, and the hard one too when it may).
#
# Usage: bench/idle.sh                 (CONNS=10000 HOLD=60 BASE=10, both
#                                       drivers: about 3½ minutes)
#        DRIVERS=frame CONNS=2000 HOLD=20 bench/idle.sh
#        RUNNER_BIN=/path/to/runner bench/idle.sh   (skip the build)
#        SUMMARY_ONLY=1 bench/idle.sh   (re-print the table from the saved
#                                        samples; CONNS/HOLD as in that run)
# GOGC is passed through (unset, `runner run` uses GOGC=400).
# Prints a table and writes it to bench/out/idle.txt; the runs' console
# output, JSON and target logs go to bench/out/idle-logs/.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=$ROOT/bench/out
LOGS=$OUT/idle-logs
CONNS=${CONNS:-10000}
HOLD=${HOLD:-60}
BASE=${BASE:-10}
DRIVERS=${DRIVERS:-ws frame}
RESERVE=200

die() { echo "idle.sh: $*" >&2; exit 2; }
note() { echo "idle.sh: $*" >&2; }

[[ $CONNS =~ ^[1-9][0-9]*$ ]] || die "CONNS must be a whole number >= 1, got '$CONNS'"
[[ $HOLD =~ ^[1-9][0-9]*$ ]] && ((HOLD >= 10)) || die "HOLD must be whole seconds >= 10, got '$HOLD'"
[[ $BASE =~ ^[1-9][0-9]*$ ]] || die "BASE must be whole seconds >= 1, got '$BASE'"
for d in $DRIVERS; do
  [[ $d == ws || $d == frame ]] || die "unknown driver '$d' in DRIVERS (known: ws frame)"
done
mkdir -p "$OUT" "$LOGS"

# ---------------------------------------------------------------- limits
need=$((CONNS + RESERVE))
hard=$(ulimit -Hn)
if [[ $hard != unlimited ]] && ((hard < need)); then
  ulimit -Hn "$need" 2>/dev/null || note "cannot raise the hard descriptor limit $hard to $need (needs root)"
fi
hard=$(ulimit -Hn)
soft=$(ulimit -Sn)
if [[ $hard == unlimited ]] || ((hard >= need)); then
  [[ $soft != unlimited ]] && ((soft < need)) && ulimit -Sn "$need"
else
  ulimit -Sn "$hard"
  note "descriptor limit $hard < $need needed per process: the run will be refused or fail to dial"
fi
echo "descriptors: ulimit -n $(ulimit -n) (hard $(ulimit -Hn)); local ports $(tr '\t' - </proc/sys/net/ipv4/ip_local_port_range)"

if [[ ${SUMMARY_ONLY:-0} == 1 ]]; then
  BIN=
elif [[ -n ${RUNNER_BIN:-} ]]; then
  [[ -x $RUNNER_BIN ]] || die "RUNNER_BIN=$RUNNER_BIN is not an executable"
  BIN=$RUNNER_BIN
else
  BIN=$OUT/runner
  echo "building runner into $BIN"
  go build -o "$BIN" ./cmd/runner || die "go build ./cmd/runner failed"
fi

TARGET_PID=
CLIENT_PID=
stop_pid() { # stop_pid PID: TERM, wait up to 5 s, KILL
  local pid=$1
  [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 25); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.2
  done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  stop_pid "$CLIENT_PID"
  stop_pid "$TARGET_PID"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

kib() { awk -v k="$2" '$1 == k":" { print $2; exit }' "/proc/$1/status" 2>/dev/null || true; }

# summary_row DRIVER TSV JSON: one line of the table from the samples.
summary_row() {
  local drv=$1 tsv=$2 json=$3 established
  established=$(grep -oE '"connections_established": *[0-9]+' "$json" 2>/dev/null | tail -n1 | tr -dc 0-9 || true)
  awk -F'\t' -v drv="$drv" -v n="$CONNS" -v hold="$HOLD" -v est="${established:-?}" '
    function median(a, m,   i, j, t) {
      for (i = 2; i <= m; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
      return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
    }
    NR == 1 { next }
    $2 == "base" && $3 >= 2 { b[++nb] = $4 }            # skip the first 2 s of base
    $5 > h { h = $5 }                                     # VmHWM: the whole run
    # The first 2 s of idle carry the one message and reply of each
    # connection, its last 3 s the end of the phase (closing, summaries).
    $2 == "idle" && $3 >= 2 && $3 <= hold - 3 { last = $3; i[++ni] = $3; r[ni] = $4; tr[ni] = $6; ts[ni] = $1 }
    END {
      if (!nb || !ni) { printf "%-6s no samples in base or idle (see the logs)\n", drv; exit }
      for (k = 1; k <= ni; k++) if (i[k] >= 2 + (last - 2) / 2) { held[++nh] = r[k]; trg[nh] = tr[k] }
      base = median(b, nb); hl = median(held, nh); tg = median(trg, nh)
      slope = ni > 1 && ts[ni] > ts[1] ? (r[ni] - r[1]) / (ts[ni] - ts[1]) : 0
      printf "%-6s %7d %11s %9.1f %9.1f %9.1f %9.1f %10.2f %10.2f %10.2f %9.0f %10.1f\n", drv, n, est,
        base / 1024, r[1] / 1024, hl / 1024, h / 1024, (r[1] - base) / n, (hl - base) / n, (h - base) / n, slope, tg / 1024
    }' "$tsv"
}

run_driver() { # run_driver ws|frame
  local drv=$1
  local kind scheme port="" tsv=$OUT/idle-$drv-rss.tsv t0 phase st rss hwm trss rc=0
  case $drv in
    ws) kind=ws-gateway scheme=ws ;;
    frame) kind=frame scheme=tcp ;;
  esac
  "$BIN" serve "$kind" --listen 127.0.0.1:0 >"$LOGS/target-$drv.out" 2>"$LOGS/target-$drv.err" &
  TARGET_PID=$!
  for _ in $(seq 1 100); do
    port=$(sed -n "s|^listening on $scheme://127\.0\.0\.1:\([0-9][0-9]*\).*|\1|p" "$LOGS/target-$drv.out" | head -n1)
    [[ -n $port ]] && break
    kill -0 "$TARGET_PID" 2>/dev/null || die "target exited early: $(cat "$LOGS/target-$drv.err")"
    sleep 0.1
  done
  [[ -n $port ]] || die "target did not print 'listening on $scheme://127.0.0.1:PORT' within 10 s"
  echo "[$drv] target: runner serve $kind on 127.0.0.1:$port (pid $TARGET_PID); $CONNS connections, base ${BASE}s, hold ${HOLD}s"

  rm -f "$LOGS/run-$drv.json"
  IDLE_PORT=$port IDLE_CONNS=$CONNS IDLE_HOLD=${HOLD}s IDLE_BASE=${BASE}s \
    "$BIN" run --log-format json --json "$LOGS/run-$drv.json" --tsv "$LOGS/run-$drv.tsv" \
    "bench/idle-$drv.yaml" >"$LOGS/run-$drv.out" 2>"$LOGS/run-$drv.err" </dev/null &
  CLIENT_PID=$!
  printf 't_s\tphase\tphase_s\tvmrss_kib\tvmhwm_kib\ttarget_rss_kib\n' >"$tsv"
  t0=$(date +%s.%N)
  local pstart=$t0 cur=""
  while kill -0 "$CLIENT_PID" 2>/dev/null; do
    rss=$(kib "$CLIENT_PID" VmRSS)
    hwm=$(kib "$CLIENT_PID" VmHWM)
    trss=$(kib "$TARGET_PID" VmRSS)
    [[ -n $rss ]] || break
    # The phase it is in, from the last "phase start"/"phase end" logged:
    # setup before the first, dial-NAME between the end of phase NAME and
    # the next start (the next phase's connections are dialled then).
    phase=$(grep -E '"message":"phase (start|end)"' "$LOGS/run-$drv.err" 2>/dev/null | tail -n1 |
      sed -n 's/.*"phase":"\([^"]*\)".*"message":"phase \(start\|end\)".*/\1 \2/p' || true)
    case $phase in
      *" start") phase=${phase% start} ;;
      *" end") phase=after-${phase% end} ;;
    esac
    phase=${phase:-setup}
    st=$(date +%s.%N)
    if [[ $phase != "$cur" ]]; then cur=$phase pstart=$st; fi
    awk -v t="$st" -v t0="$t0" -v p="$phase" -v ps="$pstart" -v r="$rss" -v h="$hwm" -v tr="${trss:-0}" \
      'BEGIN { printf "%.1f\t%s\t%.1f\t%s\t%s\t%s\n", t - t0, p, t - ps, r, h, tr }' >>"$tsv"
    sleep 1
  done
  wait "$CLIENT_PID" || rc=$?
  CLIENT_PID=
  stop_pid "$TARGET_PID"
  TARGET_PID=
  echo "[$drv] runner exited $rc; $(grep -E '^ *connections ' "$LOGS/run-$drv.out" | tail -n1 | sed 's/^ *//')"
  if ((rc != 0)); then
    note "[$drv] the run did not complete (exit $rc): $(grep -iE 'error|need|limit' "$LOGS/run-$drv.err" "$LOGS/run-$drv.out" | head -n3)"
  fi
  summary_row "$drv" "$tsv" "$LOGS/run-$drv.json" >>"$OUT/idle.rows"
}

rm -f "$OUT/idle.rows"
for d in $DRIVERS; do
  if [[ ${SUMMARY_ONLY:-0} == 1 ]]; then # re-print the table from saved samples
    summary_row "$d" "$OUT/idle-$d-rss.tsv" "$LOGS/run-$d.json" >>"$OUT/idle.rows"
  else
    run_driver "$d"
  fi
done

{
  echo "Client memory per idle connection: $CONNS connections held ${HOLD}s, targets on 127.0.0.1 in their own processes; $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host: $(uname -sr), $(nproc --all) cores, GOGC=${GOGC:-unset (runner uses 400)}"
  echo
  printf '%-6s %7s %11s %9s %9s %9s %9s %10s %10s %10s %9s %10s\n' driver conns established "base MiB" "open MiB" "held MiB" "peak MiB" "open KiB/c" "held KiB/c" "peak KiB/c" "idle KiB/s" "target MiB"
  cat "$OUT/idle.rows"
  echo
  echo "base = median client VmRSS with 1 connection; open = VmRSS 2 s after all connections opened;"
  echo "held = median VmRSS over the second half of the idle phase; peak = VmHWM of the whole run; X KiB/c = (X - base) / conns;"
  echo "idle KiB/s = how fast VmRSS grew while the connections sat idle; target = the target's VmRSS, held."
  echo "Samples: bench/out/idle-<driver>-rss.tsv"
} | tee "$OUT/idle.txt"
rm -f "$OUT/idle.rows"

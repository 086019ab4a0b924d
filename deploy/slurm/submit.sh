#!/usr/bin/env bash
# submit.sh: queue a scaled-out run on Slurm, the N segments (runner.sbatch)
# and, after them, the merge (merge.sbatch), and print the job ids.
#
#   TARGET_URL=http://target.example:8080 RUNNER=/shared/bin/runner \
#     deploy/slurm/submit.sh -n 8 -d /shared/results/run1 deploy/scenario.yaml
#
# Options:
#   -n N      segments (load generators), one Slurm task each (default 4)
#   -d DIR    results directory, on a filesystem every node shares
#             (default ./results/slurm-DATE-PID); created here
#   -o OPT    an sbatch option for both jobs, e.g. -o --partition=load
#             (repeatable)
#   -s OPT    an sbatch option for the segment job only, e.g.
#             -s --ntasks-per-node=4 to put 4 segments on one host
#             (repeatable)
# The environment is exported to the jobs (sbatch's --export=ALL): RUNNER
# (the runner binary, same path on every node; default `runner` on PATH),
# START_DELAY or START_AT and RUNNER_ARGS (see runner.sbatch), and
# whatever the scenario expands (TARGET_URL, tokens).
#
# Prints, one per line (shell-readable):
#   SEGMENT_JOB=ID   the segment job
#   MERGE_JOB=ID     the merge job; its exit code is the verdict
#   RESULTS_DIR=DIR  segments/, merged.json, merged.md, ... and the jobs' logs
# Wait for the merge job (e.g. `scontrol show job ID` until JobState is
# COMPLETED or FAILED; ExitCode=C:0 is runner merge's code C).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
n=4
dir=
both=()
seg=()
while getopts n:d:o:s:h opt; do
  case $opt in
  n) n=$OPTARG ;;
  d) dir=$OPTARG ;;
  o) both+=("$OPTARG") ;;
  s) seg+=("$OPTARG") ;;
  h)
    sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
    exit 0
    ;;
  *)
    echo "usage: submit.sh [-n N] [-d DIR] [-o SBATCH_OPT]... [-s SBATCH_OPT]... SCENARIO (-h: help)" >&2
    exit 2
    ;;
  esac
done
shift $((OPTIND - 1))
if [ $# -ne 1 ]; then
  echo "usage: submit.sh [-n N] [-d DIR] [-o SBATCH_OPT]... [-s SBATCH_OPT]... SCENARIO (-h: help)" >&2
  exit 2
fi
scenario=$(realpath "$1")
if [ ! -f "$scenario" ]; then
  echo "submit.sh: no scenario file $1" >&2
  exit 2
fi
case $n in
'' | *[!0-9]* | 0)
  echo "submit.sh: -n wants a number of segments from 1, not $n" >&2
  exit 2
  ;;
esac
dir=${dir:-results/slurm-$(date +%Y%m%dT%H%M%S)-$$}
mkdir -p "$dir/segments"
dir=$(realpath "$dir")
# A RUNNER given as a path is made absolute: the jobs may start elsewhere.
if [[ ${RUNNER:-} == */* ]]; then
  RUNNER=$(realpath "$RUNNER")
  export RUNNER
fi

jobid() { cut -d';' -f1; } # --parsable prints ID or ID;CLUSTER

segments=$(sbatch --parsable ${both[@]+"${both[@]}"} --ntasks="$n" ${seg[@]+"${seg[@]}"} \
  --output="$dir/slurm-%j-segments.out" \
  "$here/runner.sbatch" "$scenario" "$dir" | jobid)
if ! merge=$(sbatch --parsable ${both[@]+"${both[@]}"} --dependency="afterany:$segments" \
  --output="$dir/slurm-%j-merge.out" \
  "$here/merge.sbatch" "$dir" | jobid) || [ -z "$merge" ]; then
  echo "submit.sh: the merge job was refused; cancelling segment job $segments" >&2
  scancel "$segments" || true
  exit 1
fi

echo "SEGMENT_JOB=$segments"
echo "MERGE_JOB=$merge"
echo "RESULTS_DIR=$dir"

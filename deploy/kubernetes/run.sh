#!/usr/bin/env bash
# Runs one scale-out test on Kubernetes with the manifests next to this
# script, and exits with the merge's exit code: 0 every rule holds, 1 a rule
# failed, 2 invalid input (a segment missing or duplicated), 3 could not run,
# 4 inconclusive.
#
#   RUNNER_IMAGE=registry.example.com/runner:v1 deploy/kubernetes/run.sh
#
# Environment:
#   RUNNER_IMAGE   image with `runner` on its PATH (required)
#   START_DELAY    lead time before the segments start, as `date -d` reads
#                  it after a plus sign (default "2 min"): enough for N pods
#                  to be scheduled and pull the image, or a late segment
#                  exits 3 and fails the run
#   NAMESPACE      namespace for every object (default: kubectl's)
#   POLL_SECONDS   how often to look at the Jobs (default 10)
#
# Steps: delete the previous run's Jobs (a Job's template cannot change);
# fix the start instant and the run's directory in ConfigMap runner-run;
# apply scale-out.yaml (scenario, results claim, the Indexed Job of the
# segments); wait until that Job is Complete or Failed; apply
# merge-job.yaml whatever the segments did (a failed run's merge says which
# segment is missing or could not run); wait for it; print its log and exit
# with its container's exit code. N lives in scale-out.yaml only.
#
# Clock: the segments start at START_AT by their nodes' clocks; the nodes
# must be NTP-synchronised (see scale-out.yaml).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${RUNNER_IMAGE:?set RUNNER_IMAGE to an image with runner on its PATH}"
start_delay=${START_DELAY:-2 min}
poll=${POLL_SECONDS:-10}

k() { kubectl ${NAMESPACE:+--namespace "$NAMESPACE"} "$@"; }

# manifest FILE: FILE with the image placeholder replaced.
manifest() { sed "s|RUNNER_IMAGE|${RUNNER_IMAGE}|g" "$here/$1"; }

# wait_job NAME: waits until Job NAME has ended and prints Complete or
# Failed. A failed `kubectl get` (an API server hiccup) is tried again.
wait_job() {
	local conds
	while :; do
		conds=$(k get job "$1" -o jsonpath='{range .status.conditions[?(@.status=="True")]}{.type}{" "}{end}') || conds=
		case " $conds " in
		*" Complete "*) echo Complete && return ;;
		*" Failed "*) echo Failed && return ;;
		esac
		sleep "$poll"
	done
}

# Foreground: the old pods are gone before new ones need their nodes.
k delete job runner-segments runner-merge --ignore-not-found --cascade=foreground --wait=true

start_at=$(date -u -d "+$start_delay" +%Y-%m-%dT%H:%M:%SZ)
run_id=$(date -u -d "$start_at" +%Y%m%dT%H%M%SZ)
k create configmap runner-run --from-literal=START_AT="$start_at" --from-literal=RUN_ID="$run_id" \
	--dry-run=client -o yaml | k apply -f -
manifest scale-out.yaml | k apply -f -
echo "segments start at $start_at; results in /results/$run_id on claim runner-results" >&2

segments=$(wait_job runner-segments)
echo "Job runner-segments: $segments" >&2
manifest merge-job.yaml | k apply -f -
merge=$(wait_job runner-merge)
echo "Job runner-merge: $merge" >&2
k logs job/runner-merge || true

code=$(k get pods -l job-name=runner-merge \
	-o jsonpath='{.items[0].status.containerStatuses[0].state.terminated.exitCode}') || code=
case "$code" in
'' | *[!0-9]*)
	echo "runner merge left no exit code (its pod never ran or is gone): could not run" >&2
	exit 3
	;;
esac
if [ "$code" = 0 ] && [ "$segments" != Complete ]; then
	# Cannot happen with a merge that needs every segment; never pass then.
	echo "the merge passed but Job runner-segments $segments: could not run" >&2
	exit 3
fi
exit "$code"

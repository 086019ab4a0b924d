package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/runner-dev/runner/engine"
)

// segmentEnvs are the environment variables `--segment auto` reads, in
// order: the first pair set names the segment. base is subtracted from
// the index (GitLab counts from 1); countVar "" means the index variable
// alone is set and N must come from somewhere else (auto/N, or
// RUNNER_SEGMENTS for a Kubernetes Indexed Job, which sets no count).
var segmentEnvs = []struct {
	engine, index, count, base string
}{
	{"Slurm step (srun -n N)", "SLURM_PROCID", "SLURM_NTASKS", ""},
	{"Slurm job array", "SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_MIN"},
	{"GitLab CI parallel", "CI_NODE_INDEX", "CI_NODE_TOTAL", "1"},
	{"Kubernetes Indexed Job", "JOB_COMPLETION_INDEX", "RUNNER_SEGMENTS", ""},
}

// parseSegment reads --segment: K/N, auto (K and N from the engine's
// environment, segmentEnvs) or auto/N (K from it, N given). It returns
// the segment and where it came from, for the run's header. Errors name
// the flag's value and the variables read.
func parseSegment(spec string, getenv func(string) string) (engine.Segment, string, error) {
	k, n, _ := strings.Cut(spec, "/")
	if k != "auto" {
		s, err := engine.ParseSegment(spec)
		return s, "--segment " + spec, err
	}
	envs := segmentEnvs
	if getenv("SLURM_ARRAY_TASK_ID") != "" && (getenv("SLURM_NTASKS") == "" || getenv("SLURM_NTASKS") == "1") {
		// A job array's task is a one-task job: its SLURM_PROCID is 0 in
		// every task, the array variables tell them apart.
		envs = []struct{ engine, index, count, base string }{segmentEnvs[1]}
	}
	for _, e := range envs {
		idx := getenv(e.index)
		if idx == "" {
			continue
		}
		count := getenv(e.count)
		if n != "" {
			if count != "" && count != n {
				return engine.Segment{}, "", fmt.Errorf("--segment %s: %s says %s segments, the flag %s", spec, e.count, count, n)
			}
			count = n
		}
		if count == "" {
			return engine.Segment{}, "", fmt.Errorf("--segment %s: %s=%s names the index, but %s is not set: give the count as --segment auto/N", spec, e.index, idx, e.count)
		}
		i, err := strconv.Atoi(idx)
		if err != nil {
			return engine.Segment{}, "", fmt.Errorf("--segment %s: %s=%q is not an integer", spec, e.index, idx)
		}
		if e.base != "" {
			b := e.base
			if v, err := strconv.Atoi(b); err == nil {
				if i < v {
					return engine.Segment{}, "", fmt.Errorf("--segment %s: %s=%s, but it counts from %d", spec, e.index, idx, v)
				}
				i -= v
			} else if getenv(b) == "" {
				return engine.Segment{}, "", fmt.Errorf("--segment %s: %s=%s names the task, but %s is not set (Slurm sets it for a job array)", spec, e.index, idx, b)
			} else if v, err := strconv.Atoi(getenv(b)); err == nil {
				i -= v
				if step := getenv("SLURM_ARRAY_TASK_STEP"); e.index == "SLURM_ARRAY_TASK_ID" && step != "" && step != "1" {
					st, err := strconv.Atoi(step)
					if err != nil || st < 1 || i%st != 0 {
						return engine.Segment{}, "", fmt.Errorf("--segment %s: SLURM_ARRAY_TASK_ID=%s is not on the array's step SLURM_ARRAY_TASK_STEP=%q from SLURM_ARRAY_TASK_MIN=%s", spec, idx, step, getenv(b))
					}
					i /= st
				}
			} else {
				return engine.Segment{}, "", fmt.Errorf("--segment %s: %s=%q is not an integer", spec, b, getenv(b))
			}
		}
		s, err := engine.ParseSegment(fmt.Sprintf("%d/%s", i, count))
		if err != nil {
			return engine.Segment{}, "", fmt.Errorf("--segment %s from %s (%s=%s, %s=%s): %v", spec, e.engine, e.index, idx, e.count, count, err)
		}
		return s, fmt.Sprintf("%s: %s=%s, %s=%s", e.engine, e.index, idx, e.count, count), nil
	}
	var names []string
	for _, e := range segmentEnvs {
		names = append(names, e.index)
	}
	return engine.Segment{}, "", fmt.Errorf("--segment %s: none of %s is set: give --segment K/N", spec, strings.Join(names, ", "))
}

// parseStartAt reads --start-at: an RFC 3339 instant with its zone
// (2026-12-02T16:00:00Z). An instant already past is not an error here:
// the run then cannot start on time and reports could-not-run (exit 3),
// as a segment that was not ready in time does.
func parseStartAt(text string, now time.Time) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, text)
	if err != nil {
		return time.Time{}, fmt.Errorf("--start-at %q: want an RFC 3339 instant with its zone, e.g. %s", text, now.Add(2*time.Minute).UTC().Truncate(time.Second).Format(time.RFC3339))
	}
	return t, nil
}

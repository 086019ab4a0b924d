package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runner-dev/runner/engine"
	"github.com/runner-dev/runner/internal/execute"
	"github.com/runner-dev/runner/reports"
	"github.com/runner-dev/runner/targets"
)

// --segment reads K/N, or each engine's own variables with auto, or the
// index from them and N from the flag with auto/N; anything else is an
// error that names what it read.
func TestParseSegment(t *testing.T) {
	cases := []struct {
		spec string
		env  map[string]string
		want engine.Segment
		err  string
	}{
		{spec: "2/4", want: engine.Segment{K: 2, N: 4}},
		{spec: "0/1", want: engine.Segment{K: 0, N: 1}},
		{spec: "4/4", err: "K must be 0 to 3"},
		{spec: "1-4", err: "want K/N"},
		{spec: "auto", env: map[string]string{"SLURM_PROCID": "3", "SLURM_NTASKS": "4"}, want: engine.Segment{K: 3, N: 4}},
		{spec: "auto", env: map[string]string{"SLURM_ARRAY_TASK_ID": "7", "SLURM_ARRAY_TASK_MIN": "5", "SLURM_ARRAY_TASK_COUNT": "3"}, want: engine.Segment{K: 2, N: 3}},
		{spec: "auto", env: map[string]string{"CI_NODE_INDEX": "1", "CI_NODE_TOTAL": "4"}, want: engine.Segment{K: 0, N: 4}},
		// A job array's task: SLURM_PROCID 0 in every task, one task each.
		{spec: "auto", env: map[string]string{"SLURM_PROCID": "0", "SLURM_NTASKS": "1", "SLURM_ARRAY_TASK_ID": "2", "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_COUNT": "4"}, want: engine.Segment{K: 2, N: 4}},
		{spec: "auto", env: map[string]string{"SLURM_PROCID": "0", "SLURM_ARRAY_TASK_ID": "6", "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_STEP": "2", "SLURM_ARRAY_TASK_COUNT": "4"}, want: engine.Segment{K: 3, N: 4}},
		{spec: "auto", env: map[string]string{"SLURM_ARRAY_TASK_ID": "5", "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_STEP": "2", "SLURM_ARRAY_TASK_COUNT": "4"}, err: "not on the array's step"},
		{spec: "auto", env: map[string]string{"SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_COUNT": "4"}, err: "SLURM_ARRAY_TASK_MIN is not set"},
		{spec: "auto", env: map[string]string{"CI_NODE_INDEX": "4", "CI_NODE_TOTAL": "4"}, want: engine.Segment{K: 3, N: 4}},
		{spec: "auto", env: map[string]string{"JOB_COMPLETION_INDEX": "1", "RUNNER_SEGMENTS": "2"}, want: engine.Segment{K: 1, N: 2}},
		{spec: "auto/8", env: map[string]string{"JOB_COMPLETION_INDEX": "5"}, want: engine.Segment{K: 5, N: 8}},
		{spec: "auto", env: map[string]string{"JOB_COMPLETION_INDEX": "1"}, err: "RUNNER_SEGMENTS is not set"},
		{spec: "auto/3", env: map[string]string{"SLURM_PROCID": "0", "SLURM_NTASKS": "4"}, err: "SLURM_NTASKS says 4 segments, the flag 3"},
		{spec: "auto", env: map[string]string{"SLURM_PROCID": "x", "SLURM_NTASKS": "4"}, err: `SLURM_PROCID="x" is not an integer`},
		{spec: "auto", env: map[string]string{"CI_NODE_INDEX": "5", "CI_NODE_TOTAL": "4"}, err: "K must be 0 to 3"},
		{spec: "auto", err: "none of SLURM_PROCID"},
	}
	for _, c := range cases {
		got, _, err := parseSegment(c.spec, func(k string) string { return c.env[k] })
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s %v: error %v, want one saying %q", c.spec, c.env, err, c.err)
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("%s %v: %v, %v; want %v", c.spec, c.env, got, err, c.want)
		}
	}
	if _, err := parseStartAt("16:00", time.Now()); err == nil || !strings.Contains(err.Error(), "RFC 3339") {
		t.Errorf("--start-at 16:00: %v", err)
	}
}

// scaleOutScenario writes an open-model scenario against url: a short
// warmup, then 600 arrivals per second for 2 s (1200, enough for a
// conclusive p99) over 8 connections, reconciled with the target's
// counters.
func scaleOutScenario(t *testing.T, dir, url string) string {
	t.Helper()
	file := filepath.Join(dir, "scale.yaml")
	body := fmt.Sprintf(`version: 1
name: scale
target: {url: %q}
driver:
  http: {method: GET, path: "/s?n={{seq}}", timeout: 1s}
phases:
  - {name: warm, warmup: true, duration: 500ms, open: {rate: 200/s, connections: 8}}
  - {name: steady, duration: 2s, open: {rate: 600/s, connections: 8}}
reconcile:
  fetch: {path: /stats}
  expect:
    - server.requests == requests
    - server.ok == ok
assert:
  - p99 < 500ms
  - errors == 0
`, url)
	if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// runSegments runs the N segments of file as N processes started at one
// instant, their JSON reports in dir, and returns the merged report.
func runSegments(t *testing.T, file, dir string, n int) (*reports.Run, int, string) {
	t.Helper()
	start := time.Now().Add(2 * time.Second).UTC().Format(time.RFC3339Nano)
	var procs []*runnerProc
	for k := range n {
		procs = append(procs, startRunner(t, "run", "--quiet", "--segment", fmt.Sprintf("%d/%d", k, n), "--start-at", start,
			"--json", filepath.Join(dir, "{scenario}-{segment}.json"), file))
	}
	for k, p := range procs {
		if code := p.wait(t, 60*time.Second); code != 0 {
			t.Fatalf("segment %d/%d exited %d: %s%s", k, n, code, p.stdout.String(), p.stderr.String())
		}
		if !strings.Contains(p.stdout.String(), "not judged") {
			t.Fatalf("segment %d/%d judged: %s", k, n, p.stdout.String())
		}
	}
	merged := filepath.Join(dir, "merged.json")
	code, out, errOut := cli(t, "merge", "--json", merged, dir)
	r, err := reports.Load(merged)
	if err != nil {
		t.Fatalf("merge exited %d: %s%s: %v", code, out, errOut, err)
	}
	return r, code, out + errOut
}

// The proof of scale-out on one machine: against one reference target of
// known service time (5 ms), 1, 2 and 4 segments give the identical
// arrivals, requests and ok per phase, counters that reconcile to the
// request, the same verdict (unless the run itself says a generator or a
// start was at fault, which it must then say), and percentiles no lower
// than the service time and near the one-process run's.
func TestScaleOutProof(t *testing.T) {
	proc := spawnHTTP(t, "--delay", "5ms")
	file := scaleOutScenario(t, t.TempDir(), proc.URL)
	type row struct {
		n                  int
		arrivals, ok, reqs int64
		p50, p99, max      time.Duration
		outcome            string
		invalid            bool
	}
	var rows []row
	for _, n := range []int{1, 2, 4} {
		dir := t.TempDir()
		r, code, out := runSegments(t, file, dir, n)
		if r.Merged == nil || r.Merged.N != n || r.Segment != nil {
			t.Fatalf("N=%d: the merged report has no merge block of %d segments", n, n)
		}
		if r.ExitCode != code {
			t.Fatalf("N=%d: merge exited %d, its report says %d", n, code, r.ExitCode)
		}
		steady := r.Result.Phases[1]
		s := steady.Summary
		if steady.Phase.Name != "steady" || s.Arrivals != 1200 || s.Requests != 1200 {
			t.Fatalf("N=%d: phase %s arrivals %d requests %d, want the plan's 1200: %s", n, steady.Phase.Name, s.Arrivals, s.Requests, out)
		}
		if d := steady.Server["requests"]; d != float64(s.Requests) {
			t.Fatalf("N=%d: the target counted %v requests in the phase, the merge %d", n, d, s.Requests)
		}
		if steady.ConnectionsEstablished != 8 {
			t.Fatalf("N=%d: %d connections established, want the plan's 8", n, steady.ConnectionsEstablished)
		}
		p50, _ := s.Response.Percentile(50)
		p99, _ := s.Response.Percentile(99)
		if p50 < 5*time.Millisecond {
			t.Fatalf("N=%d: p50 %s below the target's 5 ms service time", n, p50)
		}
		for _, w := range r.Warnings {
			if w.Invalidates {
				t.Logf("N=%d: invalidating warning: %s", n, w.Message)
			}
		}
		mx, _ := s.Response.Max()
		rows = append(rows, row{n, s.Arrivals, s.OK, s.Requests, p50, p99, mx, r.Outcome, engine.Invalidating(r.Warnings)})
	}
	for _, r := range rows {
		t.Logf("N=%d: arrivals %d ok %d p50 %s p99 %s max %s outcome %s (invalidated %v)", r.n, r.arrivals, r.ok, r.p50, r.p99, r.max, r.outcome, r.invalid)
	}
	one := rows[0]
	for _, r := range rows[1:] {
		if r.arrivals != one.arrivals || r.ok != one.ok || r.reqs != one.reqs {
			t.Fatalf("N=%d: arrivals/requests/ok %d/%d/%d, one process %d/%d/%d", r.n, r.arrivals, r.reqs, r.ok, one.arrivals, one.reqs, one.ok)
		}
		if !r.invalid && !one.invalid && r.outcome != one.outcome {
			t.Fatalf("N=%d: outcome %s, one process %s", r.n, r.outcome, one.outcome)
		}
		// The median of 1200 responses of a 5 ms target: the segments
		// add no time of their own to a request, so it stays within
		// 2 ms of the one-process run (the loaded machine's jitter).
		if d := r.p50 - one.p50; d < -2*time.Millisecond || d > 2*time.Millisecond {
			t.Fatalf("N=%d: p50 %s, one process %s", r.n, r.p50, one.p50)
		}
	}
}

// segmentReports runs 2 segments of a scenario once for the refusal
// tests, and returns their report files.
func segmentReports(t *testing.T) (dir string, files []string) {
	t.Helper()
	proc := spawnHTTP(t)
	dir = t.TempDir()
	file := scaleOutScenario(t, dir, proc.URL)
	runSegments(t, file, dir, 2)
	return dir, []string{filepath.Join(dir, "scale-0-of-2.json"), filepath.Join(dir, "scale-1-of-2.json")}
}

// edit rewrites a JSON report through f.
func edit(t *testing.T, from, to string, f func(map[string]any)) string {
	t.Helper()
	v := readJSON(t, from)
	f(v)
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return to
}

// runner merge refuses what is not the segments of one run, with a
// message naming the files and exit 2; a segment that could not run or
// was interrupted makes the merge could-not-run (exit 3).
func TestMergeRefuses(t *testing.T) {
	t.Parallel()
	dir, seg := segmentReports(t)
	other := t.TempDir()
	seg1 := func(name string, f func(map[string]any)) string {
		return edit(t, seg[1], filepath.Join(other, name), f)
	}
	segment := func(v map[string]any) map[string]any { return v["segment"].(map[string]any) }
	plain := seg1("plain.json", func(v map[string]any) { delete(v, "segment") })
	otherPlan := seg1("other-plan.json", func(v map[string]any) { segment(v)["plan_hash"] = "00ff" })
	three := seg1("three.json", func(v map[string]any) { segment(v)["n"] = 3.0 })
	badArrivals := seg1("arrivals.json", func(v map[string]any) {
		for _, fp := range segment(v)["arrivals"].([]any) {
			fp.(map[string]any)["count"] = fp.(map[string]any)["count"].(float64) + 1
		}
	})
	otherStart := seg1("start.json", func(v map[string]any) { segment(v)["start_at"] = "2020-01-01T00:00:00Z" })
	couldNot := seg1("could-not.json", func(v map[string]any) { v["outcome"] = "could-not-run"; v["error"] = "target unreachable" })
	interrupted := seg1("interrupted.json", func(v map[string]any) { v["outcome"] = "interrupted" })
	phases := func(v map[string]any) []any { return v["result"].(map[string]any)["phases"].([]any) }
	foreignOutcome := seg1("pass.json", func(v map[string]any) { v["outcome"] = "pass" })
	short := seg1("short.json", func(v map[string]any) { v["result"].(map[string]any)["phases"] = phases(v)[:1] })
	negative := seg1("negative.json", func(v map[string]any) { phases(v)[1].(map[string]any)["late_arrivals"] = -1.0 })
	huge := seg1("huge.json", func(v map[string]any) { segment(v)["n"] = 1e18 })
	editedRule := seg1("rule.json", func(v map[string]any) {
		v["plan"].(map[string]any)["rules"].([]any)[0].(map[string]any)["rule"] = "p99 < 1h"
	})
	fifo := filepath.Join(other, "fifo.json")
	if err := mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		name  string
		args  []string
		code  int
		where string
	}{
		{"missing", []string{seg[0]}, exitInvalid, "missing segment(s) 1/2"},
		{"duplicated", []string{seg[0], seg[0], seg[1]}, exitInvalid, "given twice"},
		{"not a segment", []string{seg[0], plain}, exitInvalid, "is not a segment's report"},
		{"another plan", []string{seg[0], otherPlan}, exitInvalid, "ran another plan"},
		{"another N", []string{seg[0], three}, exitInvalid, "segment 1 of 3"},
		{"other arrivals", []string{seg[0], badArrivals}, exitInvalid, "are not the plan's schedule"},
		{"another start", []string{seg[0], otherStart}, exitInvalid, "was started at 2020-01-01"},
		{"could not run", []string{seg[0], couldNot}, exitCouldNotRun, "could not run: target unreachable"},
		{"interrupted", []string{seg[0], interrupted}, exitCouldNotRun, "--allow-incomplete"},
		{"a directory without segments", []string{other + "/none"}, exitInvalid, "no such file"},
		{"another outcome", []string{seg[0], foreignOutcome}, exitInvalid, `has outcome "pass", not a segment's`},
		{"ran, phases missing", []string{seg[0], short}, exitInvalid, "says it ran, but holds 1 of the plan's 2 phase results"},
		{"a negative count", []string{seg[0], negative}, exitInvalid, "late_arrivals is negative"},
		{"N out of range", []string{seg[0], huge}, exitInvalid, "segment.n is"},
		{"an edited plan", []string{seg[0], editedRule}, exitInvalid, "another scenario or plan"},
		{"a named pipe", []string{seg[0], fifo}, exitInvalid, "not a regular file"},
		{"its own input as output", []string{"--json", seg[0], seg[0], seg[1]}, exitInvalid, "would be overwritten"},
		{"a segment as baseline", []string{"--baseline", seg[0], seg[0], seg[1]}, exitInvalid, "a share of a run"},
	} {
		code, out, errOut := cli(t, append([]string{"merge"}, c.args...)...)
		if code != c.code || !strings.Contains(out+errOut, c.where) {
			t.Errorf("%s: exit %d (want %d): %s%s; want it to say %q", c.name, code, c.code, out, errOut, c.where)
		}
	}
	code, out, errOut := cli(t, "merge", "--allow-incomplete", seg[0], interrupted)
	if code != exitCouldNotRun || !strings.Contains(out, "INTERRUPTED") {
		t.Errorf("--allow-incomplete: exit %d: %s%s; want the merged result judged and marked interrupted", code, out, errOut)
	}
	// The directory of both: merged, the earlier merged report left out,
	// every report format written, the exit code the report's.
	outDir := t.TempDir()
	at := func(name string) string { return filepath.Join(outDir, name) }
	code, out, errOut = cli(t, "merge", "--json", at("{scenario}-{segment}.json"), "--markdown", at("m.md"), "--junit", at("j.xml"),
		"--html", at("h.html"), "--tsv", at("t.tsv"), "--hdr", at("h.hlog"), dir)
	if code == exitInvalid || !strings.Contains(errOut, "merged.json: not a segment's report") {
		t.Fatalf("merge DIR: exit %d: %s%s", code, out, errOut)
	}
	r, err := reports.Load(at("scale-merged.json"))
	if err != nil || r.ExitCode != code || r.Merged == nil || len(r.Merged.Segments) != 2 {
		t.Fatalf("merged report: %v; exit %d", err, code)
	}
	for _, f := range []string{"m.md", "j.xml", "h.html", "t.tsv", "h.hlog"} {
		b, err := os.ReadFile(at(f))
		if err != nil || len(b) == 0 {
			t.Errorf("%s not written: %v", f, err)
		}
	}
	code, out, errOut = cli(t, "merge", "--baseline", at("scale-merged.json"), "--json", at("again.json"), seg[0], seg[1])
	if again, err := reports.Load(at("again.json")); err != nil || again.Baseline == nil || again.Baseline.RunID != r.RunID || code == exitInvalid {
		t.Errorf("merge --baseline: exit %d %s%s; report %v", code, out, errOut, err)
	}
	if b, _ := os.ReadFile(at("t.tsv")); strings.Count(string(b), "\n") != 1+len(r.Result.Phases) {
		t.Errorf("TSV: %d lines for %d phases:\n%s", strings.Count(string(b), "\n"), len(r.Result.Phases), b)
	}
}

// A segment whose start instant has passed before it is ready does not
// start late: it sends nothing, says so in its report and exits 3; a
// spawned reference target and a segment without a JSON report are
// refused before any traffic (exit 2).
func TestSegmentLateOrMisused(t *testing.T) {
	proc := spawnHTTP(t)
	dir := t.TempDir()
	file := scaleOutScenario(t, dir, proc.URL)
	jsonPath := filepath.Join(dir, "late.json")
	past := time.Now().Add(-time.Second).UTC().Format(time.RFC3339)
	code, out, errOut := cli(t, "run", "--quiet", "--segment", "0/2", "--start-at", past, "--json", jsonPath, file)
	if code != exitCouldNotRun || !strings.Contains(out+errOut, "not ready by the start instant") {
		t.Fatalf("late segment: exit %d: %s%s", code, out, errOut)
	}
	r, err := reports.Load(jsonPath)
	if err != nil || r.Outcome != execute.CouldNotRun || len(r.Result.Phases) != 0 || r.Segment == nil {
		t.Fatalf("late segment's report: %v %+v", err, r)
	}
	stats := counters(t, proc.URL)
	if stats["requests"] != 0 {
		t.Fatalf("a late segment sent %v requests", stats["requests"])
	}

	spawned := filepath.Join(dir, "spawned.yaml")
	os.WriteFile(spawned, []byte("version: 1\nname: s\ntarget: {serve: http}\ndriver: {http: {path: /}}\nphases: [{duration: 1s, open: {rate: 10/s, connections: 2}}]\n"), 0o644)
	for _, args := range [][]string{
		{"run", "--segment", "0/2", "--json", jsonPath, spawned},
		{"run", "--segment", "0/2", file},
		{"run", "--segment", "0/9", "--json", jsonPath, file},
		{"run", "--segment", "0/2", "--start-at", "tomorrow", "--json", jsonPath, file},
		{"run", "--segment", "0/2", "--baseline", jsonPath, "--json", jsonPath, file},
	} {
		code, out, errOut := cli(t, args...)
		if code != exitInvalid || errOut == "" {
			t.Errorf("%v: exit %d: %s%s", args, code, out, errOut)
		}
		t.Log(strings.TrimSpace(errOut))
	}
}

// counters reads the reference target's /stats.
func counters(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url + "/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v map[string]float64
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// Ctrl-C while a segment waits for its start instant, and while it runs:
// it exits 3 and its JSON report, segment block included, says
// interrupted; one interrupted before its start instant sent nothing.
func TestSegmentInterrupted(t *testing.T) {
	proc := spawnHTTP(t)
	dir := t.TempDir()
	file := scaleOutScenario(t, dir, proc.URL)
	for _, c := range []struct {
		name  string
		after time.Duration // from the start instant
	}{{"waiting", -time.Second}, {"running", 1500 * time.Millisecond}} {
		start := time.Now().Add(3 * time.Second)
		jsonPath := filepath.Join(dir, c.name+".json")
		p := startRunner(t, "run", "--quiet", "--segment", "1/2", "--start-at", start.UTC().Format(time.RFC3339Nano), "--json", jsonPath, file)
		time.Sleep(time.Until(start.Add(c.after)))
		if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		if code := p.wait(t, 30*time.Second); code != exitCouldNotRun {
			t.Fatalf("%s: exit %d: %s%s", c.name, code, p.stdout.String(), p.stderr.String())
		}
		r, err := reports.Load(jsonPath)
		if err != nil || r.Segment == nil || r.Segment.K != 1 || r.Outcome != execute.Interrupted {
			t.Fatalf("%s: report %v: %+v", c.name, err, r)
		}
		if c.name == "waiting" && counters(t, proc.URL)["requests"] != 0 {
			t.Fatalf("interrupted before its start instant, the segment sent requests")
		}
	}
}

// runner plan --segment says a segment's shares, worked out here from
// the plan: 8 connections in 3 segments are 3, 3 and 2; 1200 arrivals
// are 400 each; and the timetable starts the measured phase after the
// warmup's 500 ms, its 1 s drain bound and the gap.
func TestPlanSegment(t *testing.T) {
	file := scaleOutScenario(t, t.TempDir(), "http://127.0.0.1:9")
	code, out, errOut := cli(t, "plan", "--segment", "2/3", "--phase-gap", "1s", file)
	for _, want := range []string{
		`phase 2 "steady": 2 of 8 connection(s); arrivals i with i mod 3 = 2`,
		"400 of 1200 expected requests",
		`repeat 1 "steady" at T+2.5s`,
	} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("exit %d, output lacks %q:\n%s%s", code, want, out, errOut)
		}
	}
	if code, _, errOut := cli(t, "plan", "--segment", "0/9", file); code != exitInvalid || !strings.Contains(errOut, "9 segments") {
		t.Fatalf("9 segments of 8 connections: exit %d: %s", code, errOut)
	}
}

// spawnHTTP starts `runner serve http args...` as a separate process (this
// test binary), stopped when the test ends.
func spawnHTTP(t *testing.T, args ...string) *targets.Process {
	t.Helper()
	proc, err := targets.Spawn(context.Background(), os.Args[0], "http", args, io.Discard, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proc.Stop() })
	return proc
}

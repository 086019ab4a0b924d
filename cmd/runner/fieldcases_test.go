package main

// End-to-end tests of field cases (docs/design.md, "Field cases"): defects
// other load tools shipped, each pinned by a TestField_Bnn_… test whose doc
// comment says which. Each runs the CLI against the real HTTP reference
// target over loopback (127.0.0.1 only) and asserts what a correct runner
// reports. Runs that send traffic go as separate processes (see fcExec);
// validate and plan, which send nothing, run in-process (cli).
//
// Counts are asserted exactly where the engine guarantees them (a uniform
// open schedule offers exactly ⌈rate·T⌉ arrivals; the target numbers its
// requests globally, so error-every-N is exact); timings use tolerances
// explained where they are made, because the tests run under -race on as
// few as two noisy shared cores. The long ones run in parallel.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runner-dev/runner/drivers"
	"github.com/runner-dev/runner/engine/measure"
)

// fcRun is one `runner run` of a scenario with its JSON and TSV outputs.
type fcRun struct {
	file           string // the scenario file
	json, tsv      string // output paths
	code           int
	stdout, stderr string
	maxRSS         int64 // the runner process's peak resident set, bytes (getrusage via wait4)
}

// fcExec writes the scenario and runs `runner run` on it, with JSON and
// TSV outputs in dir, as a separate process: this test binary acting as
// the runner, as a CI step would run it. Apart, not in-process (cli):
// the runner judges its own CPU (getrusage of its process) and its
// pacer's lateness, and in this process both would include the other
// tests running in parallel and their targets, which could make a sound
// run inconclusive; nor does a run share this process's scheduler and
// garbage collector with the others. The scenarios spawn their targets
// (`serve: http`), so those are separate processes too. fcExec never
// calls t.Fatal, so several may run at once in goroutines of one test.
func fcExec(t *testing.T, dir, name, yaml string) *fcRun {
	return fcExecUnder(t, dir, name, yaml)
}

// fcExecUnder is fcExec with the runner started through the command
// wrap (e.g. taskset -c 0); none: started itself.
func fcExecUnder(t *testing.T, dir, name, yaml string, wrap ...string) *fcRun {
	return fcExecFlags(t, dir, name, yaml, nil, wrap...)
}

// fcExecFlags is fcExecUnder with flags added to the run command's.
func fcExecFlags(t *testing.T, dir, name, yaml string, flags []string, wrap ...string) *fcRun {
	r := &fcRun{
		file: filepath.Join(dir, name+".yaml"),
		json: filepath.Join(dir, name+".json"),
		tsv:  filepath.Join(dir, name+".tsv"),
	}
	if err := os.WriteFile(r.file, []byte(yaml), 0o644); err != nil {
		r.code, r.stderr = -1, err.Error()
		return r
	}
	argv := append(append([]string{"run", "--log-level", "disabled", "--json", r.json, "--tsv", r.tsv}, flags...), r.file)
	// Bounded: every run here lasts under 20 s; the runner stops its
	// spawned target itself, which also dies with it (parent-death signal).
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	prog := os.Args[0]
	if len(wrap) > 0 {
		prog, argv = wrap[0], append(append(slices.Clone(wrap[1:]), os.Args[0]), argv...)
	}
	cmd := exec.CommandContext(ctx, prog, argv...) // RUNNER_TEST_AS_MAIN=1 is inherited (TestMain)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	r.stdout, r.stderr = out.String(), errb.String()
	if ps := cmd.ProcessState; ps != nil {
		r.maxRSS = peakRSS(ps)
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
		r.code = 0
	case errors.As(err, &ee) && ee.ExitCode() >= 0:
		r.code = ee.ExitCode()
	default:
		r.code, r.stderr = -1, fmt.Sprintf("%s\n%v", r.stderr, err)
	}
	return r
}

// fcRunScenario runs a scenario in a fresh directory and checks its exit
// code.
//
// A run that the runner itself declares INCONCLUSIVE because the load
// generator was the bottleneck (its schedule fell behind or its CPU was
// saturated: on a shared machine, another process took its core) measured
// the generator, not the truth under test; unless INCONCLUSIVE is what the
// test wants, it is repeated, twice at most, and the last run decides.
func fcRunScenario(t *testing.T, name, yaml string, wantCode int) *fcRun {
	t.Helper()
	var r *fcRun
	for attempt := 1; ; attempt++ {
		r = fcExec(t, t.TempDir(), name, yaml)
		if attempt == 3 || wantCode == exitInconclusive || !r.generatorBound() {
			break
		}
		t.Logf("%s: run %d was inconclusive because the load generator was the bottleneck; again", name, attempt)
	}
	r.expect(t, wantCode)
	return r
}

// generatorBound reports whether the run ended INCONCLUSIVE because the
// load generator was the bottleneck, as its console verdict says.
func (r *fcRun) generatorBound() bool {
	return r.code == exitInconclusive && strings.Contains(r.stdout, "the load generator was the bottleneck")
}

func (r *fcRun) expect(t *testing.T, code int) {
	t.Helper()
	if r.code != code {
		t.Fatalf("%s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", filepath.Base(r.file), r.code, code, r.stdout, r.stderr)
	}
}

// phases returns the (repeat, phase) results of the JSON report, in order.
func (r *fcRun) phases(t *testing.T) []map[string]any {
	t.Helper()
	rep := readJSON(t, r.json)
	res, _ := rep["result"].(map[string]any)
	list, _ := res["phases"].([]any)
	var out []map[string]any
	for _, p := range list {
		out = append(out, p.(map[string]any))
	}
	return out
}

// rows returns the TSV header and rows.
func (r *fcRun) rows(t *testing.T) ([]string, [][]string) {
	t.Helper()
	return readTSV(t, r.tsv)
}

// fcCount reads a counter of a phase's summary.
func fcCount(t *testing.T, ph map[string]any, key string) int64 {
	t.Helper()
	return int64(jsonNum(t, ph, "summary", key))
}

// fcPhaseName is the name of a phase result's phase, and its warmup flag.
func fcPhaseName(t *testing.T, ph map[string]any) (string, bool) {
	t.Helper()
	p, ok := ph["phase"].(map[string]any)
	if !ok {
		t.Fatalf("phase result without its phase: %v", ph["phase"])
	}
	name, _ := p["name"].(string)
	warmup, _ := p["warmup"].(bool)
	return name, warmup
}

// dist decodes a distribution of the i-th phase result's summary from
// the JSON report (exact min, max, count, sums and the encoded
// HdrHistogram), so its percentiles are computed exactly as the runner
// computes them. The report is decoded afresh: its sums are integers too
// large for a float64.
func (r *fcRun) dist(t *testing.T, i int, key string) *measure.Dist {
	t.Helper()
	b, err := os.ReadFile(r.json)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Result struct {
			Phases []struct {
				Summary map[string]json.RawMessage `json:"summary"`
			} `json:"phases"`
		} `json:"result"`
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if i >= len(rep.Result.Phases) {
		t.Fatalf("no phase result %d", i)
	}
	var d measure.Dist
	if err := json.Unmarshal(rep.Result.Phases[i].Summary[key], &d); err != nil {
		t.Fatalf("summary.%s does not decode: %v", key, err)
	}
	return &d
}

func fcPct(t *testing.T, d *measure.Dist, p float64) time.Duration {
	t.Helper()
	v, ok := d.Percentile(p)
	if !ok {
		t.Fatalf("p%g: no samples", p)
	}
	return v
}

// fcRange is the accepted range [want, top] of a measured value.
type fcRange struct {
	name      string
	want, top time.Duration
}

// fcReported is the value a percentile reports when its sample is v: the
// highest value of v's bucket in the runner's HdrHistogram (µs, 3
// significant digits: 2048 sub-buckets, so a bucket is 2^(⌊log2 v⌋−10) µs
// wide from 2048 µs on) plus the 999 ns below the next µs.
func fcReported(v time.Duration) time.Duration {
	us := int64(v / time.Microsecond)
	width := int64(1)
	if us >= 2048 {
		width = int64(1) << (bits.Len64(uint64(us)) - 1 - 10)
	}
	top := us - us%width + width - 1
	return time.Duration(top)*time.Microsecond + time.Microsecond - 1
}

// fcFloat parses a TSV cell as a number.
func fcFloat(t *testing.T, header, row []string, name string) float64 {
	t.Helper()
	s := col(t, header, row, name)
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("TSV %s = %q, not a number", name, s)
	}
	return v
}

// fcWithin fails unless |got − want| ≤ tol.
func fcWithin(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol {
		t.Errorf("%s = %g, want %g ± %g", what, got, want, tol)
	}
}

// fcObserved reads the observed value of a rule's metric from the console:
// the line under the rule reads "repeat 1: FAIL: errors=1000".
func fcObserved(t *testing.T, stdout, metric string) float64 {
	t.Helper()
	m := regexp.MustCompile(`repeat 1: [A-Z]+: ` + regexp.QuoteMeta(metric) + `=([0-9.]+)`).FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("console shows no observed %s:\n%s", metric, stdout)
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}

// fcInvalidated reports whether the run's JSON report carries a warning
// that invalidates it (the load generator itself was the bottleneck).
func fcInvalidated(t *testing.T, r *fcRun) bool {
	t.Helper()
	ws, _ := readJSON(t, r.json)["warnings"].([]any)
	for _, w := range ws {
		if inv, _ := w.(map[string]any)["invalidates"].(bool); inv {
			return true
		}
	}
	return false
}

// fcPosition returns "file:line:col" of value where it first follows key
// in the scenario text, columns 1-based, as the loader reports positions.
func fcPosition(file, yaml, key, value string) string {
	for i, line := range strings.Split(yaml, "\n") {
		if c := strings.Index(line, key+value); c >= 0 {
			return fmt.Sprintf("%s:%d:%d", filepath.Base(file), i+1, c+len(key)+1)
		}
	}
	return "(not found)"
}

// B04, the defect pinned: a rate applied per connection, or a number
// accepted without its unit.
//
// The rate is the whole run's, never per connection, and a rate or a
// duration without a unit is an error before any traffic.
func TestField_B04_RateIsGlobalAndUnitsExplicit(t *testing.T) {
	t.Parallel()
	yaml := func(target, rate, duration string) string {
		return `version: 1
name: b04
target: ` + target + `
driver: {http: {path: /hey, timeout: 2s}}
phases:
  - name: steady
    open: {rate: ` + rate + `, connections: 50}
    duration: ` + duration + `
reconcile:
  fetch: {path: /stats}
  expect: [server.requests == requests, server.connections == connections_opened]
`
	}
	// (a) and (b): 30 s each and mostly idle, so they run side by side,
	// started here in goroutines and checked in subtests. Not as parallel
	// subtests: go test runs at most -parallel (default GOMAXPROCS, 2 on a
	// two-core machine) tests at once, and two idle 30 s subtests would
	// hold both slots. (c) and (d) are checked meanwhile.
	const spawned = `{serve: http, args: ["--delay", "5ms"]}`
	type openRun struct {
		name, rate string
		r          *fcRun
	}
	runs := []*openRun{{name: "a-10-per-second", rate: "10/s"}, {name: "b-600-per-minute", rate: "600/m"}}
	dir := t.TempDir()
	var wg sync.WaitGroup
	for _, x := range runs {
		wg.Go(func() { x.r = fcExec(t, dir, x.name, yaml(spawned, x.rate, "30s")) })
	}
	t.Cleanup(wg.Wait) // should this test end early

	// (c) and (d): no unit is an error from validate, plan and run alike,
	// before any traffic, naming file:line:col, the key path and the units.
	base := target(t)
	url := `{url: "` + base + `"}`
	for _, tc := range []struct {
		name, yaml, key, value, path, units string
	}{
		{"c-rate-without-unit", yaml(url, "10", "30s"), "rate: ", "10,", "phases[0].open.rate", "N/s|N/m"},
		{"d-duration-without-unit", yaml(url, "10/s", "30"), "duration: ", "30", "phases[0].duration", "us|ms|s|m"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := scenario(t, tc.name+".yaml", tc.yaml)
			want := fcPosition(p, tc.yaml, tc.key, tc.value) + ": " + tc.path + ": "
			for _, verb := range []string{"validate", "plan", "run"} {
				code, _, stderr := cli(t, verb, p)
				if code != exitInvalid {
					t.Errorf("%s: exit %d, want 2; stderr:\n%s", verb, code, stderr)
				}
				if !strings.Contains(stderr, want) || !strings.Contains(stderr, tc.units) {
					t.Errorf("%s: stderr lacks %q and the units %q:\n%s", verb, want, tc.units, stderr)
				}
			}
		})
	}
	if n := stats(t, base)["requests"]; n != 0 {
		t.Errorf("the target counted %g requests; invalid scenarios must send nothing", n)
	}

	wg.Wait()
	for _, x := range runs {
		t.Run(x.name, func(t *testing.T) { checkB04(t, x.r) })
	}
}

// checkB04 asserts what B04 (a) or (b) must give: 300 requests at
// 10/s over 30 s, whatever the 50 connections, and the plan said so.
func checkB04(t *testing.T, r *fcRun) {
	if r.code == exitInconclusive && fcInvalidated(t, r) {
		// The runner's self-check found its own machine too starved to
		// vouch for the run (docs/design.md, "Self-checks and warnings"): a
		// correct answer, whose counts must still hold.
		t.Logf("%s: inconclusive, the load generator was starved:\n%s", filepath.Base(r.file), r.stdout)
	} else {
		r.expect(t, exitPass)
	}
	// The plan says it before anything is sent.
	code, out, stderr := cli(t, "plan", r.file)
	if code != exitPass || !strings.Contains(out, "expected     300 requests") || !strings.Contains(out, "rate         10/s constant") {
		t.Errorf("plan: exit %d, want 0 and expected 300 requests at 10/s:\n%s%s", code, out, stderr)
	}

	// The uniform schedule offers arrival i at i/rate: exactly
	// ⌈10/s · 30 s⌉ = 300 in the phase, whatever the number of
	// connections (the case allows ± 3; the engine guarantees 0).
	phs := r.phases(t)
	if len(phs) != 1 {
		t.Fatalf("%d phase results, want 1", len(phs))
	}
	ph := phs[0]
	for k, want := range map[string]int64{"arrivals": 300, "requests": 300, "ok": 300, "errors": 0, "dropped": 0, "cancelled": 0, "connections_opened": 50} {
		if got := fcCount(t, ph, k); got != want {
			t.Errorf("%s = %d, want %d", k, got, want)
		}
	}
	// A phase bounded by time lasts its duration: rates are per second
	// of it, so achieved = 300 / 30 s exactly.
	elapsed := time.Duration(jsonNum(t, ph, "summary", "elapsed_ns"))
	fcWithin(t, "JSON achieved rate (requests / elapsed)", float64(fcCount(t, ph, "requests"))/elapsed.Seconds(), 10, 0.2)
	header, rows := r.rows(t)
	if len(rows) != 1 {
		t.Fatalf("%d TSV rows, want 1", len(rows))
	}
	fcWithin(t, "TSV achieved_rate", fcFloat(t, header, rows[0], "achieved_rate"), 10, 0.2)
	fcWithin(t, "TSV offered_rate", fcFloat(t, header, rows[0], "offered_rate"), 10, 0)
	if got := col(t, header, rows[0], "requests"); got != "300" {
		t.Errorf("TSV requests = %s, want 300", got)
	}

	// The target saw exactly what the client counted, on the 50
	// connections dialled before the phase (its own counters, fetched
	// before and after the phase; the fetches are not counted).
	if d := jsonNum(t, ph, "server", "requests"); d != 300 {
		t.Errorf("target counted %g requests, client 300", d)
	}
	if d := jsonNum(t, ph, "server", "connections"); d != 50 {
		t.Errorf("target accepted %g connections, want 50", d)
	}
}

// B05, the defect pinned: non-2xx responses counted as throughput.
//
// Non-2xx responses are errors, never throughput, and the target's
// own 503 counter reconciles with the client's.
func TestField_B05_Non2xxIsNotThroughput(t *testing.T) {
	t.Parallel()
	// 8 connections: at 300/s × ~6 ms about 2 requests are in flight, so
	// the target is far from saturated and achieved == offered.
	r := fcRunScenario(t, "b05", `version: 1
name: b05
target: {serve: http, args: ["--delay", "5ms", "--error-every", "3"]}
driver: {http: {path: "/item/{{seq}}", timeout: 2s}}
phases:
  - {name: steady, open: {rate: 300/s, connections: 8}, duration: 10s}
reconcile:
  fetch: {path: /stats}
  expect: ['server.status_503 == errors_by["503"]']
assert: [errors == 0]
`, exitFail)
	ph := r.phases(t)[0]
	// Arrivals are exact (uniform schedule, ⌈300/s · 10 s⌉); the target
	// fails every 3rd request it receives, globally numbered, so of 3000
	// exactly 1000 fail. The case allows ± 1.
	if got := fcCount(t, ph, "arrivals"); got != 3000 {
		t.Errorf("arrivals = %d, want 3000", got)
	}
	if got := fcCount(t, ph, "requests"); got != 3000 {
		t.Errorf("requests = %d, want 3000", got)
	}
	ok, errs := fcCount(t, ph, "ok"), fcCount(t, ph, "errors")
	fcWithin(t, "ok", float64(ok), 2000, 1)
	fcWithin(t, "errors", float64(errs), 1000, 1)
	if ok+errs != 3000 {
		t.Errorf("ok %d + errors %d != requests 3000", ok, errs)
	}
	s := ph["summary"].(map[string]any)
	if byClass := s["errors_by_class"].(map[string]any); len(byClass) != 1 || byClass["status"] != float64(errs) {
		t.Errorf("errors_by_class = %v, want only status = %d", byClass, errs)
	}
	byCode := s["errors_by_code"].(map[string]any)
	if len(byCode) != 1 || byCode["503"] != float64(errs) {
		t.Errorf("errors_by_code = %v, want only 503 = %d", byCode, errs)
	}
	fcWithin(t, "error rate (JSON errors / requests)", float64(errs)/3000, 1.0/3, 0.001)

	// Throughput counts the ok only: 2000 / 10 s = 200/s, while the
	// achieved rate is 300/s. The ok count is exact, over the time in
	// which the responses completed: the 10 s phase, or up to its last
	// completion (5 ms after the last arrival, a little more on a busy
	// machine); the ± 1 % of the case covers the ± 1 in ok.
	header, rows := r.rows(t)
	row := rows[0]
	thr := fcFloat(t, header, row, "throughput")
	fcWithin(t, "TSV throughput", thr, 200, 2)
	window := math.Max(10, jsonNum(t, ph, "summary", "last_done_ns")/1e9)
	if want := fmt.Sprintf("%.1f", float64(ok)/window); col(t, header, row, "throughput") != want {
		t.Errorf("TSV throughput %s, want ok / %.3f s = %s", col(t, header, row, "throughput"), window, want)
	}
	fcWithin(t, "TSV achieved_rate", fcFloat(t, header, row, "achieved_rate"), 300, 3)
	fcWithin(t, "TSV error_rate", fcFloat(t, header, row, "error_rate"), 0.3333, 0.001)
	fcWithin(t, "JSON metrics.throughput", jsonNum(t, ph, "metrics", "throughput"), 200, 2)
	fcWithin(t, "JSON metrics.achieved_rate", jsonNum(t, ph, "metrics", "achieved_rate"), 300, 3)
	fcWithin(t, "JSON metrics.error_rate", jsonNum(t, ph, "metrics", "error_rate"), 1.0/3, 0.001)

	// Reconciliation holds: the server's 503 delta is the client's count,
	// and so is its request count.
	if got := jsonNum(t, ph, "server", "status_503"); got != float64(errs) {
		t.Errorf("server status_503 delta %g, client errors_by[503] %d", got, errs)
	}
	if got := jsonNum(t, ph, "server", "requests"); got != 3000 {
		t.Errorf("server requests delta %g, client 3000", got)
	}
	if !strings.Contains(r.stdout, `PASS         server.status_503 == errors_by["503"]`) {
		t.Errorf("console lacks the passed reconciliation:\n%s", r.stdout)
	}

	// The rule fails, with the observed count.
	if !strings.Contains(r.stdout, "FAIL         errors == 0") {
		t.Errorf("console lacks the failed rule:\n%s", r.stdout)
	}
	if got := fcObserved(t, r.stdout, "errors"); got != float64(errs) {
		t.Errorf("console observed errors=%g, JSON %d", got, errs)
	}
	t.Logf("B05: ok %d, errors %d, throughput %s/s, achieved %s/s, error_rate %s", ok, errs, col(t, header, row, "throughput"), col(t, header, row, "achieved_rate"), col(t, header, row, "error_rate"))
}

// B08, the defect pinned: requests in flight at the end of a run booked as
// the target's errors.
//
// Requests in flight when the phase's time is up finish in the grace
// period and count as what they are (ok here), never as target errors.
func TestField_B08_EndOfRunNotTargetErrors(t *testing.T) {
	t.Parallel()
	const service = 150 * time.Millisecond
	yamlOf := func(conns int, duration string) string {
		return fmt.Sprintf(`version: 1
name: b08
target: {serve: http, args: ["--delay", "150ms"]}
driver: {http: {path: /slow, timeout: 5s}}
phases:
  - {name: steady, closed: {connections: %d}, duration: %s}
reconcile:
  fetch: {path: /stats}
  expect: [server.requests == requests]
assert: [errors == 0]
`, conns, duration)
	}

	// (a) and (b) run side by side, each with its own target, and are
	// checked in subtests.
	dir := t.TempDir()
	var wg sync.WaitGroup
	var ra, rb *fcRun
	wg.Go(func() { ra = fcExec(t, dir, "b08a", yamlOf(1, "1s")) })
	wg.Go(func() { rb = fcExec(t, dir, "b08b", yamlOf(50, "5s")) })
	wg.Wait()

	t.Run("a-one-connection", func(t *testing.T) {
		// errors == 0 reads no percentile, so 7 samples are conclusive.
		r := ra
		r.expect(t, exitPass)
		ph := r.phases(t)[0]
		req, ok := fcCount(t, ph, "requests"), fcCount(t, ph, "ok")
		for k, want := range map[string]int64{"errors": 0, "cancelled": 0, "timeouts": 0} {
			if got := fcCount(t, ph, k); got != want {
				t.Errorf("%s = %d, want %d", k, got, want)
			}
		}
		if ok != req {
			t.Errorf("ok %d != requests %d", ok, req)
		}
		// Sends at 0, 150, …, 900 ms: the 7th is in flight at 1.0 s and
		// ends near 1.05 s. That needs each request under 1 s / 6 ≈ 166 ms;
		// on a starved machine fewer fit, which is not this case's point.
		resp := r.dist(t, 0, "response")
		mx, _ := resp.Max()
		switch {
		case mx < time.Second/6 && ok != 7:
			t.Errorf("ok = %d, want 7 (slowest request %s)", ok, mx)
		case ok < 6:
			t.Errorf("ok = %d, want 7 (6 at the least on a slow machine; slowest %s)", ok, mx)
		}
		// The last request was still in flight at the end of the 1 s
		// phase and was let finish: the phase's wall time, drain included,
		// reaches past ok × 150 ms (the target's delay is never short).
		wall := time.Duration(jsonNum(t, ph, "wall"))
		if least := time.Duration(ok) * service; wall < least || wall <= time.Second {
			t.Errorf("wall %s, want ≥ %s and > 1s: the request in flight at the end was not let finish", wall, least)
		}
		if d := jsonNum(t, ph, "server", "requests"); d != float64(req) {
			t.Errorf("target counted %g requests, client %d", d, req)
		}
		if !strings.Contains(r.stdout, "PASS         errors == 0") {
			t.Errorf("console lacks the passed rule:\n%s", r.stdout)
		}
		t.Logf("B08 (a): ok %d of %d, wall %s, slowest %s", ok, req, wall, mx)
	})

	t.Run("b-fifty-connections", func(t *testing.T) {
		r := rb
		r.expect(t, exitPass)
		ph := r.phases(t)[0]
		req, ok, errs, canc := fcCount(t, ph, "requests"), fcCount(t, ph, "ok"), fcCount(t, ph, "errors"), fcCount(t, ph, "cancelled")
		if errs != 0 || ok+errs+canc != req {
			t.Errorf("ok %d + errors %d + cancelled %d != requests %d, or errors not 0", ok, errs, canc, req)
		}
		if byClass := ph["summary"].(map[string]any)["errors_by_class"].(map[string]any); len(byClass) != 0 {
			t.Errorf("errors by class %v: the last batch was booked as target errors", byClass)
		}
		// The grace (the 5 s timeout) is far longer than a request: the
		// last batch of 50 finishes, none is cancelled.
		if canc != 0 {
			t.Errorf("cancelled = %d, want 0", canc)
		}
		// Each connection sends at most ⌈5 s / 150 ms⌉ = 34 requests; at
		// least 25 unless a request took over 200 ms.
		if ok > 50*34 || ok < 50*25 {
			t.Errorf("ok = %d, want 1250..1700", ok)
		}
		if d := jsonNum(t, ph, "server", "requests"); d != float64(req) {
			t.Errorf("target counted %g requests, client %d", d, req)
		}
		t.Logf("B08 (b): ok %d of %d, errors %d, cancelled %d", ok, req, errs, canc)
	})
}

// B10, the defect pinned: a CI gate that passes although requests failed.
//
// A CI gate fails on errors: exit 1 with the failed rule and its
// observed value; the same run without rules exits 0 yet reports the
// error rate; a scenario that is not even YAML exits 2.
func TestField_B10_GateFailsOnErrors(t *testing.T) {
	t.Parallel()
	yamlOf := func(assert string) string {
		return `version: 1
name: b10
target: {serve: http, args: ["--delay", "5ms", "--error-every", "4"]}
driver: {http: {path: /ci, timeout: 2s}}
phases:
  - {name: steady, closed: {connections: 10}, duration: 10s}
` + assert
	}
	// The two 10 s runs go side by side in goroutines of this test, so
	// they hold one parallel-test slot.
	dir := t.TempDir()
	var wg sync.WaitGroup
	var rg, rp *fcRun
	md, junit := filepath.Join(dir, "gated.md"), filepath.Join(dir, "gated.xml")
	wg.Go(func() {
		rg = fcExec(t, dir, "gated", yamlOf("assert: [errors == 0, p99 < 50ms]\noutputs: {markdown: "+md+", junit: "+junit+"}\n"))
	})
	wg.Go(func() { rp = fcExec(t, dir, "plain", yamlOf("")) })
	wg.Wait()

	rg.expect(t, exitFail)
	ph := rg.phases(t)[0]
	req, errs := fcCount(t, ph, "requests"), fcCount(t, ph, "errors")
	// The target fails every 4th request it receives, in global order, so
	// errors = ⌊requests / 4⌋; ± 1 is allowed, far inside the case's ± 1 %.
	if math.Abs(float64(errs)-float64(req)/4) > 1 {
		t.Errorf("errors %d of %d requests, want a quarter", errs, req)
	}
	obs := fcObserved(t, rg.stdout, "errors")
	if obs != float64(errs) || math.Abs(obs/float64(req)-0.25) > 0.01 {
		t.Errorf("console observed errors=%g of %d requests, want 25 %% ± 1 %% (JSON %d)", obs, req, errs)
	}
	for _, want := range []string{"FAIL         errors == 0", "PASS         p99 < 50ms", "verdict: FAIL"} {
		if !strings.Contains(rg.stdout, want) {
			t.Errorf("console lacks %q:\n%s", want, rg.stdout)
		}
	}
	header, rows := rg.rows(t)
	fcWithin(t, "TSV error_rate", fcFloat(t, header, rows[0], "error_rate"), 0.25, 0.01)
	if got := col(t, header, rows[0], "verdict"); got != "fail" {
		t.Errorf("TSV verdict %s, want fail", got)
	}
	fcWithin(t, "JSON metrics.error_rate", jsonNum(t, ph, "metrics", "error_rate"), 0.25, 0.01)
	// The Markdown and JUnit reports a CI system reads say the same.
	mdText := readFile(t, md)
	if !regexp.MustCompile(`FAIL.*errors == 0.*errors=`+strconv.FormatInt(errs, 10)).MatchString(mdText) || !regexp.MustCompile(`PASS.*p99 < 50ms`).MatchString(mdText) {
		t.Errorf("Markdown lacks errors == 0 FAIL with errors=%d, or p99 < 50ms PASS:\n%s", errs, mdText)
	}
	xmlText := readFile(t, junit)
	if n := strings.Count(xmlText, "<testcase "); n != 2 || strings.Count(xmlText, "<failure ") != 1 || !strings.Contains(xmlText, `failures="1"`) {
		t.Errorf("JUnit: %d test cases, want 2 with one failure:\n%s", n, xmlText)
	}
	t.Logf("B10 gated: %d errors of %d requests (%.4f); %s", errs, req, float64(errs)/float64(req), strings.TrimSpace(regexp.MustCompile(`repeat 1: PASS: p99=\S+`).FindString(rg.stdout)))

	// Without rules: exit 0, and the error rate is still reported.
	rp.expect(t, exitPass)
	php := rp.phases(t)[0]
	preq, perrs := fcCount(t, php, "requests"), fcCount(t, php, "errors")
	if math.Abs(float64(perrs)-float64(preq)/4) > 1 {
		t.Errorf("without rules: errors %d of %d requests, want a quarter", perrs, preq)
	}
	header, rows = rp.rows(t)
	fcWithin(t, "without rules: TSV error_rate", fcFloat(t, header, rows[0], "error_rate"), 0.25, 0.01)
	fcWithin(t, "without rules: JSON metrics.error_rate", jsonNum(t, php, "metrics", "error_rate"), 0.25, 0.01)
	// errors = ⌊requests/4⌋, so the console shows 25.00 % or, when the
	// count is not a multiple of 4, a hair below (24.99 %).
	if m := regexp.MustCompile(`errors +\d+ \((\d+\.\d+) %\)`).FindStringSubmatch(rp.stdout); m == nil {
		t.Errorf("without rules: console shows no error percentage:\n%s", rp.stdout)
	} else if pct, _ := strconv.ParseFloat(m[1], 64); math.Abs(pct-25) > 0.1 {
		t.Errorf("without rules: console shows %s %% errors, want 25 %%:\n%s", m[1], rp.stdout)
	}
	t.Logf("B10 without rules: %d errors of %d requests", perrs, preq)

	// Not YAML at all: exit 2 from validate and run, nothing sent.
	base := target(t)
	broken := strings.Replace(yamlOf("assert: [errors == 0\n"), "{serve: http,", `{url: "`+base+`",`, 1)
	broken = strings.Replace(broken, "{path: /ci, timeout: 2s}}", "{path: /ci, timeout: 2s}", 1)
	p := scenario(t, "broken.yaml", broken)
	for _, verb := range []string{"validate", "run"} {
		code, out, stderr := cli(t, verb, p)
		if code != exitInvalid || !strings.Contains(stderr, "broken.yaml:") || !strings.Contains(stderr, "YAML") {
			t.Errorf("%s of a YAML syntax error: exit %d, want 2 naming the file\n%s%s", verb, code, out, stderr)
		}
	}
	if n := stats(t, base)["requests"]; n != 0 {
		t.Errorf("the target counted %g requests from an invalid scenario", n)
	}
}

// B11, the defect pinned: warmup or set-up traffic entering the verdict.
//
// Warmup traffic and the reconciliation fetches never enter the
// verdict or the client's counts.
func TestField_B11_WarmupNeverJudged(t *testing.T) {
	t.Parallel()
	// The target is spawned by the run, so its 5 s slow start (300 ms per
	// request, then 5 ms) begins just before the warmup phase.
	const head = `version: 1
name: b11
target: {serve: http, args: ["--delay", "5ms", "--slow-for", "5s", "--slow-delay", "300ms"]}
driver: {http: {path: "/w/{{seq}}", timeout: 2s}}
phases:
  - {name: warmup, warmup: true, open: {rate: 20/s, connections: 10}, duration: 5s}
  - {name: steady, open: {rate: 100/s, connections: 4}, duration: 10s}
reconcile:
  fetch: {path: /stats}
  expect: [server.requests == requests]
`
	// Scoped to the warmup, the rule is a validation error.
	scoped := head + "assert:\n  - {rule: p99 < 20ms, phase: warmup}\n"
	p := scenario(t, "scoped.yaml", scoped)
	code, _, stderr := cli(t, "validate", p)
	if want := fcPosition(p, scoped, "phase: ", "warmup}") + ": assert[0].phase:"; code != exitInvalid || !strings.Contains(stderr, want) || !strings.Contains(stderr, "never judged") {
		t.Errorf("validate of a rule scoped to the warmup: exit %d, want 2 with %q and \"never judged\":\n%s", code, want, stderr)
	}

	// p99 < 20ms on a 5 ms target leaves 15 ms for a few stalls of the
	// machine; more than ten in the 1000 requests, or a pacer that fell
	// behind, can happen on two shared cores and is not this case's point
	// (warmup samples in the verdict would put p99 near 300 ms on every
	// run). So a run that fails or is inconclusive is repeated, twice at
	// most; each one logs how late the target itself was (late_max_us).
	var r *fcRun
	for attempt := 1; ; attempt++ {
		r = fcExec(t, t.TempDir(), "b11", head+"assert: [p99 < 20ms]\n")
		if r.code == exitPass || attempt == 3 || r.code != exitFail && r.code != exitInconclusive {
			break
		}
		tail := r.stdout
		if i := strings.Index(tail, "\nrules"); i >= 0 {
			tail = tail[i:]
		}
		t.Logf("run %d: exit %d; again. Its rules and warnings:%s", attempt, r.code, tail)
	}
	r.expect(t, exitPass)
	phs := r.phases(t)
	if len(phs) != 2 {
		t.Fatalf("%d phase results, want 2", len(phs))
	}
	// The steady phase: 1000 arrivals (100/s × 10 s, exact), all ok.
	steady := phs[1]
	if name, warm := fcPhaseName(t, steady); name != "steady" || warm {
		t.Errorf("second phase result is %q (warmup %v), want steady", name, warm)
	}
	if got := fcCount(t, steady, "ok"); got != 1000 {
		t.Errorf("steady ok = %d, want 1000", got)
	}
	sp99 := fcPct(t, r.dist(t, 1, "response"), 99)
	if sp99 >= 20*time.Millisecond {
		t.Errorf("steady p99 = %s, want < 20ms", sp99)
	}
	// The warmup phase is recorded: 100 arrivals (20/s × 5 s), its p99 the
	// slow start's 300 ms (never less: the target's delay is never short;
	// at most 100 ms more on a loaded machine).
	warm := phs[0]
	if name, w := fcPhaseName(t, warm); name != "warmup" || !w {
		t.Errorf("first phase result is %q (warmup %v), want warmup", name, w)
	}
	wd := r.dist(t, 0, "response")
	if wd.Count() != 100 || fcCount(t, warm, "ok") != 100 {
		t.Errorf("warmup samples %d, ok %d, want 100", wd.Count(), fcCount(t, warm, "ok"))
	}
	wp99 := fcPct(t, wd, 99)
	if wp99 < 300*time.Millisecond || wp99 > 400*time.Millisecond {
		t.Errorf("warmup p99 = %s, want ≈ 300ms", wp99)
	}
	header, rows := r.rows(t)
	if len(rows) != 2 {
		t.Fatalf("%d TSV rows, want 2", len(rows))
	}
	if col(t, header, rows[0], "phase") != "warmup" || col(t, header, rows[0], "warmup") != "true" || col(t, header, rows[0], "verdict") != "-" || col(t, header, rows[0], "samples") != "100" {
		t.Errorf("warmup TSV row: phase %s warmup %s verdict %s samples %s, want warmup true - 100", col(t, header, rows[0], "phase"), col(t, header, rows[0], "warmup"), col(t, header, rows[0], "verdict"), col(t, header, rows[0], "samples"))
	}
	if v := fcFloat(t, header, rows[0], "p99"); v < 300 {
		t.Errorf("warmup TSV p99 = %g ms, want ≥ 300", v)
	}
	if col(t, header, rows[1], "phase") != "steady" || col(t, header, rows[1], "warmup") != "false" || col(t, header, rows[1], "verdict") != "pass" {
		t.Errorf("steady TSV row: phase %s warmup %s verdict %s", col(t, header, rows[1], "phase"), col(t, header, rows[1], "warmup"), col(t, header, rows[1], "verdict"))
	}

	// Rules judge the steady phase only, in the JSON and on the console.
	rep := readJSON(t, r.json)
	v := rep["verdict"].(map[string]any)
	for _, key := range []string{"rules", "expect"} {
		list, _ := v[key].([]any)
		if len(list) != 1 {
			t.Errorf("verdict.%s has %d entries, want 1 (steady)", key, len(list))
		}
		for _, x := range list {
			if ph := x.(map[string]any)["phase"]; ph != "steady" {
				t.Errorf("verdict.%s judged phase %v", key, ph)
			}
		}
	}
	if strings.Contains(r.stdout, "[phase warmup]") || !strings.Contains(r.stdout, "PASS         p99 < 20ms  [phase steady]") {
		t.Errorf("console rules must name the steady phase only:\n%s", r.stdout)
	}

	// The reconcile fetches (before and after each phase) are in no
	// client count: per phase the server's delta equals the client's.
	for i, ph := range phs {
		if got, want := jsonNum(t, ph, "server", "requests"), float64(fcCount(t, ph, "requests")); got != want {
			t.Errorf("phase %d: server counted %g requests, client %g", i, got, want)
		}
	}
	t.Logf("B11: warmup p99 %s (n=%d), steady p99 %s (n=1000)", wp99, wd.Count(), sp99)
}

// B19, the defect pinned: a percentile interpolated, rounded or bucketed
// so that it reports a latency no request had.
//
// Nearest-rank percentiles, end to end. Request n takes exactly
// 4·n ms at the target, so the k-th smallest response time is request k's
// and every percentile is known: rank = ⌈p/100 · 1006⌉, value 4·rank ms.
func TestField_B19_PercentilesEndToEnd(t *testing.T) {
	t.Parallel()
	const yaml = `version: 1
name: b19
target: {serve: http, args: ["--delay-per-seq", "4ms"]}
driver: {http: {path: "/d/{{seq}}", timeout: 10s, keep_alive: true}}
phases:
  - {name: steady, closed: {connections: 200}, requests: 1006}
reconcile:
  fetch: {path: /stats}
  expect: [server.requests == requests]
assert: [p999 < 5s, p99 < 5s]
`
	ms := time.Millisecond
	// The value reported for rank k lies in [4k ms, reported(4(k+1) ms)).
	// Floor: the target's delay is exact (a timerfd) and never short, so
	// the k-th smallest sample is at least request k's 4k ms, and a
	// percentile is the upper edge of its sample's histogram bucket, above
	// the sample. Ceiling: strictly below the least value rank k+1 could
	// report. The test allows 3 ms above expected; on two noisy shared
	// cores under -race, loopback and scheduling alone take that now and
	// then, and the edge of a 2.048 ms bucket comes on top. The range
	// still tells the ranks apart: p90 is rank 906, ≥ 3624 ms, never 3620
	// (rank 905, what rounding 905.4 gives) nor rank 907 (≥ 3629.056 ms).
	// The exact max gets the case's 3 ms.
	//
	// Except min: request 1 leaves together with 199 others at the
	// barrier, and on two shared cores it waits behind their handling:
	// 10 to 30 ms measured, 45 ms with both cores busy elsewhere. It is
	// still the exact sample min, never below 4 ms.
	//
	// On top of every ceiling comes what the target itself recorded as its
	// own delay in writing a response after it was due (late_max_us, from
	// its counters): on a busy machine the target's wake-up can take a few
	// milliseconds, and it is in the measured response time although it is
	// neither the scheduled service time nor an error of ours.
	//
	// A stall of the client on one of the few requests that decide a
	// percentile still moves it out of range; a wrong rank or bucketing does
	// so on every run. So a run out of range is repeated, twice at most.
	rank := func(name string, k int) fcRange {
		return fcRange{name, time.Duration(4*k) * ms, fcReported(time.Duration(4*(k+1))*ms) - 1}
	}
	truth := []fcRange{
		{"min", 4 * ms, 4*ms + 100*ms},
		rank("p50", 503), rank("p90", 906), rank("p95", 956), rank("p99", 996),
		{"max", 4024 * ms, 4024*ms + 3*ms},
	}
	var (
		r   *fcRun
		ph  map[string]any
		got map[string]time.Duration
	)
	for attempt := 1; ; attempt++ {
		r = fcRunScenario(t, "b19", yaml, exitInconclusive)
		ph = r.phases(t)[0]
		if n := fcCount(t, ph, "ok"); n != 1006 {
			t.Fatalf("ok = %d, want 1006", n)
		}
		late := time.Duration(jsonNum(t, ph, "server", "late_max_us")) * time.Microsecond
		d := r.dist(t, 0, "response")
		mn, _ := d.Min()
		mx, _ := d.Max()
		got = map[string]time.Duration{
			"min": mn, "p50": fcPct(t, d, 50), "p90": fcPct(t, d, 90), "p95": fcPct(t, d, 95),
			"p99": fcPct(t, d, 99), "p999": fcPct(t, d, 99.9), "max": mx,
		}
		t.Logf("B19 run %d: min %s p50 %s p90 %s p95 %s p99 %s p999 %s max %s; target late by up to %s", attempt, got["min"], got["p50"], got["p90"], got["p95"], got["p99"], got["p999"], got["max"], late)
		var off []string
		for _, c := range truth {
			if v := got[c.name]; v < c.want || v > c.top+late {
				off = append(off, fmt.Sprintf("%s = %s, want within [%s, %s] (target late by up to %s)", c.name, v, c.want, c.top+late, late))
			}
		}
		if len(off) == 0 {
			break
		}
		if attempt == 3 {
			for _, o := range off {
				t.Error(o)
			}
			break
		}
		t.Logf("run %d out of range (%s); again", attempt, strings.Join(off, "; "))
	}
	order := []string{"min", "p50", "p90", "p95", "p99", "p999", "max"}
	for i := 1; i < len(order); i++ {
		if got[order[i]] < got[order[i-1]] {
			t.Errorf("%s %s < %s %s", order[i], got[order[i]], order[i-1], got[order[i-1]])
		}
	}

	// The same values in the JSON's headline metrics (ms), in the TSV (ms,
	// 3 decimals) and on the console (s, 3 decimals, for values of a
	// second and more).
	for _, name := range []string{"min", "p50", "p90", "p95", "p99", "p999", "max"} {
		if m, want := jsonNum(t, ph, "metrics", "response_time", name+"_ms"), float64(got[name])/float64(ms); m != want {
			t.Errorf("JSON metrics.response_time.%s_ms = %v, histogram %v", name, m, want)
		}
	}
	header, rows := r.rows(t)
	row := rows[0]
	for _, c := range []struct{ name, column, console string }{
		{"p50", "p50", "p50"}, {"p90", "p90", "p90"}, {"p95", "p95", "p95"},
		{"p99", "p99", "p99"}, {"p999", "p999", "p99.9"}, {"max", "max", "max"},
	} {
		v := got[c.name]
		if want := fmt.Sprintf("%.3f", float64(v)/float64(ms)); col(t, header, row, c.column) != want {
			t.Errorf("TSV %s = %s, JSON %s", c.column, col(t, header, row, c.column), want)
		}
		want := fmt.Sprintf("%s %.3fs", c.console, v.Seconds())
		if !strings.Contains(r.stdout, want) {
			t.Errorf("console lacks %q (JSON %s)", want, v)
		}
	}

	// p999 needs 10000 samples: a rule reading it is inconclusive, the
	// console marks it, and the single repeat is warned about.
	for _, want := range []string{"INCONCLUSIVE p999 < 5s", "needs ≥ 10000", "PASS         p99 < 5s", "p99.9 " + fmt.Sprintf("%.3fs*", got["p999"].Seconds()), "single repeat"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("console lacks %q:\n%s", want, r.stdout)
		}
	}
	single := false
	for _, w := range readJSON(t, r.json)["warnings"].([]any) {
		single = single || w.(map[string]any)["code"] == "single-repeat"
	}
	if !single {
		t.Error("the JSON report lacks the single-repeat warning")
	}
	if got := jsonNum(t, ph, "server", "requests"); got != 1006 {
		t.Errorf("the target counted %g requests, want 1006", got)
	}
}

// TestField_B19_BucketModel keeps B19's end-to-end test honest (B19: a
// percentile that reports a latency no request had): the test's model of
// the histogram's reporting matches
// the runner's: for a middle sample v of three (rank 2, neither the exact
// min nor max), the p50 reported is fcReported(v).
func TestField_B19_BucketModel(t *testing.T) {
	for _, v := range []time.Duration{
		1500 * time.Microsecond, 2012 * time.Millisecond, 3624 * time.Millisecond,
		3628 * time.Millisecond, 3984*time.Millisecond + 1500*time.Microsecond, 4020 * time.Millisecond,
	} {
		rec := measure.NewRecorder(1, measure.Options{})
		for _, x := range []time.Duration{time.Microsecond, v, time.Minute} {
			rec.Record(0, &measure.Result{Done: x, Outcome: drivers.Outcome{Class: drivers.OK, Responded: true}})
		}
		s := rec.Summary(time.Minute)
		if got, _ := s.Response.Percentile(50); got != fcReported(v) {
			t.Errorf("sample %s: p50 %s, fcReported %s", v, got, fcReported(v))
		}
	}
}

// readFile returns a file's content; a missing file fails the test.
func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

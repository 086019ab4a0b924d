package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/runner-dev/runner/internal/execute"
)

// selfCheckScenario is a short closed run with reconciliation: the
// counters are fetched before and after each phase.
func selfCheckScenario(target, tsv, json string) string {
	outputs := ""
	if tsv != "" {
		outputs = "outputs: {tsv: " + tsv + ", json: " + json + "}\n"
	}
	return `version: 1
name: selfcheck
target: ` + target + `
driver: {http: {path: /x, timeout: 2s}}
phases:
  - {name: steady, closed: {connections: 2}, duration: 1s}
reconcile:
  fetch: {path: /stats}
  expect: ['server.requests == requests']
assert:
  - errors == 0
` + outputs
}

// bump sends n requests of its own to a target, as another client (or a
// stale run) would have.
func bump(t *testing.T, base string, n int) {
	t.Helper()
	for range n {
		resp, err := http.Get(base + "/before-the-run")
		if err != nil {
			t.Error(err)
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

func warningCodes(rep map[string]any) map[string]string {
	out := map[string]string{}
	ws, _ := rep["warnings"].([]any)
	for _, w := range ws {
		m := w.(map[string]any)
		out[m["code"].(string)] = m["message"].(string)
	}
	return out
}

// A spawned target has served nothing when the run starts: counters that
// do not start from zero are not this run's and are warned, naming them;
// a fresh one (whose only traffic was the runner's own health check and
// fetch, in control_connections) is not warned.
// The spawned target's CPU (process and busiest thread) and RSS are
// measured per phase: in the JSON, the console, the TSV and the rules.
// The machine's sleep resolution is in the environment and the header.
func TestSpawnedTargetStaleCountersAndFigures(t *testing.T) {
	t.Parallel()
	fresh := filepath.Join(t.TempDir(), "fresh.json")
	code, out, errOut := cli(t, "run", "--log-level", "disabled", "--json", fresh, "--tsv", filepath.Join(t.TempDir(), "fresh.tsv"),
		scenario(t, "fresh.yaml", selfCheckScenario("{serve: http}", "", "")))
	if code != exitPass {
		t.Fatalf("fresh target: exit %d\n%s\n%s", code, out, errOut)
	}
	if ws := warningCodes(readJSON(t, fresh)); ws["stale-target-counters"] != "" {
		t.Fatalf("a fresh spawned target warned: %s", ws["stale-target-counters"])
	}

	dir := t.TempDir()
	tsv, json := filepath.Join(dir, "r.tsv"), filepath.Join(dir, "r.json")
	file := scenario(t, "s.yaml", strings.Replace(selfCheckScenario("{serve: http}", tsv, json),
		"  - errors == 0\n", "  - errors == 0\n  - target.rss > 1000000\n  - target.cpu_max_thread <= 1.5\n", 1))
	bumped := func(a *app) { a.afterSpawn = func(base string) { bump(t, base, 3) } }
	code, out, errOut = cliWith(t, bumped, "run", "--log-level", "disabled", file)
	if code != exitPass {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	rep := readJSON(t, json)
	msg, ok := warningCodes(rep)["stale-target-counters"]
	if !ok {
		t.Fatalf("no stale-target-counters warning; warnings %v", warningCodes(rep))
	}
	if !strings.Contains(msg, "requests=3") {
		t.Errorf("warning does not name the counter: %q", msg)
	}
	if got := jsonNum(t, rep, "result", "server_at_start", "requests"); got != 3 {
		t.Errorf("server_at_start.requests = %g, want 3", got)
	}
	if !strings.Contains(out, "counters did not start from zero") {
		t.Errorf("console lacks the warning:\n%s", out)
	}

	// Target figures of the measured phase.
	ph := rep["result"].(map[string]any)["phases"].([]any)[0]
	if rss := jsonNum(t, ph, "target", "rss"); rss < 1<<20 {
		t.Errorf("target rss %g bytes, want a live process's (> 1 MiB)", rss)
	}
	cpu, thread := jsonNum(t, ph, "target", "cpu"), jsonNum(t, ph, "target", "cpu_max_thread")
	if cpu < 0 || cpu > 1.05 || thread < 0 || thread > 1.5 {
		t.Errorf("target cpu %g of the machine, busiest thread %g of a core", cpu, thread)
	}
	if !strings.Contains(out, "  target        cpu ") || !strings.Contains(out, "busiest thread") {
		t.Errorf("console lacks the target line:\n%s", out)
	}
	if !strings.Contains(out, "PASS         target.rss > 1000000") {
		t.Errorf("target.rss rule not judged as passed:\n%s", out)
	}
	header, rows := readTSV(t, tsv)
	if n, err := strconv.ParseInt(col(t, header, rows[0], "target_rss"), 10, 64); err != nil || n < 1<<20 {
		t.Errorf("TSV target_rss %q", col(t, header, rows[0], "target_rss"))
	}

	// The sleep resolution, once per run.
	env := rep["environment"].(map[string]any)
	if n := jsonNum(t, env, "timer_resolution", "samples"); n != execute.TimerSamples {
		t.Errorf("timer_resolution.samples = %g", n)
	}
	if jsonNum(t, env, "timer_resolution", "timer_overshoot") < 0 || jsonNum(t, env, "timer_resolution", "precise_overshoot") < 0 {
		t.Errorf("negative overshoot: %v", env["timer_resolution"])
	}
	if !strings.Contains(out, "\ntimer    a 1.000ms sleep overshoots by") {
		t.Errorf("header lacks the timer line:\n%s", out)
	}
}

// A target given by URL is a long-lived server: its counters start
// wherever its history left them, which is recorded but not warned; its
// process is not ours, so no target figures (and target.* rules are not
// passed).
func TestURLTargetCountersNotWarned(t *testing.T) {
	t.Parallel()
	base := target(t)
	bump(t, base, 4)
	dir := t.TempDir()
	tsv, json := filepath.Join(dir, "r.tsv"), filepath.Join(dir, "r.json")
	file := scenario(t, "s.yaml", selfCheckScenario("{url: "+base+"}", tsv, json))
	code, out, errOut := cli(t, "run", "--log-level", "disabled", file)
	if code != exitPass {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	rep := readJSON(t, json)
	if _, ok := warningCodes(rep)["stale-target-counters"]; ok {
		t.Errorf("a long-lived URL target warned: %v", warningCodes(rep))
	}
	if got := jsonNum(t, rep, "result", "server_at_start", "requests"); got != 4 {
		t.Errorf("server_at_start.requests = %g, want 4", got)
	}
	ph := rep["result"].(map[string]any)["phases"].([]any)[0].(map[string]any)
	if _, ok := ph["target"]; ok {
		t.Errorf("target figures for a process that is not ours: %v", ph["target"])
	}
	header, rows := readTSV(t, tsv)
	if got := col(t, header, rows[0], "target_cpu"); got != "-" {
		t.Errorf("TSV target_cpu %q, want -", got)
	}
}

// A URL target with target.pid is measured like a spawned one: its CPU
// and RSS per phase. (The in-process target runs in this test process,
// so the pid is ours.) A pid that names no process is an error before
// any traffic.
func TestURLTargetPidFigures(t *testing.T) {
	t.Parallel()
	base := target(t)
	dir := t.TempDir()
	tsv, json := filepath.Join(dir, "r.tsv"), filepath.Join(dir, "r.json")
	file := scenario(t, "s.yaml", strings.Replace(
		selfCheckScenario("{url: "+base+", pid: "+strconv.Itoa(os.Getpid())+"}", tsv, json),
		"  - errors == 0\n", "  - errors == 0\n  - target.rss > 1000000\n", 1))
	code, out, errOut := cli(t, "run", "--log-level", "disabled", file)
	if code != exitPass {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	ph := readJSON(t, json)["result"].(map[string]any)["phases"].([]any)[0]
	if rss := jsonNum(t, ph, "target", "rss"); rss < 1<<20 {
		t.Errorf("target rss %g bytes, want a live process's (> 1 MiB)", rss)
	}
	if !strings.Contains(out, "PASS         target.rss > 1000000") {
		t.Errorf("target.rss rule not judged as passed:\n%s", out)
	}

	// Above the kernel's pid_max (at most 2^22): no such process.
	bad := scenario(t, "bad.yaml", selfCheckScenario("{url: "+base+", pid: 99999999}", "", ""))
	code, out, errOut = cli(t, "run", "--log-level", "disabled", "--json", filepath.Join(dir, "b.json"), "--tsv", filepath.Join(dir, "b.tsv"), bad)
	if code != exitCouldNotRun || !strings.Contains(errOut, "target.pid: cannot read process 99999999") {
		t.Errorf("bad pid: exit %d, want %d with a target.pid error\n%s\n%s", code, exitCouldNotRun, out, errOut)
	}
}

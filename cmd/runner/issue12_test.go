package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// In a runner started by a test (this binary as main), holdEnv names a
// point of runOne and a file, "after-run=/dir/held": the run creates the
// file there and holds until its context is cancelled (the first signal),
// at most a minute. serveHoldEnv names a file that a spawned target
// (runner serve) writes its pid into, after which it never becomes
// ready: it sleeps until it is stopped.
const (
	holdEnv      = "RUNNER_TEST_HOLD"
	serveHoldEnv = "RUNNER_TEST_SERVE_HOLD"
)

// setTestHooks installs the holds the environment asks for; TestMain calls
// it in a runner started by a test.
func setTestHooks(args []string) {
	if path := os.Getenv(serveHoldEnv); path != "" && len(args) > 0 && args[0] == "serve" {
		tmp := path + ".tmp"
		if os.WriteFile(tmp, []byte(strconv.Itoa(os.Getpid())), 0o644) == nil {
			os.Rename(tmp, path)
		}
		time.Sleep(time.Minute) // the runner stops it long before
		os.Exit(1)
	}
	if point, path, ok := strings.Cut(os.Getenv(holdEnv), "="); ok {
		holdAt = func(ctx context.Context, at string) {
			if at != point {
				return
			}
			os.WriteFile(path, nil, 0o644)
			select {
			case <-ctx.Done():
			case <-time.After(time.Minute):
			}
		}
	}
}

// waitFile waits until path exists, failing if the runner exits first or
// after timeout.
func waitFile(t *testing.T, p *runnerProc, path string, timeout time.Duration) {
	t.Helper()
	for end := time.Now().Add(timeout); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if !p.running() {
			t.Fatalf("runner exited (%d) before %s\nstdout:\n%s\nstderr:\n%s", p.cmd.ProcessState.ExitCode(), path, &p.stdout, &p.stderr)
		}
	}
	p.cmd.Process.Kill()
	<-p.done
	t.Fatalf("no %s after %s\nstderr:\n%s", path, timeout, &p.stderr)
}

// Issue 12 (a): a signal while the spawned target is starting (not yet
// ready) interrupts the run: outcome interrupted, exit 3, the report
// written, the target stopped; not could-not-run with "context canceled".
func TestIssue12_SignalDuringTargetStartIsInterrupted(t *testing.T) {
	t.Parallel()
	file := scenario(t, "start.yaml", `version: 1
target: {serve: http}
driver: {http: {path: /x}}
phases: [{name: only, closed: {connections: 1}, requests: 10}]
`)
	dir := t.TempDir()
	held, jsonPath := filepath.Join(dir, "target.pid"), filepath.Join(dir, "run.json")
	cmd := exec.Command(os.Args[0], "run", "--json", jsonPath, file)
	cmd.Env = append(raceQuietEnv(), serveHoldEnv+"="+held)
	p := startCmd(t, cmd)
	waitFile(t, p, held, 30*time.Second) // the target runs, and is not ready
	b, err := os.ReadFile(held)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(string(b))
	if err != nil {
		t.Fatalf("target pid %q: %v", b, err)
	}
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	code := p.wait(t, 30*time.Second)
	stderr := p.stderr.String()
	if code != exitCouldNotRun {
		t.Errorf("exit %d, want %d\nstderr:\n%s", code, exitCouldNotRun, stderr)
	}
	if strings.Contains(stderr, "context canceled") || !strings.Contains(stderr, "interrupted by SIGINT before the first phase; nothing was sent") {
		t.Errorf("stderr does not say the run was interrupted before it started:\n%s", stderr)
	}
	rep := readJSON(t, jsonPath)
	if rep["outcome"] != "interrupted" || rep["exit_code"] != float64(exitCouldNotRun) || rep["error"] != nil {
		t.Errorf("report outcome %v exit_code %v error %v, want interrupted, 3, no error", rep["outcome"], rep["exit_code"], rep["error"])
	}
	for end := time.Now().Add(5 * time.Second); syscall.Kill(pid, 0) == nil; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("the starting target (pid %d) still runs after the runner exited", pid)
		}
	}
}

// Issue 12 (b): the first signal after the last phase has ended, while
// the run is judged or its results are written, exits 3 with the outcome
// interrupted, and the results are written whole: every phase measured
// and not interrupted, the TSV row judged, the reports saying
// interrupted.
func TestIssue12_SignalAfterLastPhaseExits3(t *testing.T) {
	base := target(t)
	file := scenario(t, "late.yaml", `version: 1
target: {url: "`+base+`"}
driver: {http: {path: /x}}
phases: [{name: only, closed: {connections: 1}, requests: 20}]
assert: [errors == 0]
`)
	for _, tc := range []struct {
		point string
		sig   syscall.Signal
	}{
		{"after-run", syscall.SIGINT}, // the drain's wake: counters, judging
		{"written", syscall.SIGTERM},  // the files say pass until the signal
	} {
		t.Run(tc.point, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			held := filepath.Join(dir, "held")
			tsv, jsonPath, md := filepath.Join(dir, "r.tsv"), filepath.Join(dir, "r.json"), filepath.Join(dir, "r.md")
			cmd := exec.Command(os.Args[0], "run", "--tsv", tsv, "--json", jsonPath, "--markdown", md, file)
			cmd.Env = append(raceQuietEnv(), holdEnv+"="+tc.point+"="+held)
			p := startCmd(t, cmd)
			waitFile(t, p, held, 60*time.Second)
			if err := p.cmd.Process.Signal(tc.sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
				t.Fatal(err)
			}
			code := p.wait(t, 30*time.Second)
			stdout, stderr := p.stdout.String(), p.stderr.String()
			if code != exitCouldNotRun {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitCouldNotRun, stdout, stderr)
			}
			if !strings.Contains(stdout, "verdict: INTERRUPTED after the last phase") {
				t.Errorf("console lacks the INTERRUPTED verdict:\n%s", stdout)
			}
			rep := readJSON(t, jsonPath)
			if rep["outcome"] != "interrupted" || rep["exit_code"] != float64(exitCouldNotRun) {
				t.Errorf("report outcome %v exit_code %v, want interrupted and 3", rep["outcome"], rep["exit_code"])
			}
			res, _ := rep["result"].(map[string]any)
			phases, _ := res["phases"].([]any)
			if res["interrupted"] != true || len(phases) != 1 {
				t.Fatalf("result interrupted %v with %d phases, want true and the 1 phase", res["interrupted"], len(phases))
			}
			if ph := phases[0].(map[string]any); ph["interrupted"] == true || jsonNum(t, ph, "summary", "ok") != 20 {
				t.Errorf("phase interrupted %v ok %v, want a whole phase of 20 ok", ph["interrupted"], jsonNum(t, ph, "summary", "ok"))
			}
			header, rows := readTSV(t, tsv)
			if len(rows) != 1 || col(t, header, rows[0], "verdict") != "pass" {
				t.Errorf("TSV rows %v, want the phase's one row, judged pass", rows)
			}
			if b, err := os.ReadFile(md); err != nil || !strings.Contains(string(b), "Interrupted") {
				t.Errorf("Markdown report (%v) does not say interrupted:\n%s", err, b)
			}
		})
	}
}

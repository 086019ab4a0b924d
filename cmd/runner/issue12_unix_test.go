//go:build unix

package main

import (
	"context"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

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
	junit := filepath.Join(dir, "run.xml")
	cmd := exec.Command(os.Args[0], "run", "--json", jsonPath, "--junit", junit, file)
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
	// The other reports are written too: a CI job reads its JUnit file.
	if b, err := os.ReadFile(junit); err != nil || !strings.Contains(string(b), "<testsuite") {
		t.Errorf("JUnit report after an interrupted start: %v\n%s", err, b)
	}
	for end := time.Now().Add(5 * time.Second); syscall.Kill(pid, 0) == nil; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("the starting target (pid %d) still runs after the runner exited", pid)
		}
	}
}

// TestIssue12_LateSignalCounted: a signal that reached the process before
// the handling stopped counts, even when the handler had not taken it yet
// (a SIGINT just as the results line was printed once exited 0). Another
// channel keeps SIGINT from killing the test process after the stop.
func TestIssue12_LateSignalCounted(t *testing.T) {
	seen := make(chan os.Signal, 64)
	signal.Notify(seen, syscall.SIGINT)
	defer signal.Stop(seen)
	for i := range 50 {
		_, stop := newApp(io.Discard, io.Discard).interruptible(context.Background(), io.Discard)
		if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		select {
		case <-seen: // delivered, to every channel registered for it
		case <-time.After(10 * time.Second):
			t.Fatal("SIGINT not delivered within 10 s")
		}
		if !stop() {
			t.Fatalf("round %d: a signal delivered before stop was not counted", i)
		}
		if !stop() {
			t.Fatalf("round %d: stop called again forgot the signal", i)
		}
	}
	_, stop := newApp(io.Discard, io.Discard).interruptible(context.Background(), io.Discard)
	if stop() {
		t.Error("no signal, yet stop says one came")
	}
}

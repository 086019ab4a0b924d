package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
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
func setTestHooks(a *app, args []string) {
	if path := os.Getenv(serveHoldEnv); path != "" && len(args) > 0 && args[0] == "serve" {
		tmp := path + ".tmp"
		if os.WriteFile(tmp, []byte(strconv.Itoa(os.Getpid())), 0o644) == nil {
			os.Rename(tmp, path)
		}
		time.Sleep(time.Minute) // the runner stops it long before
		os.Exit(1)
	}
	if point, path, ok := strings.Cut(os.Getenv(holdEnv), "="); ok {
		a.hold = func(ctx context.Context, at string) {
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
			if len(rows) != 1 || col(t, header, rows[0], "verdict") == "-" || strings.Contains(col(t, header, rows[0], "note"), "interrupted") {
				t.Errorf("TSV rows %v, want the phase's one row, judged and not interrupted", rows)
			}
			if b, err := os.ReadFile(md); err != nil || !strings.Contains(string(b), "Interrupted") {
				t.Errorf("Markdown report (%v) does not say interrupted:\n%s", err, b)
			}
		})
	}
}

// Issue 12 (11): the progress log line (no terminal) gives its durations
// with units, "elapsed=1s of=2.5s", never bare float milliseconds, and
// names the planned length "of" (not "total", which reads as a count); a
// phase bounded by a count has no planned length and no "of".
func TestIssue12_ProgressLineUnits(t *testing.T) {
	base := target(t, "--delay", "10ms")
	file := scenario(t, "units.yaml", `version: 1
target: {url: "`+base+`"}
driver: {http: {path: /x}}
phases:
  - {name: timed, open: {rate: 20/s, connections: 2}, duration: 2500ms}
  - {name: counted, closed: {connections: 1}, requests: 150}
`)
	dir := t.TempDir()
	everySecond := func(a *app) { a.progressEvery = time.Second }
	code, _, errOut := cliWith(t, everySecond, "run", "--json", filepath.Join(dir, "r.json"), file)
	if code != exitPass && code != exitInconclusive { // 4: a busy machine
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	timed := regexp.MustCompile(`INF progress elapsed=(\S+) errors=\d+ gc_cycles=\d+ go_mapped_kib=\d+ heap_kib=\d+ heap_live_kib=\d+ inflight=\d+ of=2.5s p99=\S+ phase=timed`)
	counted := regexp.MustCompile(`INF progress elapsed=(\S+) errors=\d+ gc_cycles=\d+ go_mapped_kib=\d+ heap_kib=\d+ heap_live_kib=\d+ inflight=\d+ p99=\S+ phase=counted`)
	var seen [2]int
	for _, l := range strings.Split(errOut, "\n") {
		if !strings.Contains(l, " progress ") {
			continue
		}
		m := timed.FindStringSubmatch(l)
		if m != nil {
			seen[0]++
		} else if m = counted.FindStringSubmatch(l); m != nil {
			seen[1]++
		} else {
			t.Errorf("progress line %q: want elapsed=… and of=2.5s (timed phase) or no of (counted phase)", l)
			continue
		}
		if d, err := time.ParseDuration(m[1]); err != nil || d < time.Second || d != d.Round(100*time.Millisecond) {
			t.Errorf("progress line %q: elapsed %q is not a duration of a second or more, in tenths", l, m[1])
		}
	}
	if seen[0] < 1 || seen[1] < 1 {
		t.Errorf("progress lines: %d of the timed phase, %d of the counted one; want at least one each\n%s", seen[0], seen[1], errOut)
	}
}

// fakeTerminal is stderr as a terminal: it says so, and keeps what is
// written to it.
type fakeTerminal struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (f *fakeTerminal) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.b.Write(p)
}

func (f *fakeTerminal) Terminal() bool { return true }

func (f *fakeTerminal) String() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.b.String()
}

// Issue 12 (11): on a terminal, the live progress line (drawn without a
// newline) is cleared (\r ESC[K) before a log line is written, so that
// "phase end" never follows "p99 so far 4.16ms" on the same line; the
// progress line is drawn again at its next update.
func TestIssue12_TTYLineClearedBeforeLog(t *testing.T) {
	base := target(t)
	file := scenario(t, "tty.yaml", `version: 1
target: {url: "`+base+`"}
driver: {http: {path: /x}}
phases:
  - {name: one, open: {rate: 20/s, connections: 1}, duration: 2500ms}
  - {name: two, open: {rate: 20/s, connections: 1}, duration: 2500ms}
`)
	dir := t.TempDir()
	tty := &fakeTerminal{}
	var stdout bytes.Buffer
	if code := newApp(&stdout, tty).run(context.Background(), []string{"run", "--json", filepath.Join(dir, "r.json"), file}); code != exitPass && code != exitInconclusive {
		t.Fatalf("exit %d\n%s", code, tty)
	}
	out := tty.String()
	const clear = "\r\033[K"
	if n := strings.Count(out, "p99 so far "); n < 2 {
		t.Fatalf("%d live progress lines, want one a second in each phase:\n%q", n, out)
	}
	if !strings.Contains(out, "INF phase end") {
		t.Fatalf("no phase end log line:\n%q", out)
	}
	// Every progress line is cleared before anything else is written: the
	// next thing after it is the clear sequence, never a log line.
	for rest := out; ; {
		i := strings.Index(rest, "p99 so far ")
		if i < 0 {
			break
		}
		rest = rest[i:]
		end := strings.IndexAny(rest, "\r\n")
		if end < 0 || !strings.HasPrefix(rest[end:], clear) {
			t.Errorf("a progress line is not cleared before what follows it: %q", rest[:min(len(rest), 120)])
		}
		rest = rest[len("p99 so far "):]
	}
	// A log line starts on a clean line: after a newline or the clear.
	for _, l := range regexp.MustCompile(`[^\n]*INF phase (start|end)`).FindAllString(out, -1) {
		if i := strings.LastIndex(l, clear); strings.Contains(l, "so far") && i < strings.LastIndex(l, "so far") {
			t.Errorf("log line glued to the progress line: %q", l)
		}
	}
}

// TestIssue12_EarlySignalInterrupts: a signal taken by main before the
// run's handling began (early) interrupts the run as soon as the handling
// starts; it used to kill the process, or, with SIGINT ignored, be lost.
func TestIssue12_EarlySignalInterrupts(t *testing.T) {
	a := newApp(io.Discard, io.Discard)
	a.signals = make(chan os.Signal, 2)
	a.signals <- syscall.SIGINT // came while the scenario was loading
	ctx, stop := a.interruptible(context.Background(), io.Discard)
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the early signal did not interrupt within 10 s")
	}
	if c := context.Cause(ctx); c == nil || !strings.Contains(c.Error(), "interrupted by SIGINT") {
		t.Errorf("cause %v, want interrupted by SIGINT", c)
	}
	if !stop() {
		t.Error("stop does not report the early signal")
	}
}

// A signal sent to the runner and again to its process group (GNU
// timeout -s INT does both) arrives twice at once: it is one interrupt,
// which writes the results, not the forced exit a second Ctrl-C makes;
// a second signal some time later still forces the exit.
func TestSignalEchoIsOneInterrupt(t *testing.T) {
	a := newApp(io.Discard, io.Discard)
	a.signals = make(chan os.Signal, 4)
	forced := make(chan int, 4)
	a.forceExit = func(code int) { forced <- code }
	a.signals <- syscall.SIGINT
	a.signals <- syscall.SIGINT // the process group's copy
	ctx, stop := a.interruptible(context.Background(), io.Discard)
	defer stop()
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("no interrupt within 10 s")
	}
	time.Sleep(4 * signalEcho)
	select {
	case code := <-forced:
		t.Fatalf("the echo of one signal forced exit %d", code)
	default:
	}
	a.signals <- syscall.SIGINT // a second Ctrl-C
	select {
	case code := <-forced:
		if code != exitCouldNotRun {
			t.Errorf("forced exit %d, want %d", code, exitCouldNotRun)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a second signal, later, did not force the exit")
	}
}

package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/runner-dev/runner/engine"
	"github.com/runner-dev/runner/internal/execute"
	"github.com/runner-dev/runner/reports"
)

// runFlags override a scenario's outputs and logging.
type runFlags struct {
	tsv, json string
	logLevel  string
	logFormat string
	quiet     bool
	// baseline is a saved JSON result whose phases `baseline.<metric>`
	// reads; base is its result once loaded.
	baseline string
	base     *engine.Result
	baseRef  *reports.BaselineRef
	// Paths of the other reports (override outputs.*).
	markdown, junit, html, hdr string
	// cpuProfile is a file for a pprof CPU profile of the whole command;
	// memProfile one for its heap profile, written at the end.
	cpuProfile, memProfile string
	// junitDocs keeps the runs written to each JUnit file so far, so
	// that one file named for several scenarios holds them all.
	junitDocs junitDocs
	// segmentSpec is --segment (K/N, auto, auto/N) and segment its
	// value; startAtText is --start-at and startAt its instant; phaseGap
	// is --phase-gap.
	segmentSpec, startAtText string
	segment                  engine.Segment
	segmentSource            string // where --segment's K and N came from
	startAt                  time.Time
	phaseGap                 time.Duration
	// noEventLoop is --no-event-loop.
	noEventLoop bool
	// envs are the -e KEY=VALUE flags: ${KEY} reads VALUE.
	envs []string
	// over are --set, --duration, --rate and --connections.
	over overrides
}

// outputs is held while a result file is written. A forced exit takes it
// first (waiting at most forceWait), so it never cuts a JSON report short
// before its rename and leaves no temporary file behind.
var outputs sync.Mutex

// forceWait bounds how long a forced exit waits for a write in progress.
const forceWait = time.Second

// signalEcho is how soon after the first signal another one counts as the
// same interrupt delivered twice, not a second Ctrl-C that forces the
// exit.
const signalEcho = 50 * time.Millisecond

func newRunCmd(a *app, code *int) *cobra.Command {
	stdout, stderr := a.stdout, a.stderr
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run FILE... (- for standard input)",
		Short: "Run scenarios against their targets and judge the rules",
		Long: `run validates every FILE first (nothing is sent if any is invalid), then runs
each in turn: spawns its reference target if it names one, dials the
connections, runs every phase of every repeat, prints the summary and the
rules with their observed values, appends TSV rows and writes the JSON report.

Every output path expands {scenario} and {run_id}. A file that two scenarios
would both write is refused, except the TSV (rows are appended) and the JUnit
file (one <testsuite> per scenario). Each report file is locked (PATH.lock)
while the run writes it: a run naming a file another run is writing is refused.

Exit code: 0 every rule holds, 1 a rule failed, 2 invalid scenario or usage
(including an output file that cannot be written, that two scenarios would
share, or that another run is writing: checked before any traffic),
3 the run could not complete (target unreachable, interrupted, client limits,
results lost because an output file failed during the run), 4 inconclusive
(e.g. a p99 rule over fewer than 1000 samples). With several files, any
invalid one exits 2 before anything is sent; otherwise the worst outcome
wins: 3, then 1, then 4.

Ctrl-C stops the load at once, writes what was measured (marked interrupted)
and exits 3, wherever it lands (while the target starts, after the last
phase); a second Ctrl-C exits immediately.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, files []string) error {
			tuneGC()
			type compiled struct {
				file string
				pl   *engine.Plan
			}
			var todo []compiled
			bad := false
			env, err := scenarioEnv(f.envs)
			if err != nil {
				fmt.Fprintf(stderr, "runner run: %v\n", err)
				return exitError(exitInvalid)
			}
			readStdin := false
			for _, file := range files {
				_, pl, err := a.compileArg(file, env, f.over, &readStdin)
				if err != nil {
					printErrors(stderr, err)
					bad = true
					continue
				}
				todo = append(todo, compiled{file, pl})
			}
			if bad {
				return exitError(exitInvalid)
			}
			var plans []*engine.Plan
			for _, c := range todo {
				plans = append(plans, c.pl)
			}
			if !f.scaleOut(plans, stderr) {
				return exitError(exitInvalid)
			}
			if f.baseline != "" {
				b, err := loadBaseline(f.baseline)
				if err != nil {
					fmt.Fprintf(stderr, "runner run: --baseline: %v\n", err)
					return exitError(exitInvalid)
				}
				f.base = b.Result
				f.baseRef = &reports.BaselineRef{File: f.baseline, RunID: b.RunID, Scenario: scenarioNameOf(b)}
			}
			// Output files that cannot be written, that two formats or two
			// scenarios would share, or that another run is writing are a
			// usage problem, found before any traffic (results would be
			// lost). Each run's ID is decided here, so that the paths
			// checked and locked are the ones written.
			var runs []planned
			for _, c := range todo {
				rep := execute.NewReport(c.pl)
				if f.segmentSpec != "" { // 0/1 too: a report runner merge reads
					if err := execute.NewSegment(rep, f.segment, f.startAt, f.phaseGap); err != nil {
						fmt.Fprintf(stderr, "runner run: %s: %v\n", c.file, err)
						return exitError(exitInvalid)
					}
					rep.Segment.Source = f.segmentSource
				}
				runs = append(runs, planned{file: c.file, rep: rep})
			}
			if !preflight(runs, f, stderr) {
				return exitError(exitInvalid)
			}
			defer release(runs)
			f.junitDocs = junitDocs{}
			if f.quiet && !cmd.Flags().Changed("log-level") {
				f.logLevel = "warn"
			}
			level, err := zerolog.ParseLevel(f.logLevel)
			if err != nil {
				fmt.Fprintf(stderr, "runner run: --log-level: %v\n", err)
				return exitError(exitInvalid)
			}
			if f.logFormat != "console" && f.logFormat != "json" {
				fmt.Fprintf(stderr, "runner run: --log-format %q: expected console or json\n", f.logFormat)
				return exitError(exitInvalid)
			}
			if !f.quiet && isTerminal(stderr) {
				// Log lines and messages clear the live progress line
				// before they are written on the same terminal.
				stderr = &liveTerm{w: stderr}
			}
			newLog := func(w io.Writer) zerolog.Logger { return newLogger(f.logFormat, level, w) }

			if f.cpuProfile != "" {
				stopProfile, err := startCPUProfile(f.cpuProfile)
				if err != nil {
					fmt.Fprintf(stderr, "runner run: --cpuprofile: %v\n", err)
					return exitError(exitInvalid)
				}
				defer stopProfile()
			}
			if f.memProfile != "" {
				runtime.MemProfileRate = 4096 // finer than the default 512 KiB: a load run's allocations are small
				fh, err := os.Create(f.memProfile)
				if err != nil {
					fmt.Fprintf(stderr, "runner run: --memprofile: %v\n", err)
					return exitError(exitInvalid)
				}
				defer func() {
					if err := pprof.Lookup("allocs").WriteTo(fh, 0); err != nil {
						fmt.Fprintf(stderr, "runner run: --memprofile: %v\n", err)
					}
					fh.Close()
				}()
			}
			ctx, stop := a.interruptible(cmd.Context(), stderr)
			defer stop()
			worst := exitPass
			for _, p := range runs {
				ec := a.runOne(ctx, p.rep, f, newLog, stdout, stderr)
				worst = worse(worst, ec)
				if ctx.Err() != nil {
					break
				}
			}
			// Signals are handled until here; one that comes later has
			// its default effect (the process dies of it), never exit 0.
			if stop() && worst != exitCouldNotRun && worst != exitInvalid {
				// The signal came after the last results were written and
				// printed: they stand as written, but the first signal
				// exits 3 wherever it lands.
				fmt.Fprintf(stderr, "runner: interrupted by a signal after the results were written (they stand as written); exit %d\n", exitCouldNotRun)
				worst = exitCouldNotRun
			}
			*code = worst
			return nil
		},
	}
	cmd.Flags().StringVar(&f.tsv, "tsv", "", "append TSV rows to this file (overrides outputs.tsv; {run_id} and {scenario} expand)")
	cmd.Flags().StringVar(&f.json, "json", "", "write the JSON report to this file (overrides outputs.json; {run_id} and {scenario} expand)")
	cmd.Flags().StringVar(&f.logLevel, "log-level", "info", "log level on stderr: debug, info, warn, error, disabled")
	cmd.Flags().StringVar(&f.logFormat, "log-format", "console", "log lines on stderr as console text or json (zerolog), for machines")
	cmd.Flags().BoolVarP(&f.quiet, "quiet", "q", false, "print only the header, rules, warnings, verdict and where the results went (and log only warnings)")
	cmd.Flags().StringVar(&f.markdown, "markdown", "", "write the Markdown report to this file (overrides outputs.markdown; {run_id} and {scenario} expand)")
	cmd.Flags().StringVar(&f.junit, "junit", "", "write the JUnit XML report to this file (overrides outputs.junit; {run_id} and {scenario} expand; several scenarios: one <testsuite> each)")
	cmd.Flags().StringVar(&f.html, "html", "", "write the self-contained HTML report to this file (overrides outputs.html; {run_id} and {scenario} expand)")
	cmd.Flags().StringVar(&f.hdr, "hdr", "", "write an HdrHistogram interval log to this file (overrides outputs.hdr; {run_id} and {scenario} expand)")
	cmd.Flags().StringVar(&f.memProfile, "memprofile", "", "write a pprof heap profile of the runner process (live and allocated memory, at the end) to this file")
	cmd.Flags().StringVar(&f.cpuProfile, "cpuprofile", "", "write a pprof CPU profile of the runner (client) process to this file (read it with go tool pprof)")
	overrideFlags(cmd, &f.over)
	cmd.Flags().StringArrayVarP(&f.envs, "env", "e", nil, "KEY=VALUE: ${KEY} in the scenario reads VALUE, before the process's environment (repeatable); values read into strings are redacted like any ${ENV}")
	cmd.Flags().StringVar(&f.segmentSpec, "segment", "", "scale-out: run segment K/N of the plan (K from 0), or auto (K and N from SLURM_PROCID/SLURM_NTASKS, SLURM_ARRAY_TASK_*, CI_NODE_INDEX/CI_NODE_TOTAL, JOB_COMPLETION_INDEX/RUNNER_SEGMENTS), or auto/N; writes only the JSON report ({segment} expands to K-of-N), not judged: runner merge judges the segments together")
	cmd.Flags().StringVar(&f.startAtText, "start-at", "", "start the first phase at this RFC 3339 instant (e.g. 2026-12-02T16:00:00Z) and each later one on the plan's timetable; not ready by then: exit 3, nothing sent")
	cmd.Flags().DurationVar(&f.phaseGap, "phase-gap", engine.DefaultPhaseGap, "with --start-at: the timetable's pause after each phase's drain bound (time for counters and the next repeat's dials)")
	cmd.Flags().BoolVar(&f.noEventLoop, "no-event-loop", false, "carry a phase's connections on a goroutine each (an open phase's arrivals from the pacer), not in event loops (plain HTTP/1.x keep-alive only; the same requests and outcomes at a higher client CPU cost per request)")
	cmd.Flags().StringVar(&f.baseline, "baseline", "", "a saved JSON result: rules may read baseline.<metric> of the same phase (its median repeat by p99), e.g. p99 < baseline.p99 * 1.10")
	return cmd
}

// newLogger is the run's logger on w: console text (format "console")
// or zerolog's JSON lines ("json"), at level, with timestamps.
func newLogger(format string, level zerolog.Level, w io.Writer) zerolog.Logger {
	var log zerolog.Logger
	if format == "json" {
		log = zerolog.New(w)
	} else {
		log = zerolog.New(zerolog.ConsoleWriter{Out: w, NoColor: true, TimeFormat: "15:04:05"})
	}
	return log.Level(level).With().Timestamp().Logger()
}

// startCPUProfile starts a pprof CPU profile into path (created or
// truncated) and returns the function that stops it and closes the file.
// Errors: the file cannot be created, or a profile is already running.
func startCPUProfile(path string) (func(), error) {
	fh, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(fh); err != nil {
		fh.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		fh.Close()
	}, nil
}

// worse combines exit codes of several runs: 3, then 2, then 1, then 4, then 0.
func worse(a, b int) int {
	rank := map[int]int{exitPass: 0, exitInconclusive: 1, exitFail: 2, exitInvalid: 3, exitCouldNotRun: 4}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

// interruptible returns a context cancelled by the first SIGINT or
// SIGTERM; a second one forces the process out with exit 3. stop ends the
// handling (a later signal has its default effect: the process dies of
// it, never exit 0) and reports whether a signal came at any time before,
// one still undelivered included; it may be called more than once.
func (a *app) interruptible(parent context.Context, stderr io.Writer) (ctx context.Context, stop func() (signalled bool)) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := a.signals // signals since the process started, if main took them
	if ch == nil {
		ch = make(chan os.Signal, 2)
		signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	}
	done := make(chan struct{})
	var got atomic.Bool
	first := make(chan struct{}) // closed once the first signal (or done) was taken
	go func() {
		select {
		case s := <-ch:
			got.Store(true)
			close(first)
			fmt.Fprintf(stderr, "runner: %s: stopping the load and writing what was measured (again to force)\n", signalName(s))
			cancel(fmt.Errorf("interrupted by %s", signalName(s)))
		case <-done:
			close(first)
			return
		}
		// A signal sent to the process and again to its process group
		// (GNU timeout -s INT does both) arrives twice within
		// microseconds: one interrupt, not a forced exit. A person's
		// second Ctrl-C comes later than signalEcho.
		echo := time.After(signalEcho)
	echoes:
		for {
			select {
			case <-ch:
			case <-echo:
				break echoes
			case <-done:
				return
			}
		}
		select {
		case s := <-ch:
			fmt.Fprintf(stderr, "runner: %s again: exiting now\n", signalName(s))
			held := false
			for end := time.Now().Add(forceWait); !held && time.Now().Before(end); {
				if held = outputs.TryLock(); !held {
					time.Sleep(5 * time.Millisecond)
				}
			}
			releaseHeld() // the kernel would drop the flocks, but not the files
			a.forceExit(exitCouldNotRun)
			if held {
				outputs.Unlock()
			}
		case <-done:
		}
	}()
	var once sync.Once
	return ctx, func() bool {
		once.Do(func() {
			signal.Stop(ch)
			close(done)
			<-first
			select {
			case <-ch: // came before Stop, not taken by the handler
				got.Store(true)
			default:
			}
			cancel(nil)
		})
		return got.Load()
	}
}

// signalName is SIGINT or SIGTERM rather than Go's "interrupt" or
// "terminated".
func signalName(s os.Signal) string {
	if n, ok := s.(syscall.Signal); ok && sysSignalName(n) != "" {
		return sysSignalName(n)
	}
	return s.String()
}

// outputPaths are the TSV and JSON paths of a run, flags first, with
// {run_id} and {scenario} expanded; "" when there is none.
func outputPaths(rep *reports.Run, f runFlags) (tsv, json string) {
	out := rep.Scenario.Outputs
	if rep.Segment != nil {
		// A segment appends no row: its rows are the merge's.
		return "", rep.Expand(pick(f.json, out.JSON))
	}
	return rep.Expand(pick(f.tsv, out.TSV)), rep.Expand(pick(f.json, out.JSON))
}

// runOne runs one compiled scenario, whose report execute.NewReport
// started, writes its results and returns its exit code. An output file
// that could not be written (TSV rows or the final JSON report lost)
// makes it exit 3 whatever the verdict, saying which file. newLog makes
// the run's logger on a writer.
//
// The scenario's secrets (rep.Redact, built once) are redacted at every
// sink: stdout and stderr (console, messages, progress, the spawned
// target's stderr) and the log through redacting writers, output file
// names in Expand, each report's bytes before they are written, and the
// error examples before the engine shortens them.
func (a *app) runOne(ctx context.Context, rep *reports.Run, f runFlags, newLog func(io.Writer) zerolog.Logger, stdout, stderr io.Writer) int {
	sc := rep.Plan.Scenario
	stdout, flush := coloured(stdout) // secrets are redacted before colour
	defer flush()
	stdout = rep.Redact.Writer(stdout)
	if lt, ok := stderr.(*liveTerm); ok {
		// The terminal's progress line and everything else written on it
		// go through the redactor while this run lasts.
		defer lt.through(rep.Redact.Writer)()
	} else {
		stderr = rep.Redact.Writer(stderr)
	}
	log := newLog(stderr)
	tsvPath, jsonPath := outputPaths(rep, f)
	var (
		tsvErr     error // the last failed TSV append: rows were lost
		jsonWarned bool
	)
	term, _ := stderr.(*liveTerm)
	opts := execute.Options{
		Segment:      f.segment,
		StartAt:      f.startAt,
		PhaseGap:     f.phaseGap,
		NoEventLoop:  f.noEventLoop,
		TargetStderr: stderr,
		Log:          log,
		Progress:     a.progress(stderr, log, f),
		Baseline:     f.base,
		BaselineRef:  f.baseRef,
		Calibration:  execute.LoadCalibration,
		AfterSpawn:   a.afterSpawn,
		Hold:         a.hold,
		OnPhase: func(pr *engine.PhaseResult) {
			term.clear() // the progress line gives way
			if tsvPath != "" {
				outputs.Lock()
				err := a.appendTSV(tsvPath, rep.Rows(pr))
				outputs.Unlock()
				if err != nil {
					if tsvErr == nil {
						fmt.Fprintf(stderr, "runner: results lost: %v\n", err)
					}
					tsvErr = err
				}
			}
			// The JSON is rewritten whole after every phase (temporary
			// file, then rename), so even a killed run leaves a parseable
			// report. A failure here is lost only if the final write
			// fails too.
			if err := a.writeJSON(rep, jsonPath); err != nil && !jsonWarned {
				fmt.Fprintf(stderr, "runner: %v (will try again at the end)\n", err)
				jsonWarned = true
			}
		},
	}
	if err := execute.Run(ctx, rep, opts); err != nil {
		// Nothing was sent.
		if rep.Outcome == execute.Interrupted {
			fmt.Fprintf(stderr, "runner: %s: %v before the first phase; nothing was sent\n", sc.File, err)
		} else {
			fmt.Fprintln(stderr, "runner:", rep.Error)
		}
		// Every report says why (a CI job that reads the JUnit file finds
		// it; one shared by several scenarios would otherwise read as if
		// this one had not been asked for).
		_, lost := a.writeReports(rep, f)
		if err := a.finish(rep, jsonPath); err != nil {
			lost = append(lost, err)
		}
		for _, err := range lost {
			fmt.Fprintf(stderr, "runner: %s: results lost: %v\n", sc.File, err)
		}
		return execute.ExitCouldNotRun
	}
	runErr := rep.Error // why the run could not complete, before any results lost
	var lost []error
	if tsvErr != nil {
		lost = append(lost, tsvErr)
		execute.ResultsLost(rep, tsvErr) // before the final JSON, which then says so
	}
	lost, written := a.writeResults(rep, jsonPath, f, lost)
	if a.hold != nil {
		a.hold(ctx, "written")
	}
	if execute.SignalledLate(ctx, rep) && rep.Error == "" {
		// The signal came while the results were written: they are
		// written again, whole, with the outcome it makes.
		execute.Decide(rep)
		lost, written = a.writeResults(rep, jsonPath, f, nil)
	}
	if err := stepSummary(rep); err != nil {
		fmt.Fprintf(stderr, "runner: GITHUB_STEP_SUMMARY: %v\n", err)
	}
	reports.Console(stdout, rep, !f.quiet)
	if len(lost) == 0 && (tsvPath != "" || jsonPath != "" || len(written) > 0) {
		var where []string
		if tsvPath != "" {
			where = append(where, "rows appended to "+tsvPath)
		}
		if jsonPath != "" {
			where = append(where, "report written to "+jsonPath)
		}
		if len(written) > 0 {
			where = append(where, "also "+strings.Join(written, ", "))
		}
		fmt.Fprintf(stdout, "results: %s\n", strings.Join(where, "; "))
	}
	if runErr != "" {
		fmt.Fprintf(stderr, "runner: %s: could not complete: %s\n", sc.File, runErr)
	}
	for _, err := range lost {
		fmt.Fprintf(stderr, "runner: %s: results lost: %v\n", sc.File, err)
	}
	return rep.ExitCode
}

// writeResults writes the other reports of a judged run, then the final
// JSON report (which then says if one of them was lost), and returns the
// failures appended to lost and the reports written ("markdown path").
// A report that cannot be written marks the run as having lost results
// (exit 3).
func (a *app) writeResults(rep *reports.Run, jsonPath string, f runFlags, lost []error) ([]error, []string) {
	written, lostReports := a.writeReports(rep, f)
	for _, err := range lostReports {
		lost = append(lost, err)
		execute.ResultsLost(rep, err)
	}
	if err := a.finish(rep, jsonPath); err != nil {
		lost = append(lost, err)
		execute.ResultsLost(rep, err)
	}
	return lost, written
}

// progress returns the engine's progress callback: on a terminal (stderr
// a *liveTerm) a live line on stderr, rewritten in place every second;
// otherwise (CI) an info log line every a.progressEvery, its durations
// with their units (elapsed=11s of=30s; "of" only for a phase of planned
// length), which also carries the process's own memory as the Go runtime
// sees it (memFigures: heap_kib, heap_live_kib, go_mapped_kib,
// gc_cycles). nil with --quiet.
func (a *app) progress(stderr io.Writer, log zerolog.Logger, f runFlags) func(engine.Progress) {
	if f.quiet {
		return nil
	}
	line := func(p engine.Progress) string {
		el := p.Elapsed.Round(100 * time.Millisecond).String()
		if p.Total > 0 {
			el += " of " + p.Total.String()
		}
		rate := float64(p.Requests) / max(p.Elapsed.Seconds(), 1e-9)
		if p.Iterations >= 0 {
			return fmt.Sprintf("repeat %d · %s · %s · %.1f iterations/s · %d in progress (%d requests in flight) · errors %d · p99 so far %s", p.Repeat, p.Phase, el, rate, p.Iterations, p.InFlight, p.Errors, p99Text(p))
		}
		return fmt.Sprintf("repeat %d · %s · %s · %.1f req/s · in flight %d · errors %d · p99 so far %s", p.Repeat, p.Phase, el, rate, p.InFlight, p.Errors, p99Text(p))
	}
	if term, ok := stderr.(*liveTerm); ok {
		return func(p engine.Progress) { term.progress(line(p)) }
	}
	var last time.Duration
	var phase string
	return func(p engine.Progress) {
		if key := fmt.Sprint(p.Repeat, p.Phase); key != phase {
			phase, last = key, 0 // a new phase: its clock starts again
		}
		if p.Elapsed-last < a.progressEvery {
			return
		}
		last = p.Elapsed
		m := readMem()
		ev := log.Info().Int("repeat", p.Repeat).Str("phase", p.Phase).Str("elapsed", p.Elapsed.Round(100*time.Millisecond).String())
		if p.Total > 0 {
			ev = ev.Str("of", p.Total.String())
		}
		if p.Iterations >= 0 {
			// A flow phase: its requests are iterations, and most of
			// its users may be thinking with nothing in flight.
			ev = ev.Int64("iterations_in_progress", p.Iterations)
		}
		ev.Int64("requests", p.Requests).Int64("errors", p.Errors).Int64("inflight", p.InFlight).
			Str("p99", p99Text(p)).
			Uint64("heap_kib", m.Heap).Uint64("heap_live_kib", m.Live).Uint64("go_mapped_kib", m.Mapped).Uint64("gc_cycles", m.GCs).
			Msg("progress")
	}
}

// liveTerm is the terminal on stderr, shared by the live progress line
// and every other line written there (log lines, messages). The progress
// line is drawn without a newline, so a line written while it shows
// clears it first (\r ESC[K) rather than being glued to its end; the
// progress line is drawn again at its next update. It is safe for
// concurrent use.
type liveTerm struct {
	mu    sync.Mutex
	w     io.Writer
	shown bool // a progress line is on the screen
}

// Write writes b on the terminal, the progress line cleared first.
func (t *liveTerm) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.clearLocked()
	return t.w.Write(b)
}

// progress draws line in place of the previous progress line.
func (t *liveTerm) progress(line string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintf(t.w, "\r\033[K%s", line)
	t.shown = true
}

// through makes everything written on the terminal go through wrap(w)
// (a redactor) until the returned function restores w.
func (t *liveTerm) through(wrap func(io.Writer) io.Writer) (restore func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	w := t.w
	t.w = wrap(w)
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		t.w = w
	}
}

// clear removes the progress line, if one shows; a nil t does nothing.
func (t *liveTerm) clear() {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.clearLocked()
}

func (t *liveTerm) clearLocked() {
	if t.shown {
		io.WriteString(t.w, "\r\033[K")
		t.shown = false
	}
}

// Terminal reports that a liveTerm is a terminal.
func (t *liveTerm) Terminal() bool { return true }

func p99Text(p engine.Progress) string {
	if !p.P99OK {
		return "n/a"
	}
	return p.P99.Round(time.Microsecond).String()
}

// isTerminal reports whether w is a terminal (a progress line can be
// rewritten in place there): a writer that says so with a Terminal
// method (tests inject one), or a file that is a terminal device.
func isTerminal(w io.Writer) bool {
	if t, ok := w.(interface{ Terminal() bool }); ok {
		return t.Terminal()
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	err := termiosErr(f)
	return err == nil
}

// scenarioNameOf is a saved run's scenario name ("" when it has none).
func scenarioNameOf(r *reports.Run) string {
	if r.Scenario == nil {
		return ""
	}
	return r.Scenario.Name
}

// stepSummary appends the Markdown report to the file GitHub Actions
// names in GITHUB_STEP_SUMMARY, when it is set: the run's verdict shows
// on the workflow's summary page.
func stepSummary(rep *reports.Run) error {
	path := os.Getenv("GITHUB_STEP_SUMMARY")
	if path == "" {
		return nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if err := render(f, reports.Markdown, rep); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// render renders rep with r into a buffer and writes it to w whole
// (renderRuns with one run).
func render(w io.Writer, r func(io.Writer, *reports.Run) error, rep *reports.Run) error {
	one := func(w io.Writer, runs []*reports.Run) error { return r(w, runs[0]) }
	return renderRuns(w, one, []*reports.Run{rep})
}

// renderRuns renders runs with r into a buffer and writes it to w whole.
// A run with secrets is rendered from its redacted copy (reports.Run.
// Redacted: every string of its JSON report redacted), so that a secret
// that reads like report syntax (testcase, svg, HIST) is replaced where it
// is text and never where it is structure. Should a copy fail (a rule
// that no longer compiles once redacted), that run is rendered itself and
// every run's secrets are redacted from the bytes.
func renderRuns(w io.Writer, r func(io.Writer, []*reports.Run) error, runs []*reports.Run) error {
	red := make([]*reports.Run, len(runs))
	copied := true
	for i, rep := range runs {
		c, err := rep.Redacted()
		if err != nil {
			c, copied = rep, false
		}
		red[i] = c
	}
	var b bytes.Buffer
	if err := r(&b, red); err != nil {
		return err
	}
	out := b.Bytes()
	if !copied {
		for _, rep := range runs {
			out = rep.Redactor().Bytes(out)
		}
	}
	_, err := w.Write(out)
	return err
}

func pick(flag, scenario string) string {
	if flag != "" {
		return flag
	}
	return scenario
}

// finish stamps the end of the run and writes the final JSON report.
func (a *app) finish(rep *reports.Run, jsonPath string) error {
	if rep.Ended.IsZero() {
		rep.Ended = time.Now()
	}
	return a.writeJSON(rep, jsonPath)
}

// writeJSON writes the JSON report to path, if there is one; its error
// names path.
func (a *app) writeJSON(rep *reports.Run, path string) error {
	if path == "" {
		return nil
	}
	outputs.Lock()
	defer outputs.Unlock()
	return a.writeReport(path, rep)
}

// generatorGCPercent is the garbage collector's target for a run: a heap
// may grow to 5× its live size (tens of MiB for a load generator) before
// a collection, instead of Go's 2×. Collections cost the generator CPU
// between a response and the next send, which is time in no request: at
// 1 ms response times GOGC=100 cost Little's law 2–3 % of the connections
// in the seed 000 frame scenario, GOGC=400 under 1 %.
const generatorGCPercent = 400

// tuneGC sets generatorGCPercent unless the user set GOGC.
func tuneGC() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(generatorGCPercent)
	}
}

// scaleOut reads --segment, --start-at and --phase-gap and checks that
// every plan can run as that segment; false (after saying why on stderr)
// is a usage error (exit 2), before any traffic.
func (f *runFlags) scaleOut(plans []*engine.Plan, stderr io.Writer) bool {
	fail := func(err error) bool {
		fmt.Fprintf(stderr, "runner run: %v\n", err)
		return false
	}
	if f.segmentSpec != "" {
		s, source, err := parseSegment(f.segmentSpec, os.Getenv)
		if err != nil {
			return fail(err)
		}
		f.segment, f.segmentSource = s, source
	}
	if f.startAtText != "" {
		t, err := parseStartAt(f.startAtText, time.Now())
		if err != nil {
			return fail(err)
		}
		f.startAt = t
	}
	if f.phaseGap <= 0 {
		return fail(fmt.Errorf("--phase-gap %s: must be positive", f.phaseGap))
	}
	if f.segmentSpec == "" {
		return true
	}
	if len(plans) > 1 {
		return fail(fmt.Errorf("--segment: a segment runs one scenario (given %d): run each scenario's segments apart, each with its own --start-at", len(plans)))
	}
	if f.baseline != "" {
		return fail(fmt.Errorf("--baseline with --segment: a segment is not judged; give --baseline to runner merge"))
	}
	if f.segment.N > 1 && f.startAt.IsZero() {
		return fail(fmt.Errorf("--segment %s: segments of one run need one --start-at instant (e.g. --start-at %s), or their loads would not overlap as planned", f.segment, time.Now().Add(2*time.Minute).UTC().Truncate(time.Second).Format(time.RFC3339)))
	}
	var ignored []string
	for flag, v := range map[string]string{"--tsv": f.tsv, "--markdown": f.markdown, "--junit": f.junit, "--html": f.html, "--hdr": f.hdr} {
		if v != "" {
			ignored = append(ignored, flag)
		}
	}
	if len(ignored) > 0 {
		slices.Sort(ignored)
		fmt.Fprintf(stderr, "runner run: --segment: a segment writes only its JSON report; %s are written by runner merge (give them there)\n", strings.Join(ignored, ", "))
	}
	for _, pl := range plans {
		if err := execute.CheckSegment(pl, f.segment); err != nil {
			return fail(fmt.Errorf("%s: --segment %s: %v", pl.Scenario.File, f.segment, err))
		}
		if f.json == "" && pl.Scenario.Outputs.JSON == "" {
			return fail(fmt.Errorf("%s: --segment %s: a segment's result is its JSON report: give --json (e.g. results/{scenario}-{segment}.json) or outputs.json", pl.Scenario.File, f.segment))
		}
	}
	return true
}

// Command runner is the command line in front of the pipeline: through
// internal/execute it loads a YAML scenario (schema), compiles it into a
// plan, runs it (engine, drivers, measure) and judges the rules
// (engine/rules); it keeps the flags, signals and terminal, writes the
// reports (reports) and turns the outcome into its exit code. `runner
// serve KIND` runs a reference target (targets).
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/runner-dev/runner/internal/execute"
	"github.com/runner-dev/runner/reports"
)

// Exit codes (docs/design.md, "Exit codes"), as each run's report
// records them with its outcome (execute.Decide). A failed rule wins over
// inconclusive.
const (
	exitPass         = execute.ExitPass         // every rule holds
	exitFail         = execute.ExitFail         // a rule failed
	exitInvalid      = execute.ExitInvalid      // invalid scenario or usage
	exitCouldNotRun  = execute.ExitCouldNotRun  // target unreachable, aborted, crashed target, client limits
	exitInconclusive = execute.ExitInconclusive // the measurement cannot support a verdict
)

func main() {
	a := newApp(os.Stdout, os.Stderr)
	if args := os.Args[1:]; len(args) > 0 && args[0] == "run" {
		// Taken from the first instant: a signal before the run's own
		// handling starts (while the scenario loads) would otherwise kill
		// the process (exit 130), or be dropped when it was started with
		// SIGINT ignored (a background job), and the run would go on to
		// exit 0. interruptible takes what came.
		a.signals = make(chan os.Signal, 2)
		signal.Notify(a.signals, syscall.SIGINT, syscall.SIGTERM)
	}
	os.Exit(a.guarded(context.Background(), os.Args[1:]))
}

// app is one invocation of the runner: its writers and the parts of it a
// test replaces. Each invocation has its own; nothing is a package-level
// hook.
type app struct {
	stdout, stderr io.Writer
	// stdin is read for the scenario `-` (runner run -).
	stdin io.Reader
	// signals, when non-nil, has received SIGINT and SIGTERM since the
	// process started (runner run); interruptible handles it instead of a
	// channel of its own.
	signals chan os.Signal
	// forceExit ends the process on a second signal.
	forceExit func(code int)
	// beforeRun, when set, is called by guarded first (tests make it panic).
	beforeRun func()
	// afterSpawn and hold are execute.Options' AfterSpawn and Hold; hold
	// is also called at "written", once the results have been written.
	afterSpawn func(url string)
	hold       func(ctx context.Context, point string)
	// progressEvery is how often a run without a terminal logs progress.
	progressEvery time.Duration
	// writeReport writes the JSON report, appendTSV appends TSV rows and
	// renderers render the other reports by format (tests make them fail).
	writeReport func(path string, rep *reports.Run) error
	appendTSV   func(path string, rows [][]string) error
	renderers   map[string]func(io.Writer, *reports.Run) error
}

// newApp is an invocation writing on stdout and stderr, with the
// process's behaviour.
func newApp(stdout, stderr io.Writer) *app {
	return &app{
		stdout: stdout, stderr: stderr, stdin: os.Stdin,
		forceExit:     os.Exit,
		progressEvery: 5 * time.Second,
		writeReport:   reports.WriteJSON,
		appendTSV:     reports.AppendTSV,
		renderers:     renderers,
	}
}

// guarded is run with a panic turned into exit 3 ("could not
// complete"), the stack on stderr: the Go runtime would exit a panic
// with 2, which a CI gate reads as "invalid scenario, nothing was sent".
// A panic is a bug of runner's; it never passes, fails or is inconclusive.
func (a *app) guarded(ctx context.Context, args []string) (code int) {
	defer func() {
		if p := recover(); p != nil {
			fmt.Fprintf(a.stderr, "runner: internal error (a bug; please report it): %v\n%s", p, debug.Stack())
			code = exitCouldNotRun
		}
	}()
	if a.beforeRun != nil {
		a.beforeRun()
	}
	return a.run(ctx, args)
}

// run is main without the process: tests call it with their own
// arguments and writers and read the exit code.
func (a *app) run(ctx context.Context, args []string) int {
	code := exitPass
	root := newRoot(a, &code)
	root.SetArgs(args)
	if err := root.ExecuteContext(ctx); err != nil {
		if ec, ok := err.(exitError); ok {
			return int(ec)
		}
		// Cobra's own errors (unknown command or flag, wrong argument
		// count) are usage errors.
		root.PrintErrln("runner:", err)
		return exitInvalid
	}
	return code
}

// exitError lets a subcommand end with a specific exit code after it has
// printed its own message.
type exitError int

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

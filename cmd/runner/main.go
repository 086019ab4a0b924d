// Command runner runs declarative load-test scenarios: it loads a YAML
// scenario, compiles it into a plan, drives the target, measures honestly
// and gives a verdict as its exit code.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
)

// Exit codes (DESIGN.md §5). A failed rule wins over inconclusive.
const (
	exitPass         = 0 // every rule holds
	exitFail         = 1 // a rule failed
	exitInvalid      = 2 // invalid scenario or usage
	exitCouldNotRun  = 3 // target unreachable, aborted, crashed target, client limits
	exitInconclusive = 4 // the measurement cannot support a verdict
)

func main() {
	if args := os.Args[1:]; len(args) > 0 && args[0] == "run" {
		// Taken from the first instant: a signal before the run's own
		// handling starts (while the scenario loads) would otherwise kill
		// the process (exit 130), or be dropped when it was started with
		// SIGINT ignored (a background job), and the run would go on to
		// exit 0. interruptible takes what came.
		early = make(chan os.Signal, 2)
		signal.Notify(early, syscall.SIGINT, syscall.SIGTERM)
	}
	os.Exit(runGuarded(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// early, when non-nil, has received SIGINT and SIGTERM since the process
// started (runner run); interruptible handles it instead of a channel of
// its own.
var early chan os.Signal

// runGuarded is run with a panic turned into exit 3 ("could not
// complete"), the stack on stderr: the Go runtime would exit a panic
// with 2, which a CI gate reads as "invalid scenario, nothing was sent".
// A panic is a bug of runner's; it never passes, fails or is inconclusive.
func runGuarded(ctx context.Context, args []string, stdout, stderr io.Writer) (code int) {
	defer func() {
		if p := recover(); p != nil {
			fmt.Fprintf(stderr, "runner: internal error (a bug; please report it): %v\n%s", p, debug.Stack())
			code = exitCouldNotRun
		}
	}()
	if beforeRun != nil {
		beforeRun()
	}
	return run(ctx, args, stdout, stderr)
}

// beforeRun, when non-nil, is called by runGuarded first; tests make it
// panic.
var beforeRun func()

// run is main without the process: tests call it with their own
// arguments and writers and read the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	code := exitPass
	root := newRoot(stdout, stderr, &code)
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

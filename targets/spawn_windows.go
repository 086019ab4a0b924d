//go:build windows

package targets

import (
	"os"
	"os/exec"
	"syscall"
)

// procAttr is the default: Windows has neither process-group signals nor
// a parent-death signal. A runner stopped normally still stops its
// target (Stop), but one killed outright (Task Manager, a crash) leaves
// the target running until it is stopped by hand.
func procAttr() *syscall.SysProcAttr { return nil }

// terminate ends the target with os.Process.Kill (TerminateProcess):
// Windows has no SIGTERM to ask first, so the target gets no chance to
// shut down gracefully, and a process the target itself started is not
// ended with it (the reference targets start none).
func terminate(p *os.Process) { p.Kill() }

// kill is terminate again, should the first attempt not have ended it.
func kill(p *os.Process) { p.Kill() }

// stopped reports whether the target ended with exit status 1, the code
// os.Process.Kill makes TerminateProcess give it. A target that exits 1
// on its own during Stop is read as stopped too.
func stopped(ee *exec.ExitError) bool { return ee.ExitCode() == 1 }

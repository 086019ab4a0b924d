//go:build unix

package targets

import (
	"os"
	"os/exec"
	"syscall"
)

// terminate sends SIGTERM to the target's process group (its pid: Spawn
// makes it the group's leader).
func terminate(p *os.Process) { syscall.Kill(-p.Pid, syscall.SIGTERM) }

// kill sends SIGKILL to the target's process group.
func kill(p *os.Process) { syscall.Kill(-p.Pid, syscall.SIGKILL) }

// stopped reports whether the target ended by Stop's own signals.
func stopped(ee *exec.ExitError) bool {
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && (ws.Signal() == syscall.SIGTERM || ws.Signal() == syscall.SIGKILL)
}

//go:build unix && !linux

package targets

import "syscall"

// procAttr puts the target in its own process group (Stop signals the
// group). These systems (macOS, the BSDs) have no parent-death signal: a
// runner stopped normally (end of run, Ctrl-C, SIGTERM) still stops its
// target, but one killed outright (SIGKILL, a crash) leaves the target
// running until it is stopped by hand.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

//go:build linux

package targets

import "syscall"

// procAttr puts the target in its own process group (Stop signals the
// group) and has the kernel SIGKILL it should this process die
// (Pdeathsig), so a killed runner never leaves its target behind.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

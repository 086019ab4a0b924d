//go:build unix

package main

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// sysSignalName is the signal's name (SIGINT), or "" when it has none.
func sysSignalName(n syscall.Signal) string { return unix.SignalName(n) }

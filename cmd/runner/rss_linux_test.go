//go:build linux

package main

import (
	"os"
	"syscall"
)

// peakRSS is a finished process's peak resident set, bytes (getrusage via
// wait4 reports KiB on Linux); 0 when it cannot be read.
func peakRSS(ps *os.ProcessState) int64 {
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return ru.Maxrss << 10
	}
	return 0
}

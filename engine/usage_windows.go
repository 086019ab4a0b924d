//go:build windows

package engine

import (
	"syscall"
	"time"
)

// cpuTime is the process's user and kernel CPU time (GetProcessTimes,
// the figure getrusage gives on Unix).
func cpuTime() time.Duration {
	h, err := syscall.GetCurrentProcess()
	if err != nil {
		return 0
	}
	var creation, exit, kernel, user syscall.Filetime
	if syscall.GetProcessTimes(h, &creation, &exit, &kernel, &user) != nil {
		return 0
	}
	// A Filetime here is a duration in 100 ns units, not an instant.
	ticks := func(f syscall.Filetime) int64 { return int64(f.HighDateTime)<<32 | int64(f.LowDateTime) }
	return time.Duration((ticks(kernel) + ticks(user)) * 100)
}

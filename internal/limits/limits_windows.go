//go:build windows

package limits

// Descriptors passes on Windows and returns 0: Windows has no
// RLIMIT_NOFILE, and its socket handles are bounded by memory and the
// system's ephemeral ports, not by a per-process limit this check could
// read or raise. A plan that holds more connections than the machine
// allows fails at connect time instead, where each failure is counted
// (EMFILE, ENOBUFS, EADDRINUSE and the like).
func Descriptors(connections int) (uint64, error) {
	return 0, nil
}

// Package limits is the pre-flight kit of internal/execute: it checks, before any
// traffic, that this machine lets the client hold the connections a plan
// needs: open descriptors (RLIMIT_NOFILE) and local ports
// (net.ipv4.ip_local_port_range).
//
// Descriptors reads RLIMIT_NOFILE on Unix systems (limits_unix.go); Windows
// has no such per-process limit to read (limits_windows.go), so there the
// check passes without a number. Ports reads Linux's port range file and
// passes where it is missing (macOS, Windows): their ephemeral ranges are
// not read.
package limits

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Reserve is the descriptors kept for everything that is not a load
// connection: stdio, result files, the spawned target's pipes, the
// counters fetch, the Go runtime.
const Reserve = 64

// PortRange reads the local (ephemeral) port range, inclusive. ok is false
// where the file does not exist (not Linux).
func PortRange() (lo, hi int, ok bool) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, 0, false
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, 0, false
	}
	lo, err1 := strconv.Atoi(f[0])
	hi, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil || hi < lo {
		return 0, 0, false
	}
	return lo, hi, true
}

// Ports checks that `connections` simultaneous connections to one target
// address fit in the local port range.
func Ports(connections int) error {
	lo, hi, ok := PortRange()
	if !ok {
		return nil
	}
	if n := hi - lo + 1; connections > n {
		return fmt.Errorf("the plan holds %d connections to one address but the local port range %d-%d has only %d ports; widen net.ipv4.ip_local_port_range or use fewer connections", connections, lo, hi, n)
	}
	return nil
}

// Package limits is the pre-flight kit of internal/execute: it checks, before any
// traffic, that this machine lets the client hold the connections a plan
// needs: open descriptors (RLIMIT_NOFILE) and local ports
// (net.ipv4.ip_local_port_range).
package limits

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Reserve is the descriptors kept for everything that is not a load
// connection: stdio, result files, the spawned target's pipes, the
// counters fetch, the Go runtime.
const Reserve = 64

// Descriptors makes sure `connections` load connections plus Reserve fit
// under RLIMIT_NOFILE, raising the soft limit up to the hard one first.
// It returns the limit in force and an error that says what is needed,
// what the limit is and how to raise it when they do not fit.
func Descriptors(connections int) (uint64, error) {
	need := uint64(connections + Reserve)
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, fmt.Errorf("read the descriptor limit: %w", err)
	}
	if lim.Cur < need && lim.Cur < lim.Max {
		raised := lim
		raised.Cur = min(lim.Max, max(need, lim.Cur))
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised); err == nil {
			lim = raised
		}
	}
	if lim.Cur < need {
		how := fmt.Sprintf("raise it with `ulimit -n %d` (or LimitNOFILE= in a systemd unit) and run again", need)
		if lim.Max < need {
			how = fmt.Sprintf("the hard limit is below that too: raise it as root (`ulimit -Hn %d && ulimit -n %d`, /etc/security/limits.conf, or LimitNOFILE= in a systemd unit), or use fewer connections", need, need)
		}
		return lim.Cur, fmt.Errorf("the plan needs %d file descriptors (%d connections + %d reserve) but the limit is %d (hard limit %d); %s",
			need, connections, Reserve, lim.Cur, lim.Max, how)
	}
	return lim.Cur, nil
}

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

//go:build unix

package limits

import (
	"fmt"
	"syscall"
)

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

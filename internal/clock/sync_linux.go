//go:build linux

package clock

import (
	"golang.org/x/sys/unix"
)

// SyncState reads the clock's synchronisation state (adjtimex with no
// change requested). A failure is recorded in Sync.Err, never fatal.
func SyncState() Sync {
	var tx unix.Timex // modes 0: read only
	state, err := unix.Adjtimex(&tx)
	if err != nil {
		return Sync{Err: "adjtimex: " + err.Error()}
	}
	return Sync{
		Synchronised:   tx.Status&unix.STA_UNSYNC == 0 && state != unix.TIME_ERROR,
		MaxErrorMicros: int64(tx.Maxerror),
		EstErrorMicros: int64(tx.Esterror),
	}
}

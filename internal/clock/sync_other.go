//go:build !linux

package clock

import "runtime"

// SyncState reports that the clock's synchronisation state cannot be read:
// adjtimex(2) is Linux's. Synchronised stays false and the error bounds
// zero, with Sync.Err saying why, so nothing claims a disciplined clock.
func SyncState() Sync {
	return Sync{Err: "not available on " + runtime.GOOS}
}

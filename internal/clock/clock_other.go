//go:build !linux

package clock

import (
	"context"
	"time"
)

// This system has no timerfd: the precise clock is a Go timer, whose
// wake-ups can be up to a scheduler tick late. Measure reports
// PreciseAvailable false, and the run header says the pacer fell back.

// NewPrecise returns a TimerSleeper: there is no timerfd on this system.
func NewPrecise() Sleeper { return TimerSleeper{} }

// isPrecise is false: NewPrecise never returns a precise sleeper here.
func isPrecise(Sleeper) bool { return false }

// Sleep waits d on a Go timer, or until ctx is done; it reports whether d
// passed. It never returns true early.
func Sleep(ctx context.Context, d time.Duration) bool {
	return For(d, ctx.Done())
}

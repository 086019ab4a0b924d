// Package clock is a kit for the engine's pacer and the reference
// targets: it sleeps precisely, until an instant of the monotonic clock,
// within microseconds rather than the up-to-a-millisecond lateness of Go
// timers on an idle Linux process. The engine's open-model pacer and the
// reference targets' fixed delays both depend on it.
//
// The precise clock needs a Linux timerfd (clock_linux.go). On other
// systems (clock_other.go) NewPrecise returns a TimerSleeper, Sleep waits
// on a Go timer, and Measure reports PreciseAvailable false, which the run
// header shows.
package clock

import (
	"time"
)

// Sleeper waits until an instant of the monotonic clock. A Sleeper is used
// by one goroutine at a time.
type Sleeper interface {
	// Until blocks until the instant t or until done is closed, whichever
	// comes first, and reports whether t was reached. It never returns
	// true before t.
	Until(t time.Time, done <-chan struct{}) bool
	// Close releases the sleeper's resources.
	Close() error
}

// TimerSleeper sleeps on a Go timer. Where the runtime has nothing else to
// do, Go timers wake up to about a millisecond late on Linux (the poller's
// timeout is in milliseconds); under testing/synctest they are exact.
type TimerSleeper struct{}

// NewTimer returns a TimerSleeper.
func NewTimer() Sleeper { return TimerSleeper{} }

// Until implements Sleeper.
func (TimerSleeper) Until(t time.Time, done <-chan struct{}) bool {
	return For(time.Until(t), done)
}

// Close implements Sleeper.
func (TimerSleeper) Close() error { return nil }

// spinBelow: waits shorter than this yield the processor in a loop instead
// of arming a timer, whose wake-up costs more than the wait. It was 50 µs,
// which at 20,000 arrivals/s (one every 50 µs) kept the client core 99 %
// busy spinning: 50 µs of CPU per request against 38 with the timerfd.
const spinBelow = 10 * time.Microsecond

// For waits d on a Go timer or until ch closes; it reports whether d
// passed. Under testing/synctest its time is the bubble's fake time.
func For(d time.Duration, ch <-chan struct{}) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ch:
		return false
	}
}

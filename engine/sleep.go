package engine

import (
	"time"

	"github.com/runner-dev/runner/internal/clock"
)

// Sleeper waits until an instant of the monotonic clock (clock.Sleeper).
type Sleeper = clock.Sleeper

// NewTimerSleeper returns a sleeper on Go timers: exact under
// testing/synctest, up to a millisecond late on an idle Linux process.
func NewTimerSleeper() Sleeper { return clock.NewTimer() }

// NewPreciseSleeper returns a sleeper on a Linux timerfd that wakes within
// microseconds of its instant (clock.PreciseSleeper).
func NewPreciseSleeper() Sleeper { return clock.NewPrecise() }

// sleep waits d or until ch closes; it reports whether d passed.
func sleep(d time.Duration, ch <-chan struct{}) bool { return clock.For(d, ch) }

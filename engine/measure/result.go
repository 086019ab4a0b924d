package measure

import (
	"time"

	"github.com/runner-dev/runner/drivers"
)

// Result is how one request went, as the engine stamped it: the only value
// that flows from the run loop to the Recorder. Times are offsets on a
// monotonic clock from the phase start.
type Result struct {
	// Seq is the request's sequence number (drivers.Request.Seq).
	Seq uint64
	// Intended is the scheduled arrival of the request in the open model,
	// and equal to Sent in the closed model.
	Intended time.Duration
	// Sent is when the engine handed the request to the driver.
	Sent time.Duration
	// Done is when the driver returned the outcome.
	Done time.Duration
	// Outcome is how the request ended, as the driver told it.
	Outcome drivers.Outcome
	// Thinking is true for a flow's iteration that the phase cut between
	// two steps, while its virtual user was thinking (Outcome of class
	// drivers.Cancelled): no request of it was in flight when it was cut.
	// A drain's cut of one counts in Summary.CancelledThinking too, an
	// interrupt's in Summary.InterruptedThinking.
	Thinking bool
}

// ResponseTime is Done − Intended: what a user feels, including any wait
// for a free connection (docs/design.md, "Vocabulary"). A request sent
// before its intended start (an open phase's dispatch window) counts from
// its send instead, Done − min(Intended, Sent): from the later intended
// instant it would read shorter than the service time the target took.
// Negative differences read as 0.
func (r *Result) ResponseTime() time.Duration { return nonNegative(r.Done - min(r.Intended, r.Sent)) }

// ServiceTime is Done − Sent: what the server and the wire took once the
// request left. Negative differences read as 0.
func (r *Result) ServiceTime() time.Duration { return nonNegative(r.Done - r.Sent) }

func nonNegative(d time.Duration) time.Duration {
	if d < 0 {
		return 0
	}
	return d
}

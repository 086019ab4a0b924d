package relink

import (
	"context"
	"sync"
	"time"
)

// Deadline is a request's own deadline (drivers.Request.Deadline, for a
// driver that keeps it: drivers.DeadlineKeeper) as a timer channel, from
// a pool of timers: a request that keeps its deadline this way costs a
// timer reset and stop, where a context with a deadline costs a timer, a
// context and its registration with the parent, allocated every time.
// The zero value never passes. Use it from one goroutine.
type Deadline struct {
	t  *time.Timer
	at time.Time
}

// timers recycles the Deadlines' timers. A stopped or reset timer's
// channel holds no stale value (Go 1.23 timers), so a pooled one is as
// good as new.
var timers = sync.Pool{New: func() any {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return t
}}

// StartDeadline starts the deadline at. It is the zero Deadline, which
// never passes, when at is zero or ctx's own deadline comes no later
// (ctx then ends first). Stop it when done.
func StartDeadline(ctx context.Context, at time.Time) Deadline {
	if at.IsZero() {
		return Deadline{}
	}
	if d, ok := ctx.Deadline(); ok && !d.After(at) {
		return Deadline{}
	}
	t := timers.Get().(*time.Timer)
	t.Reset(time.Until(at))
	return Deadline{t: t, at: at}
}

// C receives once the deadline passes; nil (never) for the zero Deadline.
func (d Deadline) C() <-chan time.Time {
	if d.t == nil {
		return nil
	}
	return d.t.C
}

// At is the deadline; zero for the zero Deadline.
func (d Deadline) At() time.Time { return d.at }

// Passed reports whether the deadline has passed.
func (d Deadline) Passed() bool { return d.t != nil && !time.Now().Before(d.at) }

// Stop releases the timer; the Deadline must not be used after.
func (d Deadline) Stop() {
	if d.t != nil {
		d.t.Stop()
		timers.Put(d.t)
	}
}

// WithDeadline is ctx bounded by d as well, for a step that takes a
// context (a dial); cancel releases it. The zero Deadline gives ctx
// itself.
func (d Deadline) WithDeadline(ctx context.Context) (context.Context, context.CancelFunc) {
	if d.t == nil {
		return ctx, func() {}
	}
	return context.WithDeadline(ctx, d.at)
}

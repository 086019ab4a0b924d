package relink

import (
	"context"
	"errors"
	"sync"
	"time"
)

// WatchGrace is how long a write may last before a Watch starts watching
// its context for cancellation. Writes to a socket with room in its send
// buffer return well within it, so that they never set up a watch (and
// allocate nothing); a write held up by a target that does not read is
// watched from then on, so its cancellation takes effect at most
// WatchGrace after the write began.
const WatchGrace = 20 * time.Millisecond

// Watch bounds the writes of one link, one at a time, without allocating
// and without a timer operation per write: a write that outlasts
// WatchGrace has its context watched (context.AfterFunc, set up only
// then), so that OnCancel runs when the context is cancelled (not when
// its deadline passes) while the write is still under way; a write that
// outlasts Timeout has OnStall run. Either runs at most once per write,
// on a goroutine of its own, with the Watch's lock held: it must not call
// the Watch, and should only unblock the write (set a past write
// deadline, close the link) and return.
//
// One timer serves all writes: armed by a Begin that finds it idle, it
// looks at the write under way when it fires (re-arming itself for that
// write's grace or timeout) and goes idle when there is none. A busy link
// thus costs one timer run per WatchGrace, not per write.
//
// Set the fields before the first Begin and never after. Begin and End
// pair up around each write; the caller ensures one write at a time. The
// zero value with nil funcs watches nothing.
type Watch struct {
	// Timeout is how long a write may last before OnStall; zero: no limit.
	Timeout time.Duration
	// OnCancel runs when the write's context is cancelled during it; nil: nothing.
	OnCancel func()
	// OnStall runs when a write lasts Timeout; nil: nothing.
	OnStall func()

	mu     sync.Mutex
	timer  *time.Timer // runs check; made by the first Begin
	armed  bool        // the timer is due to run
	due    time.Time   // when, if armed
	active bool        // a write is under way
	gen    uint64      // numbers writes: a late cancellation of an earlier one is ignored
	start  time.Time
	ctx    context.Context
	stop   func() bool // the current write's context.AfterFunc, once set up
	fired  Fired
}

// Fired says what a Watch did to a write.
type Fired uint8

// What a Watch did to a write.
const (
	None      Fired = iota // the write was left alone
	Cancelled              // OnCancel ran: its context was cancelled
	Stalled                // OnStall ran: it lasted Timeout
)

// Begin starts watching a write made under ctx.
func (w *Watch) Begin(ctx context.Context) {
	w.mu.Lock()
	w.active, w.fired = true, None
	w.gen++
	w.start = time.Now()
	w.ctx = ctx
	// Armed for a later instant (an earlier write's timeout), the timer
	// is brought forward: this write's grace ends first.
	if grace := w.start.Add(WatchGrace); !w.armed || w.due.After(grace) {
		w.armed, w.due = true, grace
		if w.timer == nil {
			w.timer = time.AfterFunc(WatchGrace, w.check)
		} else {
			w.timer.Reset(WatchGrace)
		}
	}
	w.mu.Unlock()
}

// End stops watching the write and reports what was done to it.
func (w *Watch) End() Fired {
	w.mu.Lock()
	w.active = false
	w.ctx = nil
	stop := w.stop
	w.stop = nil
	fired := w.fired
	w.mu.Unlock()
	if stop != nil {
		stop()
	}
	return fired
}

// check is the timer's. It finds no write under way (and the timer goes
// idle), or one younger than the grace (the timer is re-armed for the
// rest of it), or one past the grace (its context is watched; the timer
// is re-armed for its timeout), or one past its timeout (OnStall).
func (w *Watch) check() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.armed = false
	if !w.active || w.fired != None {
		return
	}
	el := time.Since(w.start)
	if w.Timeout > 0 && el >= w.Timeout {
		if w.OnStall != nil {
			w.fired = Stalled
			w.OnStall()
		}
		return
	}
	next := WatchGrace - el
	if el >= WatchGrace {
		if w.stop == nil && w.OnCancel != nil {
			ctx, gen := w.ctx, w.gen
			w.stop = context.AfterFunc(ctx, func() { w.cancelled(ctx, gen) })
		}
		if w.Timeout <= 0 {
			return
		}
		next = w.Timeout - el
	}
	w.armed, w.due = true, time.Now().Add(next)
	w.timer.Reset(next)
}

// cancelled runs when the context of write gen ends.
func (w *Watch) cancelled(ctx context.Context, gen uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.active || w.gen != gen || w.fired != None || !errors.Is(ctx.Err(), context.Canceled) {
		return
	}
	w.fired = Cancelled
	w.OnCancel()
}

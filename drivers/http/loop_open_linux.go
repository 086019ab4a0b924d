//go:build linux

package http

import "time"

// The open model in the event loop (RunOpen): the loop keeps the
// engine's timetable. Its timer is set for the next arrival's dispatch
// instant; each turn it takes every arrival that came due (arrivals),
// sends each on a free connection or queues it, and a connection whose
// response was booked takes the oldest queued arrival (freed). The
// loop's clock reading when it took an arrival, less the arrival's
// intended start, is the generator's lateness: the loop never waits for
// a connection before it takes one.

// arrival reads the timetable's next arrival (arrivals sets the timer
// for it); at its end the free connections finish.
func (l *loop) arrival() {
	o := l.open
	at, due, ok := o.h.Arrival()
	if !ok {
		o.ended = true
		l.settle()
		return
	}
	o.at, o.due = at, due
}

// arrivals takes every arrival that came due: each goes to a free
// connection, else to the queue (or is dropped, with on_saturation:
// drop).
func (l *loop) arrivals() {
	o := l.open
	if o.ended {
		return
	}
	now := l.now()
	if o.due > now {
		// The timer may have fired for an instant already past, with
		// this arrival read meanwhile: it must be set for it.
		l.armFor(o.due)
		return
	}
	for !o.ended && o.due <= now {
		at := o.at
		o.h.Arrived(at, now)
		if lc, ok := o.free.pop(); ok {
			o.sends = append(o.sends, pendingSend{lc, at})
		} else if o.drops {
			o.h.Dropped(at, now)
		} else {
			o.queue.push(at)
		}
		l.arrival()
	}
	// The timer is set for the next arrival (or a deadline before it)
	// before the sends set it for their deadlines: one timerfd_settime
	// a group, not two.
	if !o.ended {
		l.armFor(o.due)
	}
	for i, p := range o.sends {
		l.dispatch(p.lc, p.at)
		o.sends[i] = pendingSend{}
	}
	o.sends = o.sends[:0]
}

// pendingSend is an arrival taken by a free connection, sent once the
// turn's arrivals are all taken.
type pendingSend struct {
	lc *loopConn
	at time.Duration
}

// freed gives connection lc, its last request booked, the oldest queued
// arrival, or keeps it free until one comes.
func (l *loop) freed(lc *loopConn) {
	o := l.open
	if lc.state == lcFinished {
		return
	}
	if at, ok := o.queue.pop(); ok {
		l.dispatch(lc, at)
		return
	}
	if o.ended || l.cancelled {
		l.finish(lc)
		return
	}
	o.free.push(lc)
}

// fifo is a first-in-first-out list that holds about what is in it: as
// its head is taken, the rest moves down (a queue that never empties,
// in a steady overload, would otherwise hold every item it ever had).
type fifo[T any] struct {
	s []T
	h int // the head's index in s
}

// push adds v at the tail.
func (f *fifo[T]) push(v T) { f.s = append(f.s, v) }

// len is the number of items in f.
func (f *fifo[T]) len() int { return len(f.s) - f.h }

// pop takes the head; false when f is empty.
func (f *fifo[T]) pop() (T, bool) {
	var zero T
	if f.h == len(f.s) {
		return zero, false
	}
	v := f.s[f.h]
	f.s[f.h] = zero
	f.h++
	switch {
	case f.h == len(f.s):
		f.s, f.h = f.s[:0], 0
	case f.h >= compactAt && 2*f.h >= len(f.s):
		n := copy(f.s, f.s[f.h:])
		clear(f.s[n:])
		f.s, f.h = f.s[:n], 0
	}
	return v, true
}

// take empties f and returns what it held, head first.
func (f *fifo[T]) take() []T {
	rest := f.s[f.h:]
	f.s, f.h = nil, 0
	return rest
}

// compactAt is how many items taken from the head of a fifo make it
// move its rest down, once they are half of it or more.
const compactAt = 4096

// dispatch sends the arrival intended at at on connection lc.
func (l *loop) dispatch(lc *loopConn, at time.Duration) {
	r, sent := l.open.h.Send(lc.k, at)
	l.begin(lc, r, sent)
}

// stopOpen stops the timetable (the drain's bound passed, or ctx ended):
// the queued arrivals are given back unsent, with the rest of the
// timetable's due ones, and the free connections finish.
func (l *loop) stopOpen() {
	o := l.open
	if o.ended && o.queue.len() == 0 {
		l.settle()
		return
	}
	// Not ended: the timetable's arrival read last (o.at) is pending.
	pending := !o.ended
	o.ended = true
	o.h.Unsent(o.queue.take(), pending)
	l.settle()
}

// settle finishes the free connections once the timetable has ended and
// nothing is queued: the loop ends when the requests in flight do.
func (l *loop) settle() {
	o := l.open
	if !o.ended {
		return
	}
	if l.connAt != 0 {
		// The timer no longer follows the timetable: the requests in
		// flight still have their deadlines.
		l.arm(l.connAt)
	}
	if o.queue.len() > 0 {
		return
	}
	for _, lc := range o.free.take() {
		l.finish(lc)
	}
}

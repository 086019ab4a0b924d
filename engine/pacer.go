package engine

import (
	"math"
	"time"

	"github.com/runner-dev/runner/drivers"
)

// pace is the open model's clock: it dispatches every arrival at its
// intended start, computed from the schedule (never from the previous
// dispatch, so a late dispatch cannot shift the schedule), to whichever
// in-flight slot is free. In queue mode it waits for a free slot, and the
// arrival's response time keeps counting from its intended start; in drop
// mode an arrival that finds no free slot at that instant is dropped.
//
// With a dispatch window W (PhasePlan.DispatchWindow), the pacer wakes W/4
// before the first arrival of a group (where the arrival before it was
// less than W earlier: in a sparse stretch, on its instant) and sends with
// it every later arrival due less than W after that wake-up: each at most
// W early, the first at most W/4. One wake-up, and one burst the target's
// worker is already awake for, instead of one each. The lead absorbs the
// wake-up's own lateness (a timer on a busy virtual machine overshoots by
// tens of microseconds, now and then by hundreds), so a grouped arrival is
// late only when the generator stalls longer than W/4. The window does not
// apply in drop mode (the loader refuses it there): an early send frees
// its slot early and would change which arrivals are dropped.
// Each request still carries its own intended start; one sent early has
// its response time counted from its send (measure.Result.ResponseTime),
// and how early is recorded (measure.Summary.SendEarly).
//
// When the phase's time is up no new arrival comes due, but every arrival
// that came due is offered load: one still waiting for a slot is handed
// over during the drain, until the drain runs out (hard), and whatever is
// still unsent then is left over (unsent). Cutting the queue at the
// phase's end instead would remove exactly the longest waits.
func (ph *phaseRun) pace(out chan<- time.Duration) {
	defer close(out)
	sl := ph.r.sleeper()
	defer sl.Close()
	sched := ph.p.Schedule(ph.repeat)
	counted := ph.lateRelease(sched)
	// behind is the offset up to which the pacer itself was not running
	// (it woke late for an arrival it had reached early: a stall of the
	// generator's process, CPU or scheduler). The arrivals that came due
	// meanwhile are late by the generator's doing as well, even though
	// the pacer reaches them "late" (already due); without this a 300 ms
	// stall released its burst as if the target had kept them waiting.
	var behind time.Duration
	tt := ph.timetable(sched)
	for {
		i, at, due, ok := tt.next()
		if !ok {
			return
		}
		// In drop mode the pacer never waits for a slot, so any delay is
		// the generator's; in queue mode only for arrivals it reached early.
		early := ph.p.Drop || due > time.Since(ph.start)
		if !sl.Until(ph.start.Add(due), ph.hard.Done()) {
			return // halted before the arrival was due: it never happened
		}
		late := time.Duration(0)
		switch {
		case early:
			// Lateness of our own clock: the arrival was not waiting for
			// a slot, so any delay here is the generator's. A grouped
			// arrival is late only past its own intended start.
			woke := time.Since(ph.start)
			late = woke - at
			behind = max(behind, woke)
		case at < behind:
			// Due while the generator was stalled: late by the stall at
			// least, whatever the slots do after it.
			late = behind - at
		}
		if late > 0 {
			ph.lateness = max(ph.lateness, late)
			// Each once: in drop mode every arrival counts as reached
			// early, those booked up front too.
			if late > LatenessLimit && at >= counted {
				ph.late++
			}
		}
		ph.rec.AddArrivals(1)
		if ph.isDrained() {
			// The drain ran out (or the run was interrupted) while the
			// arrival waited for a slot.
			ph.unsent(sched, i)
			return
		}
		if ph.p.Drop {
			taken, waited, halted := ph.handOff(out, at)
			if halted {
				ph.unsent(sched, i)
				return
			}
			if waited > LatenessLimit {
				ph.lateness = max(ph.lateness, waited)
				ph.late++
			}
			if !taken {
				ph.dropped(late)
			}
			continue
		}
		select {
		case out <- at:
			ph.busy.Add(1) // counted by the pacer, so never behind a handoff
			continue
		default:
		}
		// No worker took it at once. If one was idle, it is not running:
		// the generator cannot hand arrivals out (CPU, scheduler), and a
		// wait past the lateness limit is the generator's, not the target's.
		idle := ph.busy.Load() < int64(ph.p.Connections*ph.p.Inflight)
		t0 := time.Now()
		select {
		case out <- at:
			ph.busy.Add(1)
		case <-ph.drained:
			ph.unsent(sched, i)
			return
		case <-ph.hard.Done():
			ph.unsent(sched, i)
			return
		}
		if w := time.Since(t0); idle && w > LatenessLimit {
			ph.lateness = max(ph.lateness, w)
			ph.late++
		}
	}
}

// lateRelease books the arrivals of sched that came due before a late
// release on the timetable (Runner.StartAt): those intended more than
// LatenessLimit before it are sent that late by the generator, with every
// connection free. It returns the offset before which arrivals are so
// booked (0: none), for the pacer or the loop to count each once.
func (ph *phaseRun) lateRelease(sched Schedule) (counted time.Duration) {
	lag := ph.lag
	if lag <= LatenessLimit {
		return 0
	}
	counted = lag - LatenessLimit
	n := Due(sched, counted, 0)
	if r := ph.p.Requests; r > 0 {
		n = min(n, r)
	}
	ph.late += n
	ph.lateness = max(ph.lateness, lag)
	return counted
}

// dropped books an arrival dropped for want of a free slot at its
// dispatch, late by late: after a late dispatch the slots met a burst
// of the generator's making.
func (ph *phaseRun) dropped(late time.Duration) {
	ph.rec.AddDropped(1)
	if late > LatenessLimit {
		ph.rec.AddDroppedLate(1)
	}
}

// timetable walks an open phase's schedule arrival by arrival, for the
// pacer or an event loop (loop.go): each arrival's intended start, and
// the instant it is dispatched (due), its own or, with a dispatch window,
// its group's wake-up (pace says how groups form).
type timetable struct {
	sched Schedule
	p     *PhasePlan
	i     int64 // the next arrival
	lead  time.Duration
	wake  time.Duration // the current group's dispatch instant
	end   time.Duration // where the current group ends
	prev  time.Duration // the previous arrival's intended start
}

// timetable starts the walk of sched, the phase's schedule in this repeat.
func (ph *phaseRun) timetable(sched Schedule) *timetable {
	return &timetable{sched: sched, p: ph.p, lead: ph.p.DispatchWindow / dispatchLeadDiv}
}

// next returns arrival i (from 0), its intended start at and its
// dispatch instant due, offsets from the phase's start, and moves on;
// false past the phase's count or duration.
func (t *timetable) next() (i int64, at, due time.Duration, ok bool) {
	i = t.i
	if t.p.Requests > 0 && i >= t.p.Requests {
		return i, 0, 0, false
	}
	at = t.sched.At(i)
	if t.p.Duration > 0 && at >= t.p.Duration {
		return i, 0, 0, false
	}
	t.i++
	due = at
	if window := t.p.DispatchWindow; window > 0 {
		if i == 0 || at >= t.end {
			// A lead only where arrivals are dense enough to group: a
			// sparse stretch (a low rate, the foot of a ramp) is paced
			// on each arrival's own instant.
			l := time.Duration(0)
			if i > 0 && at-t.prev < window {
				l = t.lead
			}
			t.wake, t.end = at-l, at-l+window
		}
		due = t.wake
		t.prev = at
	}
	return i, at, due, true
}

// dispatchLeadDiv sets how long before a group's first arrival the pacer
// wakes for it: a quarter of the dispatch window (250 µs of 1 ms).
const dispatchLeadDiv = 4

// handOff gives arrival at to a free slot without waiting for one to
// free up (drop mode): taken reports whether one took it. A slot counted
// free (busy below the slots) whose worker has not yet come back to its
// receive, just after its last request or at the phase's start, is not
// busy at the target: the pacer waits for that worker rather than drop
// the arrival for the generator's own scheduling, and returns how long
// (the generator's lateness). halted reports that the phase was halted
// meanwhile.
func (ph *phaseRun) handOff(out chan<- time.Duration, at time.Duration) (taken bool, waited time.Duration, halted bool) {
	select {
	case out <- at:
		ph.busy.Add(1)
		return true, 0, false
	default:
	}
	if ph.busy.Load() >= int64(ph.p.Connections*ph.p.Inflight) {
		return false, 0, false
	}
	t0 := time.Now()
	select {
	case out <- at:
		ph.busy.Add(1)
		return true, time.Since(t0), false
	case <-ph.hard.Done():
		return false, time.Since(t0), true
	}
}

// isDrained reports whether queued arrivals may no longer be sent: the
// drain's bound passed, or the phase was halted.
func (ph *phaseRun) isDrained() bool {
	select {
	case <-ph.drained:
		return true
	case <-ph.hard.Done():
		return true
	default:
		return false
	}
}

// unsent books arrival i, which came due but was never sent, and every
// later arrival that came due before the phase stopped, so that
// arrivals == requests + dropped + cancelled-unsent + left-over-unsent
// always holds. They are left over when the drain ran out (the target
// could not absorb them in time; each with the lower bound of its
// response time) and cancelled when the run was interrupted. Arrival i is
// already counted.
func (ph *phaseRun) unsent(sched Schedule, i int64) {
	now := time.Since(ph.start)
	due := time.Duration(ph.stopAt.Load())
	if due == 0 {
		// The run's context was cancelled before halt noted the instant.
		due = now
	}
	interrupted := ph.r.interrupted(ph.hard)
	w := ph.window
	if w > 0 && (!interrupted || due > w) {
		// Every arrival of the window came due.
		due = w
	}
	last := int64(math.MaxInt64) // one past the last arrival the count allows
	if r := ph.p.Requests; r > 0 {
		last = r
	}
	if interrupted {
		n := max(min(Due(sched, due, i+1), last)-i, 1)
		ph.rec.AddArrivals(n - 1)
		ph.rec.AddCancelled(n)
		return
	}
	// Left over: each was still waiting now, so its response time is at
	// least now − intended. The schedule is walked forward (a Poisson
	// draw cannot go back); past a long walk the smallest bound any
	// arrival of the window can have, now − due, stands in for the rest.
	j := i
	for ; j < last && j-i < maxBoundWalk; j++ {
		at := sched.At(j)
		if j > i && at >= due {
			break
		}
		ph.rec.LeftOver(int(j-i), now-at)
	}
	rest := int64(0)
	if j-i == maxBoundWalk {
		rest = max(min(Due(sched, due, j), last)-j, 0)
		ph.rec.LeftOverN(0, now-due, rest)
	}
	ph.rec.AddArrivals(j - i - 1 + rest)
}

// maxBoundWalk bounds how many left-over arrivals unsent walks the
// schedule for to find each one's intended start.
const maxBoundWalk = 100_000

// openWorker is one in-flight slot of connection k: it sends the arrivals
// the pacer hands it, one at a time.
func (ph *phaseRun) openWorker(w, k int, in <-chan time.Duration) {
	for {
		select {
		case at, ok := <-in:
			if !ok {
				return
			}
			if ph.hard.Err() != nil {
				// Handed over just as the phase was cut short: it never
				// left, so it is not a request.
				ph.notSent(ph.rec, w, at, drivers.Outcome{})
				ph.busy.Add(-1)
				continue
			}
			ph.send(w, k, at, false)
			ph.busy.Add(-1) // the pacer counted it in
		case <-ph.hard.Done():
			return
		}
	}
}

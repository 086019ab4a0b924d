package engine

import (
	"sync"
	"time"

	"github.com/runner-dev/runner/drivers"
	"github.com/runner-dev/runner/engine/measure"
	"github.com/runner-dev/runner/internal/procs"
)

// A closed phase whose driver can carry its connections in event loops
// (drivers.Looper) runs there: at most one loop per core the runtime
// uses (GOMAXPROCS as the user set it), each waiting on its connections'
// sockets at once, where a goroutine per connection costs a scheduler
// hand-off and a poller wake-up per request. The engine keeps every
// decision: the loop asks it for each slot's next request (loopHooks.Next:
// the phase's time, its count, the numbering and the send's stamp, as
// closedWorker and do take them) and gives it each outcome to stamp and
// book (loopHooks.Done: as do and send do). Not in a loop: a ramp's
// stairs (a slot dialled when its stair comes), flows (an iteration's
// steps and think times), and anything the driver's CanLoop refuses;
// Runner.NoEventLoop keeps goroutines everywhere.

// looper returns the driver's event loops when this phase can run in
// them, else nil.
func (ph *phaseRun) looper() drivers.Looper {
	if ph.flow != nil || EventLoopOf(ph.r.Driver, ph.p, ph.r.NoEventLoop) != "" {
		return nil
	}
	return ph.r.Driver.(drivers.Looper)
}

// EventLoopOf says how a phase's connections are carried with driver d:
// "" when in event loops, else why not (a goroutine each).
func EventLoopOf(d drivers.Driver, p *PhasePlan, off bool) string {
	lp, ok := d.(drivers.Looper)
	switch {
	case off:
		return "--no-event-loop"
	case !ok:
		return "the driver has none"
	case len(p.Steps) > 0:
		return "a ramp's stairs"
	}
	if ok, why := lp.CanLoop(); !ok {
		return why
	}
	if p.Model == Open && p.Inflight > 1 {
		return "more than one request in flight per connection"
	}
	return ""
}

// runLoops carries the phase's connections in lp's event loops. A loop
// that cannot start (no epoll descriptor) leaves the phase to a
// goroutine per connection, said in the log.
func (ph *phaseRun) runLoops(lp drivers.Looper) {
	conns := ph.loopConns()
	h := &loopHooks{ph: ph, sent: make([]time.Duration, len(conns)), at: make([]time.Duration, len(conns))}
	loops := max(1, min(procs.Base(), len(conns)))
	kept, err := lp.RunClosed(ph.hard, ph.stop, conns, loops, h)
	if err != nil {
		ph.loopsReady()
		<-ph.release
		ph.r.Log.Warn().Str("phase", ph.p.Name).Err(err).Msg("a goroutine per connection carries the phase")
		var wg sync.WaitGroup
		for k := range conns {
			wg.Add(1)
			go func() { defer wg.Done(); ph.closedWorker(k, 0) }()
		}
		wg.Wait()
		return
	}
	ph.eventLoops = loops
	ph.keepConns(kept)
}

// loopConns is the pool's connection of each of the phase's slots (nil:
// none) for its event loops to take over.
func (ph *phaseRun) loopConns() []drivers.Conn {
	conns := make([]drivers.Conn, ph.p.Connections)
	for k := range conns {
		conns[k] = ph.pool.get(k)
	}
	return conns
}

// keepConns puts back in the pool the connections the event loops
// handed back, slot by slot.
func (ph *phaseRun) keepConns(kept []drivers.Conn) {
	for k, c := range kept {
		ph.pool.set(k, c)
	}
}

// runOpenLoop carries the open phase's connections and its timetable in
// lp's event loop: one loop, so the arrivals wait in one queue for the
// first of all the connections to free up, as they do for the pacer's
// workers. A loop that cannot start leaves the phase to the pacer and a
// goroutine per connection, said in the log.
func (ph *phaseRun) runOpenLoop(lp drivers.Looper) {
	conns := ph.loopConns()
	sched := ph.p.Schedule(ph.repeat)
	h := &loopHooks{ph: ph, sent: make([]time.Duration, len(conns)), at: make([]time.Duration, len(conns)),
		sched: sched, tt: ph.timetable(sched)}
	kept, err := lp.RunOpen(ph.hard, ph.drained, conns, h)
	if err != nil {
		ph.loopsReady()
		<-ph.release
		ph.r.Log.Warn().Str("phase", ph.p.Name).Err(err).Msg("the pacer and a goroutine per connection carry the phase")
		ph.runPacer()
		return
	}
	ph.eventLoops = 1
	ph.keepConns(kept)
}

// loopHooks is the engine's side of the event loops (drivers.LoopHooks,
// and for an open phase drivers.OpenHooks).
type loopHooks struct {
	ph *phaseRun
	// sent and at are each slot's send offset and its request's intended
	// start (the send itself in the closed model), from the phase start,
	// written by Next or Send and read by Done, both on the slot's loop.
	sent, at []time.Duration

	// The open model's timetable (runOpenLoop): the walk of its
	// schedule; the arrivals before counted were booked late up front.
	sched     Schedule
	tt        *timetable
	lastI     int64         // the index of the arrival Arrival returned last
	lastAt    time.Duration // and its intended start
	counted   time.Duration
	startOnce sync.Once
}

// Start implements drivers.LoopHooks and drivers.OpenHooks: it says the
// loops are ready (their connections taken over, outside the phase's
// time), waits for the phase's barrier, and returns the phase's start.
// An open phase released late on the timetable books the arrivals that
// came due meanwhile as pace does: late by the generator's doing, each
// once.
func (h *loopHooks) Start() time.Time {
	ph := h.ph
	ph.loopsReady()
	<-ph.release
	h.startOnce.Do(func() {
		if h.tt != nil {
			h.counted = ph.lateRelease(h.sched)
		}
	})
	return ph.start
}

// loopsReady tells runPhase the event loops wait at the barrier (or
// will not run): it may start the phase's clock.
func (ph *phaseRun) loopsReady() { ph.readyOnce.Do(func() { close(ph.ready) }) }

// Timeout implements drivers.LoopHooks: the request timeout.
func (h *loopHooks) Timeout() time.Duration { return h.ph.timeout }

// Next implements drivers.LoopHooks as closedWorker decides and do stamps.
func (h *loopHooks) Next(k int) (drivers.Request, time.Duration, bool) {
	ph := h.ph
	// The phase's time is up (or it was halted): the mark endPhase and
	// halt leave, one atomic load. The run's cancellation, which ends
	// the context before halt comes, the loop watches itself
	// (drivers.Looper), before each turn's requests.
	if ph.stopAt.Load() != 0 {
		return drivers.Request{}, 0, false
	}
	if n := ph.p.Requests; n > 0 && ph.claimed.Add(1) > n {
		ph.byCount.Store(true)
		return drivers.Request{}, 0, false
	}
	ph.rec.AddArrivals(1)
	r, sent := h.stamp(k, -1)
	return r, sent, true
}

// stamp numbers slot k's request and stamps its send, as send and do
// do, intended at at (-1: the send itself, the closed model).
func (h *loopHooks) stamp(k int, at time.Duration) (drivers.Request, time.Duration) {
	ph := h.ph
	seq := ph.nextSeq()
	sent := time.Since(ph.start)
	if at < 0 {
		at = sent
	}
	h.sent[k], h.at[k] = sent, at
	ph.inflight.Add(1)
	return drivers.Request{Seq: seq, QueueEnd: ph.drained, Slot: int(ph.r.Segment.Global(int64(k)))}, sent
}

// Arrival implements drivers.OpenHooks: the timetable's next arrival.
func (h *loopHooks) Arrival() (at, due time.Duration, ok bool) {
	h.lastI, at, due, ok = h.tt.next()
	h.lastAt = at
	return at, due, ok
}

// Arrived implements drivers.OpenHooks: one arrival, late by the
// generator when the loop took it after its intended start. The loop
// never waits for a connection before it takes an arrival (it queues),
// so all of the delay is the generator's: its CPU, its scheduler, the
// loop's own turn.
func (h *loopHooks) Arrived(at, now time.Duration) {
	ph := h.ph
	ph.rec.AddArrivals(1)
	if late := now - at; late > 0 {
		ph.lateness = max(ph.lateness, late)
		if late > LatenessLimit && at >= h.counted {
			ph.late++
		}
	}
}

// Drops implements drivers.OpenHooks: on_saturation: drop.
func (h *loopHooks) Drops() bool { return h.ph.p.Drop }

// Dropped implements drivers.OpenHooks as pace books a dropped arrival.
func (h *loopHooks) Dropped(at, now time.Duration) { h.ph.dropped(now - at) }

// Send implements drivers.OpenHooks as send and do number and stamp.
func (h *loopHooks) Send(k int, at time.Duration) (drivers.Request, time.Duration) {
	return h.stamp(k, at)
}

// Unsent implements drivers.OpenHooks as pace books what it never
// handed over: the queued arrivals left over (each with the lower bound
// of its response time, all read at one instant) or cancelled, and the
// arrivals of the timetable that came due before the phase stopped and
// were not taken yet, from the one the loop read last (pending) or the
// one after it.
func (h *loopHooks) Unsent(queued []time.Duration, pending bool) {
	ph := h.ph
	interrupted := ph.r.interrupted(ph.hard)
	now := time.Since(ph.start)
	for _, at := range queued {
		if interrupted {
			ph.rec.AddCancelled(1)
			continue
		}
		ph.rec.LeftOver(0, now-at)
	}
	i, at, ok := h.lastI, h.lastAt, true
	if !pending {
		i, at, _, ok = h.tt.next()
	}
	if !ok {
		return
	}
	due := now
	if stop := time.Duration(ph.stopAt.Load()); stop != 0 {
		due = stop
	}
	if at < due {
		ph.rec.AddArrivals(1) // unsent books it as counted
		ph.unsent(h.sched, i)
	}
}

// Done implements drivers.LoopHooks as do and send book an outcome.
func (h *loopHooks) Done(loop, k int, r drivers.Request, out drivers.Outcome, done time.Duration) {
	ph := h.ph
	ph.inflight.Add(-1)
	sent := h.sent[k]
	if out.Class != drivers.OK {
		ph.cut(&out, ph.start.Add(sent+ph.timeout))
	}
	ph.rec.Record(loop, &measure.Result{Seq: r.Seq, Intended: h.at[k], Sent: sent, Done: done, Outcome: out})
}

// Think implements drivers.LoopHooks: the phase's think time.
func (h *loopHooks) Think() time.Duration { return h.ph.p.ThinkTime }

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

// EventLoopOf says how a closed phase's connections are carried with
// driver d: "" when in event loops, else why not (a goroutine each).
// The open model always runs its workers as goroutines.
func EventLoopOf(d drivers.Driver, p *PhasePlan, off bool) string {
	lp, ok := d.(drivers.Looper)
	switch {
	case p.Model != Closed:
		return "the open model"
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
	return ""
}

// runLoops carries the phase's connections in lp's event loops. A loop
// that cannot start (no epoll descriptor) leaves the phase to a
// goroutine per connection, said in the log.
func (ph *phaseRun) runLoops(lp drivers.Looper) {
	conns := make([]drivers.Conn, ph.p.Connections)
	for k := range conns {
		conns[k] = ph.pool.get(k)
	}
	h := &loopHooks{ph: ph, sent: make([]time.Duration, len(conns))}
	loops := max(1, min(procs.Base(), len(conns)))
	kept, err := lp.RunClosed(ph.hard, ph.stop, conns, loops, h)
	if err != nil {
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
	for k, c := range kept {
		ph.pool.set(k, c)
	}
}

// loopHooks is the engine's side of the event loops (drivers.LoopHooks).
type loopHooks struct {
	ph *phaseRun
	// sent is each slot's send offset from the phase start, written by
	// Next and read by Done, both on the slot's loop.
	sent []time.Duration
}

// Start implements drivers.LoopHooks: the phase's start.
func (h *loopHooks) Start() time.Time { return h.ph.start }

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
	seq := ph.nextSeq()
	sent := time.Since(ph.start)
	h.sent[k] = sent
	ph.inflight.Add(1)
	return drivers.Request{Seq: seq, QueueEnd: ph.drained, Slot: int(ph.r.Segment.Global(int64(k)))}, sent, true
}

// Done implements drivers.LoopHooks as do and send book an outcome.
func (h *loopHooks) Done(loop, k int, r drivers.Request, out drivers.Outcome, done time.Duration) {
	ph := h.ph
	ph.inflight.Add(-1)
	sent := h.sent[k]
	if out.Class != drivers.OK {
		ph.cut(&out, ph.start.Add(sent+ph.timeout))
	}
	ph.rec.Record(loop, &measure.Result{Seq: r.Seq, Intended: sent, Sent: sent, Done: done, Outcome: out})
}

// Think implements drivers.LoopHooks: the phase's think time.
func (h *loopHooks) Think() time.Duration { return h.ph.p.ThinkTime }

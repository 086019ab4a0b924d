package engine

import "time"

// Progress is a running phase's state, for a progress line.
type Progress struct {
	Repeat  int
	Phase   string
	Warmup  bool
	Elapsed time.Duration
	// Total is the phase's planned length (its duration or window); 0
	// when it is bounded by a request count only.
	Total time.Duration
	// Requests, OK and Errors so far (iterations with flows); InFlight
	// now: requests sent and not yet answered.
	Requests, OK, Errors int64
	InFlight             int64
	// Iterations is the flows' iterations in progress now, thinking
	// included (what Little's law counts for a flow phase); −1 for a
	// phase without flows.
	Iterations int64
	// P99 is the response time's p99 so far; P99OK false before any.
	P99   time.Duration
	P99OK bool
}

// iterating is the flows' iterations in progress, −1 without flows.
func (ph *phaseRun) iterating() int64 {
	if ph.flow == nil {
		return -1
	}
	return ph.iterations.Load()
}

// report calls the Runner's Progress every ProgressEvery until done.
func (ph *phaseRun) report(done <-chan struct{}, total time.Duration) {
	every := ph.r.ProgressEvery
	if every <= 0 {
		every = time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
			l := ph.rec.Live()
			ph.r.Progress(Progress{
				Repeat: ph.repeat, Phase: ph.p.Name, Warmup: ph.p.Warmup,
				Elapsed: time.Since(ph.start), Total: total,
				Requests: l.Requests, OK: l.OK, Errors: l.Errors, InFlight: ph.inflight.Load(),
				Iterations: ph.iterating(),
				P99:        l.P99, P99OK: l.P99OK,
			})
		}
	}
}

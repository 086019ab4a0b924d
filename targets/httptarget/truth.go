package httptarget

import (
	"context"
	"flag"
	"fmt"
	"sync"
	"time"
)

// The truth knobs: behaviours whose effect on response time is known in
// closed form, so that the truth tests can compare what runner measures
// with the analytical answer.
//
//   - Workers 1: a single server. Counted requests are served one at a
//     time in the order they arrived (FIFO), each taking its delay (Delay,
//     or SlowDelay, plus DelayPerSeq × n) as its service time S. Request k
//     is answered at c_k = max(a_k, c_{k−1}) + S, computed on arrival as an
//     absolute instant, so the queue never drifts: with arrivals faster
//     than 1/S the queue grows linearly and each response time is known.
//     The counter worker_idle_us sums the gaps a_k − c_{k−1} > 0 after the
//     first request: the time the worker waited for a request that a
//     faster client would have queued (the truth tests' tolerance).
//     A request whose client gives up keeps its place in the schedule (the
//     worker "serves" it anyway), so the requests behind it are unaffected.
//   - StallEvery P, StallFor D: a periodic global stall. A response that
//     would leave during [kP, kP+D) of the stall clock (k = 0, 1, …) is
//     held until kP+D: requests that arrive during a stall, and those
//     already being served when it begins, all wait for its end. The stall
//     holds responses, not the single worker's schedule. The stall clock
//     starts when the target begins listening (StallOrigin "start") or at
//     its first counted request ("first"): a spawned target starts before
//     the load does, and "first" puts a stall exactly at the start of the
//     first phase that sends counted requests (a warmup phase included).
//
// Every wait ends at an absolute instant on the precise clock
// (internal/clock), within microseconds.

// The values of StallOrigin.
const (
	StallFromStart = "start"
	StallFromFirst = "first"
)

// truthFlags registers the truth knobs on fs.
func (cfg *Config) truthFlags(fs *flag.FlagSet) {
	fs.IntVar(&cfg.Workers, "workers", cfg.Workers, "1: a single worker serves counted requests one at a time, FIFO in arrival order, each taking --delay as its service time; 0 = all at once")
	fs.DurationVar(&cfg.StallEvery, "stall-every", cfg.StallEvery, "periodic global stall: every this long (P), hold every response for --stall-for (e.g. 2s); 0 = off")
	fs.DurationVar(&cfg.StallFor, "stall-for", cfg.StallFor, "length D of each stall: a response due during [kP, kP+D) leaves at kP+D (e.g. 500ms); less than --stall-every")
	fs.StringVar(&cfg.StallOrigin, "stall-origin", cfg.StallOrigin, "when the stall clock starts: start (the target began listening; the default) or first (its first counted request)")
}

func (cfg Config) validateTruth() []error {
	var errs []error
	if cfg.Workers != 0 && cfg.Workers != 1 {
		errs = append(errs, fmt.Errorf("workers %d: want 0 (all at once) or 1 (a single worker)", cfg.Workers))
	}
	switch {
	case cfg.StallEvery < 0 || cfg.StallFor < 0:
		errs = append(errs, fmt.Errorf("stall-every %s, stall-for %s: must not be negative", cfg.StallEvery, cfg.StallFor))
	case (cfg.StallEvery > 0) != (cfg.StallFor > 0):
		errs = append(errs, fmt.Errorf("stall-every %s, stall-for %s: give both or neither", cfg.StallEvery, cfg.StallFor))
	case cfg.StallFor >= cfg.StallEvery && cfg.StallEvery > 0:
		errs = append(errs, fmt.Errorf("stall-for %s: must be less than stall-every %s", cfg.StallFor, cfg.StallEvery))
	}
	if o := cfg.StallOrigin; o != "" && o != StallFromStart && o != StallFromFirst {
		errs = append(errs, fmt.Errorf("stall-origin %q: want %q or %q", o, StallFromStart, StallFromFirst))
	}
	return errs
}

// truthState is the target's state for the truth knobs.
type truthState struct {
	mu   sync.Mutex
	free time.Time // when the single worker is next free
	// idle is how long the single worker waited with nothing queued
	// between its first request and its last (worker_idle_us).
	idle time.Duration

	firstOnce sync.Once
	first     time.Time // the first counted request's arrival (StallFromFirst)
}

// forever: a delay this long is not scheduled (it would overflow the
// instants); the request just waits until its client gives up.
const forever = 24 * time.Hour

// hold keeps a counted request that arrived now until its response may
// leave: after its delay d, behind the requests ahead of it (Workers 1),
// and never inside a stall; or until ctx is done. It returns the instant
// the response was due, zero for a delay of forever.
func (t *target) hold(ctx context.Context, d time.Duration) time.Time {
	now := time.Now()
	if d >= forever {
		t.due(now, 0) // sets the stall clock's origin, if it is the first
		wait(ctx, d)
		return time.Time{}
	}
	due := t.due(now, d)
	wait(ctx, time.Until(due))
	return due
}

// recordLate books how long after its due instant a response was written
// (late_max_us): the target's own delay in waking up and writing, which
// no client can see apart from the target's service time. A truth test
// adds it to its tolerance, since a response can leave no earlier.
func (t *target) recordLate(due time.Time) {
	if due.IsZero() {
		return
	}
	late := time.Since(due).Microseconds()
	for {
		cur := t.lateMaxUs.Load()
		if late <= cur || t.lateMaxUs.CompareAndSwap(cur, late) {
			return
		}
	}
}

// due returns the instant the response to a counted request that arrived
// at now with delay d may leave, and books the single worker's time.
func (t *target) due(now time.Time, d time.Duration) time.Time {
	if t.cfg.StallOrigin == StallFromFirst {
		t.truth.firstOnce.Do(func() { t.truth.first = now })
	}
	ready := now.Add(d)
	if t.cfg.Workers == 1 {
		t.truth.mu.Lock()
		ready = t.truth.free
		if now.After(ready) {
			if !ready.IsZero() {
				// The worker had nothing to do since it was last free:
				// the client sent too late to keep it busy.
				t.truth.idle += now.Sub(ready)
			}
			ready = now
		}
		ready = ready.Add(d)
		t.truth.free = ready
		t.truth.mu.Unlock()
	}
	return t.afterStall(ready)
}

// afterStall returns the instant a response due at x leaves: x, or the
// end of the stall x falls in.
func (t *target) afterStall(x time.Time) time.Time {
	p, d := t.cfg.StallEvery, t.cfg.StallFor
	if p <= 0 || d <= 0 {
		return x
	}
	origin := t.start
	if t.cfg.StallOrigin == StallFromFirst {
		origin = t.truth.first // set by hold before any call
	}
	e := x.Sub(origin)
	if e < 0 {
		return x
	}
	k := e / p
	if e-k*p < d {
		return origin.Add(k*p + d)
	}
	return x
}

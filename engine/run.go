package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/runner-dev/runner/drivers"
	"github.com/runner-dev/runner/engine/measure"
	"github.com/runner-dev/runner/internal/procs"
	"github.com/runner-dev/runner/internal/procstat"
)

// ErrNoConnection means not a single connection of a phase could be
// established: the run cannot run (exit 3).
var ErrNoConnection = errors.New("no connection to the target could be established")

// errPhaseEnd is the cancellation cause of requests still open when a
// phase's end-of-phase grace runs out.
var errPhaseEnd = errors.New("phase ended: still in flight after the grace period")

// ErrStartMissed means the run's first phase was not ready by
// Runner.StartAt: it did not start late, it did not run (exit 3).
var ErrStartMissed = errors.New("not ready by the start instant")

// Runner drives a plan through a driver. Its zero value is not usable:
// Driver is required. A Runner runs one plan at a time.
type Runner struct {
	// Driver opens connections to the target.
	Driver drivers.Driver
	// Timeout bounds every request from its send; 0 means 10 s.
	Timeout time.Duration
	// Log receives one line per phase, never per request.
	Log zerolog.Logger
	// Counters, when non-nil, fetches the target's own counters; it is
	// called before and after every phase and its deltas land in
	// PhaseResult.Server. Its requests are never counted as the run's.
	Counters func(ctx context.Context) (map[string]float64, error)
	// OnPhase, when non-nil, is called with each finished phase before
	// the next one starts, so results can be written as they come.
	OnPhase func(*PhaseResult)
	// DialConcurrency bounds simultaneous dials (handshakes); 0 means 8.
	DialConcurrency int
	// DialWindow bounds a phase's whole dial-in (dial.go): dials not made
	// when it ends count as connect failures. 0 means the request timeout
	// or DefaultDialWindow, whichever is longer.
	DialWindow time.Duration
	// NewSleeper makes the open model's pacer clock; nil means
	// NewPreciseSleeper. Tests under testing/synctest use NewTimerSleeper.
	NewSleeper func() Sleeper
	// TargetMeter, when non-nil, starts measuring the target process's
	// resource use when a phase's measured time starts; the function it
	// returns ends the measurement when the phase ends, and its usage
	// lands in PhaseResult.Target. The engine knows nothing of how (the
	// command samples /proc of the process it spawned).
	TargetMeter func() (end func() (*TargetUsage, error))

	// Redact, when non-nil, removes the run's secrets from the error
	// messages kept as examples, before they are shortened
	// (measure.Options.Redact).
	Redact func(string) string

	// Progress, when non-nil, is called about once a second while a
	// phase runs (from a goroutine of its own) with how far it is.
	Progress func(Progress)
	// ProgressEvery is how often Progress is called; 0 means 1 s.
	ProgressEvery time.Duration

	// Segment is the part of the plan this runner runs (Segment.Phase);
	// the zero Segment runs the whole plan. Sequence numbers
	// (drivers.Request.Seq) are then global: unique across the segments.
	Segment Segment
	// StartAt, when not zero, is the wall-clock instant at which the
	// run's first phase starts; every later phase starts on the plan's
	// timetable (Plan.Timetable with PhaseGap). A first phase not ready
	// by then (its counters fetched and connections dialled) does not
	// start late: Run returns ErrStartMissed. A later phase not ready on
	// time starts when it is, its lag recorded (PhaseResult.StartLag).
	StartAt time.Time
	// PhaseGap is the timetable's pause after each phase's drain bound;
	// 0 means DefaultPhaseGap.
	PhaseGap time.Duration
	// NoEventLoop keeps a closed phase on a goroutine per connection even
	// where the driver could carry it in event loops (drivers.Looper;
	// loop.go): the same requests and outcomes, at a higher client cost.
	NoEventLoop bool

	// straysMark is the driver's stray totals where the previous phase's
	// count ended (nil before the run's first phase): each phase counts
	// from there, so a stray arriving between two phases is not lost.
	straysMark *drivers.Strays
	// thinkFor waits out a flow step's think time (nil: sleep); tests
	// replace it with a clock that wakes late.
	thinkFor func(d time.Duration, ch <-chan struct{}) bool
}

// thinkSleep waits d or until ch closes (a flow's think time); it
// reports whether d passed.
func (r *Runner) thinkSleep(d time.Duration, ch <-chan struct{}) bool {
	if r.thinkFor != nil {
		return r.thinkFor(d, ch)
	}
	return sleep(d, ch)
}

// interrupted reports whether ctx ended because the run was interrupted,
// rather than by the phase's own end.
func (r *Runner) interrupted(ctx context.Context) bool {
	return ctx.Err() != nil && !errors.Is(context.Cause(ctx), errPhaseEnd)
}

func (r *Runner) sleeper() Sleeper {
	if r.NewSleeper != nil {
		return r.NewSleeper()
	}
	return NewPreciseSleeper()
}

// Run executes every repeat of the plan. It returns the phases measured
// so far together with an error when the run could not complete (no
// connection at all, or fetching counters failed fatally). When ctx is
// cancelled (Ctrl-C) the current phase stops at once, its requests in
// flight end as cancelled, and Run returns with Result.Interrupted set and
// a nil error: an interruption is a result, not a failure.
func (r *Runner) Run(ctx context.Context, pl *Plan) (*Result, error) {
	res := &Result{}
	if err := r.Segment.Check(pl); err != nil {
		return res, err
	}
	r.straysMark = nil
	var seq atomic.Uint64
	phases := make([]*PhasePlan, len(pl.Phases))
	for i := range pl.Phases {
		phases[i] = r.Segment.Phase(&pl.Phases[i])
	}
	var timetable []time.Duration
	if !r.StartAt.IsZero() {
		gap := r.PhaseGap
		if gap <= 0 {
			gap = DefaultPhaseGap
		}
		timetable = pl.Timetable(gap)
	}
	for rep := 1; rep <= pl.Repeats; rep++ {
		pool := &pool{}
		for i, p := range phases {
			var at time.Time // this phase's instant on the timetable
			if j := (rep-1)*len(phases) + i; j < len(timetable) && timetable[j] >= 0 {
				at = r.StartAt.Add(timetable[j])
			}
			pr, err := r.runPhase(ctx, rep, p, pool, &seq, at, rep == 1 && i == 0)
			if pr != nil && rep == 1 && i == 0 {
				res.ServerAtStart = pr.ServerBefore
			}
			if pr != nil {
				res.Phases = append(res.Phases, pr)
				if r.OnPhase != nil {
					r.OnPhase(pr)
				}
			}
			if err != nil {
				pool.close()
				return res, err
			}
			if pr.Interrupted {
				res.Interrupted = true
				pool.close()
				return res, nil
			}
		}
		pool.close()
	}
	return res, nil
}

// phaseRun is the state of one running phase, shared by its workers.
type phaseRun struct {
	r       *Runner
	p       *PhasePlan
	repeat  int
	pool    *pool
	seq     *atomic.Uint64
	rec     *measure.Recorder
	start   time.Time
	timeout time.Duration
	// keepsDeadline: the driver enforces Request.Deadline itself
	// (drivers.DeadlineKeeper), so requests run on hard directly.
	keepsDeadline bool

	window   time.Duration // the phase's own length in this repeat (phaseWindow)
	stop     chan struct{} // closed: the phase's time is up, no new arrival comes due
	drained  chan struct{} // closed: the drain's bound passed, no queued arrival is sent
	stopOnce sync.Once
	stopAt   atomic.Int64 // offset at which stop happened, ns (at least 1: 0 is not yet)
	hard     context.Context
	hardStop context.CancelCauseFunc

	claimed atomic.Int64 // closed model: requests claimed against the count bound
	byCount atomic.Bool  // a closed phase ended because its request count was reached

	inflight atomic.Int64 // requests in Do now
	// release is the phase's barrier (closed when its clock starts);
	// ready is closed once its event loops have taken their connections
	// over and wait at it, or fell back to goroutines (loopHooks.Start).
	release   <-chan struct{}
	ready     chan struct{}
	readyOnce sync.Once
	// eventLoops is how many event loops carried the phase (loop.go),
	// set when they have all returned; 0 for goroutines.
	eventLoops int

	dials       *dialLog      // the phase's own dials: stairs and empty slots
	live        []atomic.Bool // slot k held a live connection at its start (barrier or stair)
	closedEarly atomic.Int64  // slots the server closed before their start (ConnectionsClosedEarly)

	lag      time.Duration // how late the phase was released after its instant on the timetable
	lateness time.Duration // max scheduler lateness; written by the pacer only
	late     int64         // arrivals dispatched later than LatenessLimit; pacer only
	busy     atomic.Int64  // open model, queue mode: arrivals handed to a worker and not yet done

	stepLateness atomic.Int64 // max lateness of a flow step's wake-up after its think time, ns
	stepsLate    atomic.Int64 // flow steps woken more than LatenessLimit after they came due
	thinkWakeups atomic.Int64 // flow steps that came due after a think time
	iterations   atomic.Int64 // flow iterations in progress (Progress.Iterations)

	flow *flowRun // the flows' mix and per-step recorders; nil without a flow driver
}

// maxShards bounds the shards of a phase's recorder (recordShards).
const maxShards = 16

// recordShards is the number of shards of a phase's recorder: two per
// thread running Go code (GOMAXPROCS), at most maxShards. The workers
// running at once, at most GOMAXPROCS, seldom share a shard's lock (held
// a fraction of a microsecond per request). More shards cost cache
// misses: a request records into four histograms of its shard (about
// 190 KiB each), and recording took 0.32 µs of user CPU per closed-model
// request with 16 shards on one core, 0.16 with 2 (perf, issue 18); and
// memory, about 1 MiB a shard.
func recordShards() int { return min(maxShards, 2*procs.Base()) }

// CollectAfterDials is the number of connections a phase must open
// before it starts for the runner to collect the garbage of their
// handshakes first (debug.FreeOSMemory, outside the measured time).
// 10,000 idle WebSocket connections held 42 KiB each without it.
const CollectAfterDials = 1000

func (r *Runner) runPhase(ctx context.Context, rep int, p *PhasePlan, pool *pool, seq *atomic.Uint64, at time.Time, opening bool) (*PhaseResult, error) {
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	conc := r.DialConcurrency
	if conc <= 0 {
		conc = 8
	}
	if !at.IsZero() && opening && ctx.Err() == nil {
		if late := time.Since(at); late > 0 {
			// Already past: nothing is fetched or dialled.
			return nil, fmt.Errorf("phase %q: %w %s: it was %s ago when the run began", p.Name, ErrStartMissed, at.UTC().Format(time.RFC3339Nano), late.Round(time.Millisecond))
		}
	}
	var before map[string]float64
	var counterErr error
	if r.Counters != nil {
		before, counterErr = r.Counters(ctx)
	}

	window := phaseWindow(p, rep)
	opts := measure.Options{ExpectedInterval: p.ExpectedInterval, Duration: p.Duration + p.Grace, Window: window, Redact: r.Redact}
	rec := measure.NewRecorder(recordShards(), opts)
	flow, err := newFlowRun(r.Driver, opts)
	if err != nil {
		return nil, fmt.Errorf("phase %q: %w", p.Name, err)
	}
	first := p.Connections
	if len(p.Steps) > 0 {
		first = p.Steps[0].Connections
	}
	// Dial the phase's connections before the clock starts, a bounded
	// number at a time and within the dial-in's window, and probe them:
	// dialling is never part of the phase's time (dial.go).
	dialWindow := r.DialWindow
	if dialWindow <= 0 {
		dialWindow = max(DefaultDialWindow, timeout)
	}
	dl := newDialLog(r.Log, p.Name, len(pool.slots(first, false)))
	din := pool.dialIn(ctx, r.Driver, first, conc, timeout, dialWindow, dl)
	pool.reserve(p.Connections)
	rec.AddConnectionsOpened(int64(din.opened))
	rec.AddConnectFailures(int64(din.failed))
	if first > 0 && pool.established(first) == 0 && ctx.Err() == nil {
		var why []string
		if din.failed > 0 {
			why = append(why, fmt.Sprintf("%d dial(s) failed, the first with: %v", din.failed, din.first))
		}
		if din.closed > 0 {
			why = append(why, fmt.Sprintf("%d accepted and then closed by the server", din.closed))
		}
		if len(why) == 0 {
			why = append(why, "no dial completed in the dial-in's window")
		}
		return nil, fmt.Errorf("phase %q: %w: %s", p.Name, ErrNoConnection, strings.Join(why, "; "))
	}
	if sc, ok := r.Driver.(drivers.StreamCapper); ok {
		// Known once the dial-in's connections have their server's
		// settings: said before the phase's traffic.
		inflight := max(p.Inflight, 1) // the closed model: one per connection
		if c, ok := sc.StreamCap(); ok && c < inflight {
			ev := r.Log.Warn().Str("phase", p.Name).Int("stream_cap", c).Int("inflight", inflight)
			if c == 0 {
				ev.Msg("the server allows 0 concurrent streams per HTTP/2 connection (SETTINGS_MAX_CONCURRENT_STREAMS 0): nothing can be sent; the requests wait in the client until the drain runs out and are left over")
			} else {
				ev.Msgf("the server allows %d concurrent streams per HTTP/2 connection (SETTINGS_MAX_CONCURRENT_STREAMS): in-flight per connection is capped at %d, not the %d the phase asks; the requests past it wait in the client, as arrivals queued for a free slot (their wait is in the response time, not in the service time or the timeout; still waiting at the drain's end, they are left over)", c, c, inflight)
			}
		}
	}
	if din.opened >= CollectAfterDials {
		// The handshakes left garbage that the generator's high GOGC
		// would keep resident for the whole phase: collect it and give
		// the memory back now, before the measured time starts.
		debug.FreeOSMemory()
	}
	var ready map[string]float64
	fetches := 1 // the fetch after the phase
	if !at.IsZero() && r.Counters != nil && counterErr == nil && ctx.Err() == nil {
		// What the dial-in moved (connections accepted), for a merge of
		// segments to tell those counters apart (MergeResults).
		ready, _ = r.Counters(ctx)
		fetches++ // sent, so perhaps counted, even when it failed
	}
	if !at.IsZero() && opening && ctx.Err() == nil {
		if late := time.Since(at); late > 0 {
			return nil, fmt.Errorf("phase %q: %w %s: ready %s after it (counters fetched, %d connection(s) dialled)", p.Name, ErrStartMissed, at.UTC().Format(time.RFC3339Nano), late.Round(time.Millisecond), din.opened)
		}
	}

	hard, hardStop := context.WithCancelCause(ctx)
	defer hardStop(nil)
	ph := &phaseRun{
		r: r, p: p, repeat: rep, pool: pool, seq: seq, rec: rec, timeout: timeout, window: window,
		keepsDeadline: keepsDeadline(r.Driver),
		stop:          make(chan struct{}), drained: make(chan struct{}), hard: hard, hardStop: hardStop,
		dials: newDialLog(r.Log, p.Name, 0), live: make([]atomic.Bool, p.Connections),
		flow: flow,
	}
	for i := range min(first, p.Connections) {
		ph.live[i].Store(pool.get(i) != nil)
	}
	ph.closedEarly.Store(int64(din.closed))
	ev := r.Log.Info().Int("repeat", rep).Str("phase", p.Name).Str("model", string(p.Model)).
		Int("connections", p.Connections)
	switch why := EventLoopOf(r.Driver, p, r.NoEventLoop); {
	case why != "":
		ev = ev.Str("carried_by", "a goroutine per connection: "+why)
	case p.Model == Open:
		ev = ev.Str("carried_by", "an event loop")
	default:
		ev = ev.Str("carried_by", fmt.Sprintf("event loops (at most %d)", procs.Base()))
	}
	ev.Msg("phase start")

	// The barrier: every worker waits on release, so the measured phase
	// starts at one instant for all connections. Event loops take their
	// connections over before it (loopHooks.Start): the phase waits for
	// them to be ready.
	release := make(chan struct{})
	ph.release, ph.ready = release, make(chan struct{})
	loops := false
	var wg sync.WaitGroup
	switch p.Model {
	case Closed:
		if lp := ph.looper(); lp != nil {
			loops = true
			wg.Add(1)
			go func() { defer wg.Done(); ph.runLoops(lp) }()
			break
		}
		for k := 0; k < p.Connections; k++ {
			var at time.Duration
			for _, st := range p.Steps {
				if st.Connections > k {
					at = st.At
					break
				}
			}
			wg.Add(1)
			go func() { defer wg.Done(); <-release; ph.closedWorker(k, at) }()
		}
	case Open:
		lp := ph.looper()
		loops = lp != nil
		wg.Add(1)
		go func() {
			defer wg.Done()
			if lp != nil {
				ph.runOpenLoop(lp)
				return
			}
			<-release
			ph.runPacer()
		}()
	}
	if loops {
		<-ph.ready
		if !at.IsZero() && opening && ctx.Err() == nil {
			// The loops' take-over of the connections (about 3.5 ms a
			// thousand) came after the check above: a segment still
			// starts on its instant or not at all.
			if late := time.Since(at); late > 0 {
				ph.halt(ErrStartMissed)
				ph.start = time.Now()
				close(release)
				wg.Wait()
				return nil, fmt.Errorf("phase %q: %w %s: ready %s after it (counters fetched, %d connection(s) dialled and taken over by the event loop)", p.Name, ErrStartMissed, at.UTC().Format(time.RFC3339Nano), late.Round(time.Millisecond), din.opened)
			}
		}
	}
	var targetEnd func() (*TargetUsage, error)
	if r.TargetMeter != nil {
		targetEnd = r.TargetMeter()
	}
	strays, _ := r.Driver.(drivers.StrayCounter)
	var straysBefore drivers.Strays
	switch {
	case strays != nil && r.straysMark != nil:
		straysBefore = *r.straysMark
	case strays != nil:
		straysBefore = strays.Strays()
	}
	if !at.IsZero() {
		// Every segment releases its phase at the same instant.
		if wait := time.Until(at); wait > time.Second {
			r.Log.Info().Str("phase", p.Name).Str("at", at.UTC().Format(time.RFC3339Nano)).
				Str("in", wait.Round(time.Second).String()).Msg("ready; waiting for the phase's instant")
		}
		sl := r.sleeper()
		sl.Until(at, ctx.Done())
		sl.Close()
	}
	usage := sample()
	machine0, machineErr := procstat.TakeMachine()
	ph.start = time.Now()
	wall := ph.start
	if !at.IsZero() {
		// Released late (a wake-up on a busy machine, a long drain of
		// the phase before): the phase's clock is still the timetable's,
		// so its arrivals keep their instants, and those that came due
		// meanwhile are sent at once, late, each counted from its own
		// intended start (pace books them as the generator's lateness).
		ph.lag = max(ph.start.Sub(at), 0)
		ph.start = ph.start.Add(-ph.lag)
	}
	// The phase's time is up at its window: its duration, or for an open
	// phase bounded by count, the span of its arrivals. No new request
	// starts after it.
	var timer *time.Timer
	if p.Duration > 0 || (p.Model == Open && window > 0) {
		end := p.Duration
		if p.Model == Open {
			end = window
		}
		timer = time.AfterFunc(end-ph.lag, ph.endPhase)
	}
	close(release)

	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	var reported chan struct{} // closed when the progress reports stop
	if r.Progress != nil {
		total := p.Duration
		if p.Model == Open && window > 0 {
			total = window
		}
		reported = make(chan struct{})
		go func() { defer close(reported); ph.report(done, total) }()
	}
	select {
	case <-done:
		// An open phase's workers end after its last arrival; the phase
		// itself lasts until its window is over.
		if window > 0 && !ph.byCount.Load() {
			if !sleep(window-time.Since(ph.start), ctx.Done()) {
				ph.halt(context.Cause(ctx))
			}
		}
	case <-ctx.Done():
		// Interrupted: stop starting, cancel what is in flight, and wait
		// for the workers, which return promptly once cancelled.
		ph.halt(context.Cause(ctx))
		<-done
	}
	if timer != nil {
		timer.Stop()
	}
	if reported != nil {
		<-reported // no report after the phase's result
	}
	wallElapsed := time.Since(ph.start)
	// A phase with a window (see PhasePlan.Window) lasts exactly that: the
	// rates of the phase are per second of it, and requests that drained
	// in the grace period count in the phase in which they were intended.
	// A closed phase that reached its count first, or an interrupted one,
	// lasts until its last request ended.
	elapsed := wallElapsed
	interrupted := ctx.Err() != nil
	if window > 0 && !ph.byCount.Load() && (!interrupted || wallElapsed > window) {
		// An interruption during the drain came after the phase's own
		// time: its length is still its window.
		elapsed = window
	}
	cpu, gcMax := usage.since(wallElapsed)
	var machine *procstat.MachineUsage
	if m1, err := procstat.TakeMachine(); err == nil && machineErr == nil {
		u := procstat.MachineBetween(machine0, m1)
		machine = &u
	}
	if strays != nil {
		// What arrived unasked since the previous phase's count ended:
		// during this phase, its drain, or the fetches and dials before it.
		after := strays.Strays()
		r.straysMark = &after
		rec.AddLate(after.Late - straysBefore.Late)
		closes := map[string]int64{}
		for k, v := range after.Closes {
			closes[k] = v - straysBefore.Closes[k]
		}
		rec.AddStrays(after.UnknownID-straysBefore.UnknownID, after.DuplicateID-straysBefore.DuplicateID, closes)
	}
	var target *TargetUsage
	var targetErr string
	if targetEnd != nil {
		var err error
		if target, err = targetEnd(); err != nil {
			target, targetErr = nil, err.Error()
		}
	}

	pr := &PhaseResult{
		Repeat:                 rep,
		Phase:                  p,
		Start:                  wall,
		Wall:                   wallElapsed,
		Summary:                rec.Summary(elapsed),
		Steps:                  flow.results(elapsed),
		ConnectionsRequested:   p.Connections,
		ConnectionsEstablished: ph.established(),
		ConnectionsClosedEarly: int(ph.closedEarly.Load()),
		LatenessMax:            ph.lateness,
		LateArrivals:           ph.late,
		StepLatenessMax:        time.Duration(ph.stepLateness.Load()),
		LateSteps:              ph.stepsLate.Load(),
		ThinkWakeups:           ph.thinkWakeups.Load(),
		ClientCPU:              cpu,
		ClientCores:            runnerCores(),
		EventLoops:             ph.eventLoops,
		GCPauseMax:             gcMax,
		Machine:                machine,
		Interrupted:            interrupted,
		Target:                 target,
		TargetErr:              targetErr,
		ServerBefore:           before,
		ServerReady:            ready,
	}
	if !at.IsZero() {
		pr.StartLag = ph.lag
		pr.Timetabled = true
	}
	if sc, ok := r.Driver.(drivers.StreamCapper); ok {
		// Read again at the end: a server may lower its cap mid-phase.
		if c, ok := sc.StreamCap(); ok && c < max(p.Inflight, 1) {
			pr.StreamCap = &c
		}
	}
	pr.Metrics = MetricsOf(pr)
	if r.Counters != nil && !interrupted {
		after, err := r.Counters(ctx)
		switch {
		case counterErr != nil:
			pr.ServerErr = "before the phase: " + counterErr.Error()
		case err != nil:
			pr.ServerErr = "after the phase: " + err.Error()
		default:
			pr.ServerAfter = after
			pr.Fetches = fetches
			pr.Server, pr.ServerUnknown = serverDeltas(before, after)
		}
	}
	r.Log.Info().Int("repeat", rep).Str("phase", p.Name).Int64("requests", pr.Summary.Requests).
		Str("elapsed", elapsed.Round(time.Millisecond).String()).Bool("interrupted", interrupted).Msg("phase end")
	if n := pr.Summary.GoAwayRetries; n > 0 {
		// Not an error of theirs, but a second send each: said where the
		// console shows logs, and counted in the result (goaway_retries).
		r.Log.Warn().Int("repeat", rep).Str("phase", p.Name).Int64("goaway_retries", n).
			Msgf("%d request(s) were sent again on a fresh connection: an HTTP/2 GOAWAY said the server had not processed them (their response times run from their first send's intended start)", n)
	}
	return pr, nil
}

// exactCounter is 2⁵³: beyond it a float64 reading no longer holds every
// integer, so a delta of readings there may be off by more than 1.
const exactCounter = 1 << 53

// serverDeltas returns the target's counter deltas over a phase, after −
// before, and the counters whose delta cannot be known, with why:
//
//   - a counter that went backwards (the target restarted and counts
//     from 0 again, or the value is a level such as live sessions, not a
//     count): its delta would be negative or too small;
//   - a reading that is not a finite number (NaN, ±Inf) on either side;
//   - a reading beyond 2⁵³ in magnitude, where float64 is inexact;
//   - every counter of an after reading whose before reading held no
//     counter at all (an empty or failed scrape: nothing says they
//     started at 0).
//
// A counter missing from a before reading that held others counts from 0:
// Prometheus clients create a labelled series at its first event (the
// first 503), so its absence means none yet.
func serverDeltas(before, after map[string]float64) (deltas map[string]float64, unknown map[string]string) {
	deltas = map[string]float64{}
	mark := func(k, why string) {
		if unknown == nil {
			unknown = map[string]string{}
		}
		unknown[k] = why
	}
	for k, v := range after {
		b, had := before[k]
		switch {
		case len(before) == 0:
			mark(k, "the reading before the phase held no counter")
		case math.IsNaN(v) || math.IsInf(v, 0) || math.IsNaN(b) || math.IsInf(b, 0):
			mark(k, fmt.Sprintf("not a finite number (%g before, %g after)", b, v))
		case math.Abs(v) > exactCounter || math.Abs(b) > exactCounter:
			mark(k, fmt.Sprintf("beyond 2^53 (%g before, %g after): float readings are inexact there", b, v))
		case had && v < b:
			mark(k, fmt.Sprintf("went backwards from %g to %g (a restart, or a level rather than a count)", b, v))
		default:
			deltas[k] = v - b
		}
	}
	return deltas, unknown
}

// runPacer carries an open phase: its pacer and a worker goroutine per
// in-flight slot, until the pacer has ended and every worker with it.
func (ph *phaseRun) runPacer() {
	p := ph.p
	arrivals := make(chan time.Duration)
	var wg sync.WaitGroup
	for w := 0; w < p.Connections*p.Inflight; w++ {
		wg.Add(1)
		go func() { defer wg.Done(); ph.openWorker(w, w/p.Inflight, arrivals) }()
	}
	ph.pace(arrivals)
	wg.Wait()
}

// keepsDeadline reports whether d enforces Request.Deadline itself.
func keepsDeadline(d drivers.Driver) bool {
	_, ok := d.(drivers.DeadlineKeeper)
	return ok
}

// endPhase is called when the phase's time is up: no new arrival comes
// due and no closed-model request starts. Arrivals still waiting for a
// free slot may be sent for the drain's bound, the grace (the request
// timeout); then whatever is unsent is left over. A request sent by then
// ends by its own timeout; a last stop, one timeout and hardMargin after
// the drain's bound, cuts what a driver failed to end (left over too).
func (ph *phaseRun) endPhase() {
	ph.stopOnce.Do(func() {
		ph.stopAt.Store(max(1, int64(time.Since(ph.start)))) // not 0: set
		close(ph.stop)
		time.AfterFunc(ph.p.Grace, func() {
			close(ph.drained)
			time.AfterFunc(ph.timeout+hardMargin, func() { ph.hardStop(errPhaseEnd) })
		})
	})
}

// hardMargin is how long after the last request's own timeout the end of
// a phase cancels what is still in flight: a safety net, not a bound
// requests are expected to meet.
const hardMargin = time.Second

// halt stops the phase at once with cause.
func (ph *phaseRun) halt(cause error) {
	ph.stopOnce.Do(func() {
		ph.stopAt.Store(max(1, int64(time.Since(ph.start)))) // not 0: set
		close(ph.stop)
		close(ph.drained)
	})
	ph.hardStop(cause)
}

// stopped reports whether no new request may start: the phase's time is
// up, or it was cancelled. The run's context (Ctrl-C) cancels hard before
// runPhase gets to close stop; without the second case a closed worker
// would spin through instantly-cancelled requests until it does.
//
// Two non-blocking receives, not one select of both: a receive from an
// open channel returns at once without its lock, where a select locks
// both channels (2 % of a closed-model request's user CPU, issue 18).
func (ph *phaseRun) stopped() bool {
	select {
	case <-ph.stop:
		return true
	default:
	}
	select {
	case <-ph.hard.Done():
		return true
	default:
		return false
	}
}

// send performs one arrival on connection k and records it: one request,
// or with a flow driver one iteration of a flow (flow.go). intended is the
// arrival's scheduled offset (closed model: the send itself).
func (ph *phaseRun) send(shard, k int, intended time.Duration, closed bool) {
	seq := ph.nextSeq()
	lane := 0
	if !closed {
		// An open worker's shard is its index w = k·inflight + lane.
		lane = shard % max(ph.p.Inflight, 1)
	}
	if ph.flow == nil {
		out, sent, done := ph.do(k, drivers.Request{Seq: seq, Lane: lane})
		if closed {
			intended = sent
		}
		if out.Unsent {
			ph.notSent(ph.rec, shard, intended, out)
			return
		}
		ph.rec.Record(shard, &measure.Result{Seq: seq, Intended: intended, Sent: sent, Done: done, Outcome: out})
		return
	}
	var first time.Duration
	if closed {
		// The closed model's iteration starts with its first send.
		first = -1
	}
	// The mix follows the global iteration number (flowMix.pick), so
	// the segments of a scale-out run, merged, ran one generator's mix.
	ph.iterations.Add(1)
	defer ph.iterations.Add(-1)
	out, sent, done := ph.flow.iteration(shard, seq, intended, first, ph.think, func(r drivers.Request) (drivers.Outcome, time.Duration, time.Duration) {
		r.Lane = lane
		return ph.do(k, r)
	}, ph.notSent)
	if closed {
		intended = sent
	}
	if out.Unsent {
		// Its first step never left the client.
		ph.notSent(ph.rec, shard, intended, out)
		return
	}
	thinking := out.Class == drivers.Cancelled && out.Code == ""
	if thinking {
		// Cut short before a step came due, its user thinking: its bound
		// runs to the cut.
		out.Code = ph.cutCode()
		done = time.Since(ph.start)
	}
	ph.rec.Record(shard, &measure.Result{Seq: seq, Intended: intended, Sent: sent, Done: done, Outcome: out, Thinking: thinking})
}

// nextSeq numbers the phase's next request. Global across segments:
// segment K of N numbers its i-th request i·N + K + 1 (from 1, as one
// generator does).
func (ph *phaseRun) nextSeq() uint64 {
	local := ph.seq.Add(1) // this generator's own count, from 1
	return uint64(ph.r.Segment.Global(int64(local-1))) + 1
}

// notSent books on rec an arrival (intended at offset at) that a worker
// took but that never left the client: handed over as the phase was cut
// short, or a request the driver never wrote (drivers.Outcome.Unsent,
// e.g. waiting for an HTTP/2 stream under the server's cap). As an
// arrival still queued for a slot, it is cancelled before sending when
// the run was interrupted and left over otherwise (its response time at
// least now − at); never a request. Connections it dialled still count.
func (ph *phaseRun) notSent(rec *measure.Recorder, shard int, at time.Duration, out drivers.Outcome) {
	rec.AddConnectionsOpened(int64(out.Dialed))
	if ph.r.interrupted(ph.hard) {
		rec.AddCancelled(1)
		return
	}
	rec.LeftOver(shard, time.Since(ph.start)-at)
}

// do sends r on connection k and returns its outcome with its send and
// completion offsets from the phase start.
func (ph *phaseRun) do(k int, r drivers.Request) (out drivers.Outcome, sent, done time.Duration) {
	// The send is stamped before anything touches the wire (the dial
	// included), so no part of the request's time is hidden (B02 in
	// docs/design.md, "Field cases": a clock started after the write would
	// hide a slow send).
	// One monotonic clock reading: the instants below derive from the
	// phase's start, which carries its monotonic reading too.
	sent = time.Since(ph.start)
	now := ph.start.Add(sent)
	deadline := now.Add(ph.timeout)
	r.Deadline = deadline
	// A request a driver still holds unsent when the drain runs out is
	// left over, as an arrival queued for a slot (drivers.Outcome.Unsent).
	r.QueueEnd = ph.drained
	// The slot, like the sequence number, is global across segments.
	r.Slot = int(ph.r.Segment.Global(int64(k)))
	// A driver that keeps the deadline itself gets the phase's context
	// (cancellation only); the dial of an empty slot and other drivers
	// get one with the deadline.
	ctx := ph.hard
	c := ph.pool.get(k)
	if !ph.keepsDeadline || c == nil {
		dctx, cancel := context.WithDeadline(ph.hard, deadline)
		defer cancel()
		ctx = dctx
	}
	ok := c != nil
	if !ok {
		c, out, ok = ph.conn(ctx, k) // dial the empty slot
	}
	if ok {
		dial := out
		if ph.keepsDeadline {
			ctx = ph.hard
		}
		ph.inflight.Add(1)
		out = c.Do(ctx, r)
		ph.inflight.Add(-1)
		out.Dialed += dial.Dialed
		out.Connect += dial.Connect
	}
	done = time.Since(ph.start)
	if out.Sent.After(now) {
		// A multiplexing driver waited for a stream before it wrote
		// (drivers.Outcome.Sent): that wait is queueing, in the response
		// time from the intended start but not in the service time.
		sent = min(out.Sent.Sub(ph.start), done)
	}
	ph.cut(&out, deadline)
	return out, sent, done
}

// cut re-classes the outcome of a request (deadline its timeout's end)
// that the phase (its drain ran out) or the user (Ctrl-C) cut short:
// that is not the target's error. At the drain's end it is left over,
// its response time censored.
func (ph *phaseRun) cut(out *drivers.Outcome, deadline time.Time) {
	if out.Unsent || out.Responded || out.Class == drivers.OK || ph.hard.Err() == nil {
		return
	}
	out.Class, out.Code = drivers.Cancelled, ph.cutCode()
	if out.Code == drivers.CodePhaseEnd && !time.Now().Before(deadline) {
		// Its own timeout had run out first: a timeout, as the
		// driver would have said had it been quicker.
		out.Class, out.Code = drivers.Timeout, ""
	}
}

// cutCode is the code of a request the phase cut short: CodePhaseEnd
// when its drain ran out, "interrupted" for Ctrl-C.
func (ph *phaseRun) cutCode() string {
	if ph.hard.Err() == nil || errors.Is(context.Cause(ph.hard), errPhaseEnd) {
		// The drain's bound passed (the hard stop comes later).
		return drivers.CodePhaseEnd
	}
	return "interrupted"
}

// think waits until offset until from the phase start, the due instant
// of a flow's next step; false when the drain's bound passed (or Ctrl-C)
// before it: no step is sent after the drain, as no queued arrival is.
// An iteration under way when the phase's time is up goes on through the
// drain.
func (ph *phaseRun) think(until time.Duration, thinks bool) bool {
	if ph.isDrained() {
		return false
	}
	if !ph.r.thinkSleep(until-time.Since(ph.start), ph.drained) || ph.isDrained() {
		return false
	}
	if !thinks {
		return true // due at the previous step's completion: no wake-up
	}
	ph.thinkWakeups.Add(1)
	// The wake-up's delay past the due instant is inside the step's
	// response time (it counts from when it came due), and it is the
	// generator's: booked like a late arrival's.
	if late := time.Since(ph.start) - until; late > 0 {
		for {
			old := ph.stepLateness.Load()
			if int64(late) <= old || ph.stepLateness.CompareAndSwap(old, int64(late)) {
				break
			}
		}
		if late > LatenessLimit {
			ph.stepsLate.Add(1)
		}
	}
	return true
}

// closedWorker is one connection of the closed model: it sends its next
// request only after the previous response, plus think time. It starts at
// offset at (the stair of a ramp that adds it).
func (ph *phaseRun) closedWorker(k int, at time.Duration) {
	if at > 0 {
		if !sleep(at-time.Since(ph.start), ph.stop) {
			return
		}
		// A stair's connection is dialled when its stair comes, outside
		// any request's time.
		ok, failed, closed, live := ph.pool.dialSlot(ph.hard, ph.r.Driver, k, ph.timeout, ph.dials)
		ph.rec.AddConnectionsOpened(int64(ok))
		ph.rec.AddConnectFailures(int64(failed))
		ph.closedEarly.Add(int64(closed))
		ph.live[k].Store(live)
	}
	for !ph.stopped() {
		if n := ph.p.Requests; n > 0 && ph.claimed.Add(1) > n {
			ph.byCount.Store(true)
			return
		}
		ph.rec.AddArrivals(1)
		ph.send(k, k, 0, true)
		if ph.p.ThinkTime > 0 && !sleep(ph.p.ThinkTime, ph.stop) {
			return
		}
	}
}

// phaseWindow is the phase's own length in a repeat: PhasePlan.Window,
// except for an open phase of Poisson arrivals bounded by its count, whose
// n arrivals span their own draw, up to just after arrival n − 1 (the
// plan's Λ⁻¹(n) is only its expectation: a draw that runs later would
// otherwise lose its last arrivals at the window's end).
func phaseWindow(p *PhasePlan, repeat int) time.Duration {
	if p.whole != nil {
		// Every segment of a phase spans the whole phase's window.
		return phaseWindow(p.whole, repeat)
	}
	w := p.Window()
	if p.Model != Open || p.Arrivals != "poisson" || p.Requests <= 0 {
		return w
	}
	last := p.Schedule(repeat).At(p.Requests-1) + 1
	if p.Duration > 0 && last >= p.Duration {
		return p.Duration
	}
	return last
}

package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/runner-dev/runner/drivers"
	"github.com/runner-dev/runner/engine/measure"
	"github.com/runner-dev/runner/internal/procstat"
)

// ErrNoConnection means not a single connection of a phase could be
// established: the run cannot run (exit 3).
var ErrNoConnection = errors.New("no connection to the target could be established")

// errPhaseEnd is the cancellation cause of requests still open when a
// phase's end-of-phase grace runs out.
var errPhaseEnd = errors.New("phase ended: still in flight after the grace period")

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

	// straysMark is the driver's stray totals where the previous phase's
	// count ended (nil before the run's first phase): each phase counts
	// from there, so a stray arriving between two phases is not lost.
	straysMark *drivers.Strays
}

// Progress is a running phase's state, for a progress line.
type Progress struct {
	Repeat  int
	Phase   string
	Warmup  bool
	Elapsed time.Duration
	// Total is the phase's planned length (its duration or window); 0
	// when it is bounded by a request count only.
	Total time.Duration
	// Requests, OK and Errors so far; InFlight now.
	Requests, OK, Errors int64
	InFlight             int64
	// P99 is the response time's p99 so far; P99OK false before any.
	P99   time.Duration
	P99OK bool
}

// TargetUsage is the target process's resource use over a phase.
type TargetUsage struct {
	// CPU is the process's CPU time over the phase's wall time as a
	// fraction of the machine (1.0: every core busy).
	CPU float64 `json:"cpu"`
	// CPUMaxThread is its busiest thread's CPU time over the phase's wall
	// time as a fraction of one core (1.0: one core fully busy).
	CPUMaxThread float64 `json:"cpu_max_thread"`
	// RSS is its resident set size at the phase's end, in bytes.
	RSS int64 `json:"rss"`
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

// PhaseResult is what one (repeat, phase) measured.
type PhaseResult struct {
	// Repeat is 1-based.
	Repeat int `json:"repeat"`
	// Phase is the plan of the phase (name, index, model, warmup, …).
	Phase *PhasePlan `json:"phase"`
	// Start is the wall-clock instant the barrier released the phase.
	Start time.Time `json:"start"`
	// Summary holds every count and distribution of the phase.
	Summary *measure.Summary `json:"summary"`
	// Metrics are the headline figures derived from Summary.
	Metrics *Metrics `json:"metrics"`
	// Wall is the phase's wall-clock length including the end-of-phase
	// drain; Summary.Elapsed is the phase's own length (its duration when
	// bounded by time), the denominator of its rates.
	Wall time.Duration `json:"wall"`
	// ConnectionsRequested and ConnectionsEstablished compare the plan's
	// connections with those that were open when the phase started (for a
	// ramp, at its top stair).
	ConnectionsRequested   int `json:"connections_requested"`
	ConnectionsEstablished int `json:"connections_established"`
	// ConnectionsClosedEarly counts the connections the server accepted
	// and then closed or reset before the phase started (found by the
	// barrier's probe, drivers.Prober) whose one re-dial failed or was
	// closed too: they are not established (a failed re-dial is also a
	// connect failure).
	ConnectionsClosedEarly int `json:"connections_closed_early,omitempty"`
	// LatenessMax is how late the engine sent an arrival that was not
	// waiting for a connection (scheduler lateness); large values mean the
	// load generator fell behind its own schedule.
	LatenessMax time.Duration `json:"lateness_max"`
	// LateArrivals counts the arrivals the pacer dispatched more than
	// LatenessLimit after their intended start although no connection was
	// busy: the generator's own delay, not the target's.
	LateArrivals int64 `json:"late_arrivals"`
	// ClientCPU is this process's CPU time over the phase divided by its
	// wall-clock time: 1.0 is one core fully busy (getrusage user+system).
	ClientCPU float64 `json:"client_cpu"`
	// ClientCores is how many cores the runner could use while it measured
	// the phase (its CPU affinity, or GOMAXPROCS when lower): client.cpu
	// and the generator's saturation are over it, so that a result judged
	// again elsewhere (a saved report, a baseline) is judged as recorded.
	// 0 in reports saved before it was recorded (clientCores).
	ClientCores int `json:"client_cores,omitempty"`
	// GCPauseMax is the longest garbage-collector stop-the-world pause of
	// this process during the phase.
	GCPauseMax time.Duration `json:"gc_pause_max"`
	// Machine is the whole machine's CPU use over the phase, in cores
	// (/proc/stat); nil where it cannot be read. Busy minus ClientCPU and
	// the target's share is other processes' (busy-machine).
	Machine *procstat.MachineUsage `json:"machine_cpu,omitempty"`
	// Server holds the deltas of the target's counters over the phase; nil
	// when not fetched. ServerErr says why they are missing.
	Server    map[string]float64 `json:"server,omitempty"`
	ServerErr string             `json:"server_error,omitempty"`
	// Target is the target process's resource use over the phase; nil
	// when not measured (a target that was not spawned). TargetErr says
	// why a measurement failed.
	Target    *TargetUsage `json:"target,omitempty"`
	TargetErr string       `json:"target_error,omitempty"`
	// serverBefore and serverAfter are the counters fetched before and
	// after the phase.
	serverBefore, serverAfter map[string]float64
	// Interrupted is true when a signal stopped the phase early.
	Interrupted bool `json:"interrupted,omitempty"`
}

// Result is a whole run: every (repeat, phase) that ran, in order.
type Result struct {
	Phases []*PhaseResult `json:"phases"`
	// Interrupted is true when the run was stopped by its context.
	Interrupted bool `json:"interrupted,omitempty"`
	// ServerAtStart are the target's counters fetched before the run's
	// first phase (reconcile.fetch); nil when not fetched. A freshly
	// spawned target starts at zero (StaleCounters).
	ServerAtStart map[string]float64 `json:"server_at_start,omitempty"`
}

// Run executes every repeat of the plan. It returns the phases measured
// so far together with an error when the run could not complete (no
// connection at all, or fetching counters failed fatally). When ctx is
// cancelled (Ctrl-C) the current phase stops at once, its requests in
// flight end as cancelled, and Run returns with Result.Interrupted set and
// a nil error: an interruption is a result, not a failure.
func (r *Runner) Run(ctx context.Context, pl *Plan) (*Result, error) {
	res := &Result{}
	r.straysMark = nil
	var seq atomic.Uint64
	for rep := 1; rep <= pl.Repeats; rep++ {
		pool := &pool{}
		for i := range pl.Phases {
			p := &pl.Phases[i]
			pr, err := r.runPhase(ctx, rep, p, pool, &seq)
			if pr != nil && rep == 1 && i == 0 {
				res.ServerAtStart = pr.serverBefore
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

// pool holds a repeat's connections; phases of a repeat reuse them.
type pool struct {
	mu    sync.Mutex
	conns []drivers.Conn // nil where a dial failed
}

func (p *pool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		if c != nil {
			c.Close()
		}
	}
	p.conns = nil
}

// reserve makes room for n slots without dialling them.
func (p *pool) reserve(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.conns) < n {
		p.conns = append(p.conns, nil)
	}
}

func (p *pool) get(i int) drivers.Conn {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.conns[i]
}

func (p *pool) set(i int, c drivers.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.conns[i] = c
}

func (p *pool) established(n int) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := 0
	for _, c := range p.conns[:min(n, len(p.conns))] {
		if c != nil {
			k++
		}
	}
	return k
}

// established counts the slots that held a live connection when they
// started: at the barrier, or at their stair.
func (ph *phaseRun) established() int {
	n := 0
	for i := range ph.live {
		if ph.live[i].Load() {
			n++
		}
	}
	return n
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
	stopAt   atomic.Int64 // offset at which stop happened, ns
	hard     context.Context
	hardStop context.CancelCauseFunc

	claimed atomic.Int64 // closed model: requests claimed against the count bound
	byCount atomic.Bool  // a closed phase ended because its request count was reached

	inflight atomic.Int64 // requests in Do now

	dials       *dialLog      // the phase's own dials: stairs and empty slots
	live        []atomic.Bool // slot k held a live connection at its start (barrier or stair)
	closedEarly atomic.Int64  // slots the server closed before their start (ConnectionsClosedEarly)

	lateness time.Duration // max scheduler lateness; written by the pacer only
	late     int64         // arrivals dispatched later than LatenessLimit; pacer only
	busy     atomic.Int64  // open model, queue mode: arrivals handed to a worker and not yet done
}

const shards = 16

// CollectAfterDials is the number of connections a phase must open
// before it starts for the runner to collect the garbage of their
// handshakes first (debug.FreeOSMemory, outside the measured time).
// 10,000 idle WebSocket connections held 42 KiB each without it.
const CollectAfterDials = 1000

func (r *Runner) runPhase(ctx context.Context, rep int, p *PhasePlan, pool *pool, seq *atomic.Uint64) (*PhaseResult, error) {
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	conc := r.DialConcurrency
	if conc <= 0 {
		conc = 8
	}
	var before map[string]float64
	var counterErr error
	if r.Counters != nil {
		before, counterErr = r.Counters(ctx)
	}

	window := phaseWindow(p, rep)
	rec := measure.NewRecorder(shards, measure.Options{ExpectedInterval: p.ExpectedInterval, Duration: p.Duration + p.Grace, Window: window, Redact: r.Redact})
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
	if pool.established(first) == 0 && ctx.Err() == nil {
		why := ""
		if din.closed > 0 {
			why = fmt.Sprintf("; %d accepted and then closed by the server", din.closed)
		}
		return nil, fmt.Errorf("phase %q: %w: %d dial(s) failed, the first with: %v%s", p.Name, ErrNoConnection, din.failed, din.first, why)
	}
	if din.opened >= CollectAfterDials {
		// The handshakes left garbage that the generator's high GOGC
		// would keep resident for the whole phase: collect it and give
		// the memory back now, before the measured time starts.
		debug.FreeOSMemory()
	}

	hard, hardStop := context.WithCancelCause(ctx)
	defer hardStop(nil)
	ph := &phaseRun{
		r: r, p: p, repeat: rep, pool: pool, seq: seq, rec: rec, timeout: timeout, window: window,
		keepsDeadline: keepsDeadline(r.Driver),
		stop:          make(chan struct{}), drained: make(chan struct{}), hard: hard, hardStop: hardStop,
		dials: newDialLog(r.Log, p.Name, 0), live: make([]atomic.Bool, p.Connections),
	}
	for i := range min(first, p.Connections) {
		ph.live[i].Store(pool.get(i) != nil)
	}
	ph.closedEarly.Store(int64(din.closed))
	r.Log.Info().Int("repeat", rep).Str("phase", p.Name).Str("model", string(p.Model)).
		Int("connections", p.Connections).Msg("phase start")

	// The barrier: every worker waits on release, so the measured phase
	// starts at one instant for all connections.
	release := make(chan struct{})
	var wg sync.WaitGroup
	switch p.Model {
	case Closed:
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
		arrivals := make(chan time.Duration)
		for w := 0; w < p.Connections*p.Inflight; w++ {
			wg.Add(1)
			go func() { defer wg.Done(); <-release; ph.openWorker(w, w/p.Inflight, arrivals) }()
		}
		wg.Add(1)
		go func() { defer wg.Done(); <-release; ph.pace(arrivals) }()
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
	usage := sample()
	machine0, machineErr := procstat.TakeMachine()
	ph.start = time.Now()
	wall := time.Now()
	// The phase's time is up at its window: its duration, or for an open
	// phase bounded by count, the span of its arrivals. No new request
	// starts after it.
	var timer *time.Timer
	if p.Duration > 0 || (p.Model == Open && window > 0) {
		end := p.Duration
		if p.Model == Open {
			end = window
		}
		timer = time.AfterFunc(end, ph.endPhase)
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
		ConnectionsRequested:   p.Connections,
		ConnectionsEstablished: ph.established(),
		ConnectionsClosedEarly: int(ph.closedEarly.Load()),
		LatenessMax:            ph.lateness,
		LateArrivals:           ph.late,
		ClientCPU:              cpu,
		ClientCores:            runnerCores(),
		GCPauseMax:             gcMax,
		Machine:                machine,
		Interrupted:            interrupted,
		Target:                 target,
		TargetErr:              targetErr,
		serverBefore:           before,
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
			pr.serverAfter = after
			pr.Server = map[string]float64{}
			for k, v := range after {
				pr.Server[k] = v - before[k]
			}
		}
	}
	r.Log.Info().Int("repeat", rep).Str("phase", p.Name).Int64("requests", pr.Summary.Requests).
		Str("elapsed", elapsed.Round(time.Millisecond).String()).Bool("interrupted", interrupted).Msg("phase end")
	return pr, nil
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
				P99: l.P99, P99OK: l.P99OK,
			})
		}
	}
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
		ph.stopAt.Store(int64(time.Since(ph.start)))
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
		ph.stopAt.Store(int64(time.Since(ph.start)))
		close(ph.stop)
		close(ph.drained)
	})
	ph.hardStop(cause)
}

// stopped reports whether no new request may start: the phase's time is
// up, or it was cancelled. The run's context (Ctrl-C) cancels hard before
// runPhase gets to close stop; without the second case a closed worker
// would spin through instantly-cancelled requests until it does.
func (ph *phaseRun) stopped() bool {
	select {
	case <-ph.stop:
		return true
	case <-ph.hard.Done():
		return true
	default:
		return false
	}
}

// conn returns connection k, dialling it if its slot is empty. A failed
// dial is returned as the outcome of the request that needed it.
func (ph *phaseRun) conn(ctx context.Context, k int) (drivers.Conn, drivers.Outcome, bool) {
	if c := ph.pool.get(k); c != nil {
		return c, drivers.Outcome{}, true
	}
	t0 := time.Now()
	c, err := ph.r.Driver.Dial(ctx)
	if err != nil {
		cl, code := drivers.Classify(err)
		if cl == drivers.Timeout || cl == drivers.Cancelled {
			// A dial that ran out of time is still a failure to connect,
			// unless the phase itself cancelled it.
			if ph.hard.Err() == nil {
				cl = drivers.Connect
			}
		}
		if ph.hard.Err() == nil {
			ph.dials.failure(err, 1, "")
		}
		return nil, drivers.Outcome{Class: cl, Code: code, Err: err, Connect: time.Since(t0)}, false
	}
	ph.pool.set(k, c)
	return c, drivers.Outcome{Dialed: 1, Connect: time.Since(t0)}, true
}

// send performs one request on connection k and records it. intended is
// the arrival's scheduled offset (closed model: the send itself).
func (ph *phaseRun) send(shard, k int, intended time.Duration, closed bool) {
	seq := ph.seq.Add(1)
	// The send is stamped before anything touches the wire (the dial
	// included), so no part of the request's time is hidden (B02 in
	// docs/design.md, "Field cases": a clock started after the write would
	// hide a slow send).
	now := time.Now()
	sent := now.Sub(ph.start)
	if closed {
		intended = sent
	}
	deadline := now.Add(ph.timeout)
	// A driver that keeps the deadline itself gets the phase's context
	// (cancellation only); the dial of an empty slot and other drivers
	// get one with the deadline.
	ctx := ph.hard
	if !ph.keepsDeadline || ph.pool.get(k) == nil {
		c, cancel := context.WithDeadline(ph.hard, deadline)
		defer cancel()
		ctx = c
	}
	c, out, ok := ph.conn(ctx, k)
	if ok {
		dial := out
		if ph.keepsDeadline {
			ctx = ph.hard
		}
		ph.inflight.Add(1)
		out = c.Do(ctx, drivers.Request{Seq: seq, Deadline: deadline})
		ph.inflight.Add(-1)
		out.Dialed += dial.Dialed
		out.Connect += dial.Connect
	}
	done := time.Since(ph.start)
	if !out.Responded && out.Class != drivers.OK && ph.hard.Err() != nil {
		// The phase (its drain ran out) or the user (Ctrl-C) cut this
		// request short: that is not the target's error. At the drain's
		// end it is left over, its response time censored.
		out.Class = drivers.Cancelled
		out.Code = "interrupted"
		if errors.Is(context.Cause(ph.hard), errPhaseEnd) {
			out.Code = drivers.CodePhaseEnd
			if !time.Now().Before(deadline) {
				// Its own timeout had run out first: a timeout, as the
				// driver would have said had it been quicker.
				out.Class, out.Code = drivers.Timeout, ""
			}
		}
	}
	ph.rec.Record(shard, &measure.Result{Seq: seq, Intended: intended, Sent: sent, Done: done, Outcome: out})
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

// pace is the open model's clock: it dispatches every arrival at its
// intended start, computed from the schedule (never from the previous
// dispatch, so a late dispatch cannot shift the schedule), to whichever
// in-flight slot is free. In queue mode it waits for a free slot, and the
// arrival's response time keeps counting from its intended start; in drop
// mode an arrival that finds no free slot at that instant is dropped.
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
	for i := int64(0); ; i++ {
		if ph.p.Requests > 0 && i >= ph.p.Requests {
			return
		}
		at := sched.At(i)
		if ph.p.Duration > 0 && at >= ph.p.Duration {
			return
		}
		// In drop mode the pacer never waits for a slot, so any delay is
		// the generator's; in queue mode only for arrivals it reached early.
		early := ph.p.Drop || at > time.Since(ph.start)
		if !sl.Until(ph.start.Add(at), ph.hard.Done()) {
			return // halted before the arrival was due: it never happened
		}
		late := time.Duration(0)
		if early {
			// Lateness of our own clock: the arrival was not waiting for
			// a slot, so any delay here is the generator's.
			late = time.Since(ph.start) - at
			ph.lateness = max(ph.lateness, late)
			if late > LatenessLimit {
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
			select {
			case out <- at:
				ph.busy.Add(1)
			default:
				// Every slot busy at the intended start. After a late
				// dispatch the slots met a burst of the generator's making.
				ph.rec.AddDropped(1)
				if late > LatenessLimit {
					ph.rec.AddDroppedLate(1)
				}
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

// phaseWindow is the phase's own length in a repeat: PhasePlan.Window,
// except for an open phase of Poisson arrivals bounded by its count, whose
// n arrivals span their own draw, up to just after arrival n − 1 (the
// plan's Λ⁻¹(n) is only its expectation: a draw that runs later would
// otherwise lose its last arrivals at the window's end).
func phaseWindow(p *PhasePlan, repeat int) time.Duration {
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
				if ph.r.interrupted(ph.hard) {
					ph.rec.AddCancelled(1)
				} else {
					ph.rec.LeftOver(w, time.Since(ph.start)-at)
				}
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

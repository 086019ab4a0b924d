package engine

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/runner-dev/runner/drivers"
)

// A phase's dial-in fills its connection slots before the barrier: every
// empty slot is dialled, at most Runner.DialConcurrency at a time, each
// dial within the request timeout and the whole dial-in within its window
// (Runner.DialWindow); dials not begun when the window ends are not made
// and count as connect failures. Then every connection is probed
// (drivers.Prober) and one the server accepted and then closed or reset
// is re-dialled once; if that one is dead too, its slot stays empty: it is
// not established. Failures are logged as they happen, the first of each
// kind at once and then a summary line at most every DialReportEvery.

// DefaultDialWindow bounds a phase's dial-in when Runner.DialWindow is 0
// and the request timeout is shorter: a target that drops every SYN then
// costs 10 s, not connections/8 timeouts.
const DefaultDialWindow = 10 * time.Second

// ProbeSettle is how long the engine waits after a dial-in that opened
// connections before it probes them: a server that accepts and then
// resets does so a scheduling delay later, and the probe sees only what
// already arrived. It is spent before the phase's clock starts.
const ProbeSettle = 50 * time.Millisecond

// DialReportEvery is the least time between two summary lines of failed
// dials, and how often a dial-in still under way says how far it is.
const DialReportEvery = 3 * time.Second

// dialLog counts a phase's dials and logs their failures, rate-limited.
// Its methods are safe for concurrent use.
type dialLog struct {
	log     zerolog.Logger // with the phase and the stage
	planned int            // dials the dial-in means to make; 0 during the phase

	mu       sync.Mutex
	ok       int            // dials that succeeded
	failed   int            // dials that failed or were not made
	kinds    map[string]int // failed by kind ("connect: ECONNREFUSED")
	dead     int            // connections found closed by the server
	said     int            // failed + dead at the last summary line
	lastLine time.Time
}

// newDialLog counts the dials of a phase's dial-in (planned > 0 of them)
// or, with planned 0, those made while it runs (stage "phase").
func newDialLog(log zerolog.Logger, phase string, planned int) *dialLog {
	stage := "dial-in"
	if planned == 0 {
		stage = "phase"
	}
	return &dialLog{log: log.With().Str("phase", phase).Str("stage", stage).Logger(), planned: planned, kinds: map[string]int{}}
}

// dialKind names a failed dial's kind: its class and code.
func dialKind(err error) string {
	cl, code := drivers.Classify(err)
	switch {
	case cl == drivers.Cancelled:
		return string(drivers.Cancelled)
	case cl == drivers.Timeout || errors.Is(err, context.DeadlineExceeded):
		return string(drivers.Connect) + ": " + drivers.CodeConnectTimeout
	case code == "":
		return string(cl)
	}
	return string(cl) + ": " + code
}

// success books a dial that succeeded.
func (l *dialLog) success() {
	l.mu.Lock()
	l.ok++
	l.mu.Unlock()
}

// failure books n dials that failed with err (or were not made, kind
// given): the first of its kind is logged at once, the others in the
// summary lines. A cancelled dial (the run was interrupted) is counted
// and not logged.
func (l *dialLog) failure(err error, n int, kind string) {
	if kind == "" {
		kind = dialKind(err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.failed += n
	l.kinds[kind] += n
	switch {
	case kind == string(drivers.Cancelled):
	case l.kinds[kind] == n:
		l.lastLine = time.Now()
		l.log.Warn().Str("kind", kind).AnErr("error", err).Msgf("dial failed: %s", kind)
	default:
		l.summaryAfter(DialReportEvery)
	}
}

// closed books a connection found closed by the server before the phase
// started (its probe failed); the first is logged at once.
func (l *dialLog) closed(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.dead++
	if l.dead == 1 {
		l.lastLine = time.Now()
		l.log.Warn().AnErr("error", err).Msg("a connection was accepted and then closed by the server before the phase started")
		return
	}
	l.summaryAfter(DialReportEvery)
}

// summaryAfter logs a summary line when something new failed and the
// last line is at least every old. l.mu is held.
func (l *dialLog) summaryAfter(every time.Duration) {
	if l.failed+l.dead == l.said || time.Since(l.lastLine) < every {
		return
	}
	l.said, l.lastLine = l.failed+l.dead, time.Now()
	of := l.ok + l.failed
	if l.planned > 0 {
		of = l.planned
	}
	msg := fmt.Sprintf("%d of %d dials failed so far", l.failed, of)
	if l.failed > 0 {
		msg += ": " + l.kindsText()
	}
	if l.dead > 0 {
		msg += fmt.Sprintf("; %d connection(s) accepted and then closed by the server", l.dead)
	}
	l.log.Warn().Int("ok", l.ok).Int("failed", l.failed).Int("closed_by_server", l.dead).Msg(msg)
}

// kindsText lists the failed kinds, most frequent first, with their
// counts when there is more than one. l.mu is held.
func (l *dialLog) kindsText() string {
	ks := make([]string, 0, len(l.kinds))
	for k := range l.kinds {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool {
		if l.kinds[ks[i]] != l.kinds[ks[j]] {
			return l.kinds[ks[i]] > l.kinds[ks[j]]
		}
		return ks[i] < ks[j]
	})
	if len(ks) == 1 {
		return ks[0]
	}
	for i, k := range ks {
		ks[i] = fmt.Sprintf("%s (%d)", k, l.kinds[k])
	}
	return strings.Join(ks, ", ")
}

// watch says every DialReportEvery how far a dial-in is, until stop
// closes: a dial-in waiting on dials that hang is never silent.
func (l *dialLog) watch(stop <-chan struct{}) {
	t := time.NewTicker(DialReportEvery)
	defer t.Stop()
	start := time.Now()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			l.mu.Lock()
			pending := l.planned - l.ok - l.failed
			l.lastLine = time.Now()
			l.log.Warn().Int("ok", l.ok).Int("failed", l.failed).Int("dialling", pending).
				Msgf("dial-in after %s: %d of %d connections established, %d failed, %d still dialling", time.Since(start).Round(time.Second), l.ok, l.planned, l.failed, pending)
			l.mu.Unlock()
		}
	}
}

// dialed is what a dial-in did.
type dialed struct {
	opened int   // dials that succeeded, dead connections included
	failed int   // dials that failed, and those not made in the window
	closed int   // slots left empty after the server closed what it accepted for them
	first  error // the first failed dial's error
}

// dialOne dials one connection within timeout.
func dialOne(ctx context.Context, d drivers.Driver, timeout time.Duration) (drivers.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return d.Dial(ctx)
}

// probe returns nil when c is usable as far as it can tell
// (drivers.Prober), and how it ended otherwise.
func probe(c drivers.Conn) error {
	if p, ok := c.(drivers.Prober); ok {
		return p.Alive()
	}
	return nil
}

// dialIn fills the first n slots of the pool for a phase (see the
// comment at the top of this file): it dials the empty ones within
// window, probes them all, and re-dials the dead ones once.
func (p *pool) dialIn(ctx context.Context, d drivers.Driver, n, conc int, timeout, window time.Duration, dl *dialLog) dialed {
	wctx, cancel := context.WithTimeout(ctx, window)
	defer cancel()
	stop, watched := make(chan struct{}), make(chan struct{})
	go func() { defer close(watched); dl.watch(stop) }()
	defer func() { close(stop); <-watched }()

	var res dialed
	p.dialSlots(wctx, d, p.slots(n, false), conc, timeout, window, dl, &res)
	all := p.slots(n, true)
	dead := p.probeSlots(ctx, all, res.opened > 0, dl)
	if len(dead) > 0 && wctx.Err() == nil {
		before := res.opened
		p.dialSlots(wctx, d, dead, conc, timeout, window, dl, &res)
		p.probeSlots(ctx, dead, res.opened > before, dl)
	}
	// A slot whose re-dial failed or was closed too stays empty: what the
	// server accepted for it, it closed.
	for _, i := range dead {
		if p.get(i) == nil {
			res.closed++
		}
	}
	dl.mu.Lock()
	dl.summaryAfter(0)
	dl.mu.Unlock()
	return res
}

// slots lists the indices among the first n whose slot is filled (full)
// or empty (!full), making room for n.
func (p *pool) slots(n int, full bool) []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.conns) < n {
		p.conns = append(p.conns, nil)
	}
	var out []int
	for i, c := range p.conns[:n] {
		if (c != nil) == full {
			out = append(out, i)
		}
	}
	return out
}

// dialSlots dials the given empty slots, at most conc at a time, each
// within timeout, and books them in res. When ctx ends (the window ran
// out) the dials under way end with it and those not begun are not made:
// they count as failed.
func (p *pool) dialSlots(ctx context.Context, d drivers.Driver, slots []int, conc int, timeout, window time.Duration, dl *dialLog, res *dialed) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	sem := make(chan struct{}, conc)
	for j, i := range slots {
		if !acquire(ctx, sem) {
			left := len(slots) - j
			mu.Lock()
			res.failed += left
			if res.first == nil {
				res.first = context.Cause(ctx)
			}
			mu.Unlock()
			kind := string(drivers.Cancelled)
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				kind = fmt.Sprintf("not dialled: the dial-in's %s ran out", window)
			}
			dl.failure(ctx.Err(), left, kind)
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			c, err := dialOne(ctx, d, timeout)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				res.failed++
				if res.first == nil {
					res.first = err
				}
				dl.failure(err, 1, "")
				return
			}
			res.opened++
			dl.success()
			p.set(i, c)
		}()
	}
	wg.Wait()
}

// acquire takes a place in sem, or reports false when ctx ends first.
func acquire(ctx context.Context, sem chan struct{}) bool {
	select {
	case sem <- struct{}{}:
		if ctx.Err() != nil {
			<-sem
			return false
		}
		return true
	case <-ctx.Done():
		return false
	}
}

// probeSlots probes the connections of the given slots, after
// ProbeSettle when settle is set and one of them can be probed; a dead
// one is closed and its slot emptied. It returns the slots emptied. An
// interrupted wait probes nothing.
func (p *pool) probeSlots(ctx context.Context, slots []int, settle bool, dl *dialLog) []int {
	var probed []int
	for _, i := range slots {
		if _, ok := p.get(i).(drivers.Prober); ok {
			probed = append(probed, i)
		}
	}
	if len(probed) == 0 || (settle && !sleep(ProbeSettle, ctx.Done())) {
		return nil
	}
	var dead []int
	for _, i := range probed {
		c := p.get(i)
		if err := probe(c); err != nil {
			c.Close()
			p.set(i, nil)
			dl.closed(err)
			dead = append(dead, i)
		}
	}
	return dead
}

// dialSlot fills slot i for a ramp's stair by the dial-in's rules, but
// without the settle (the stair's load starts now): a connection already
// there is probed; an empty or dead slot is dialled within timeout, the
// new connection probed and, when dead, re-dialled once. It reports the
// dials that succeeded and failed, whether the slot ends empty after the
// server closed a connection it accepted for it (closed; its re-dial
// failed or was closed too), and whether it holds a live connection
// (live).
func (p *pool) dialSlot(ctx context.Context, d drivers.Driver, i int, timeout time.Duration, dl *dialLog) (opened, failed, closed int, live bool) {
	tries, wasDead := 2, false
	if c := p.get(i); c != nil {
		err := probe(c)
		if err == nil {
			return 0, 0, 0, true
		}
		c.Close()
		p.set(i, nil)
		dl.closed(err)
		tries, wasDead = 1, true // the next dial is its re-dial
	}
	for try := 0; try < tries; try++ {
		c, err := dialOne(ctx, d, timeout)
		if err != nil {
			dl.failure(err, 1, "")
			if wasDead {
				closed = 1
			}
			return opened, 1, closed, false
		}
		opened++
		dl.success()
		if err := probe(c); err != nil {
			c.Close()
			dl.closed(err)
			wasDead = true
			continue
		}
		p.set(i, c)
		return opened, 0, 0, true
	}
	return opened, 0, 1, false
}

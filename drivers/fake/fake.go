// Package fake stands in for the drivers stage in engine tests: an in-memory
// driver whose "target" takes a chosen service time per request, in the
// caller's clock, so engine tests run under testing/synctest with fake time
// and exact counts.
package fake

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/runner-dev/runner/drivers"
)

// Driver is a fake target. Its zero value answers every request OK at once.
// Its methods are safe for concurrent use.
type Driver struct {
	// Service returns the service time of request seq; nil means 0.
	Service func(seq uint64) time.Duration
	// Fail, when non-nil and returning a non-OK class, ends request seq
	// with that class and code after its service time.
	Fail func(seq uint64) (drivers.Class, string)
	// Serial makes the target a single FIFO worker: requests queue and are
	// served one at a time, each taking its service time.
	Serial bool
	// DialFail, when non-nil and returning an error, fails dial number n (1-based).
	DialFail func(n int64) error
	// DialHang, when non-nil and true, makes dial number n (1-based) wait
	// until its context ends, as a dial to a port that drops SYNs does,
	// and fail with the context's error.
	DialHang func(n int64) bool
	// Dead, when non-nil, makes the connections implement drivers.Prober;
	// when true, the connection of dial number n is one the server
	// accepted and then closed at once: its Alive reports so and its
	// requests end as Reset after their service time.
	Dead func(n int64) bool
	// Inflight is the MaxInflight the driver reports; 0 means 1.
	Inflight int
	// StepService, when non-nil, returns the service time of a request
	// by all of it (a flow step: r.Flow, r.Step, r.Seq) instead of
	// Service.
	StepService func(r drivers.Request) time.Duration
	// StepFail, when non-nil, replaces Fail with a function of the whole
	// request.
	StepFail func(r drivers.Request) (drivers.Class, string)
	// Capture, when non-nil, is called with each request before it is
	// answered, as a flow step would read and write r.Vars.
	Capture func(r drivers.Request)

	dials    atomic.Int64
	requests atomic.Int64
	once     sync.Once
	worker   chan struct{} // the single worker of a Serial target
	active   atomic.Int64
	peak     atomic.Int64
}

// ErrRefused is the dial error DialFail helpers can return.
var ErrRefused = &dialError{syscall.ECONNREFUSED}

type dialError struct{ errno syscall.Errno }

func (e *dialError) Error() string { return "dial: " + e.errno.Error() }
func (e *dialError) Unwrap() error { return e.errno }

// Dials is the number of Dial calls so far.
func (d *Driver) Dials() int64 { return d.dials.Load() }

// Requests is the number of Do calls that reached the target.
func (d *Driver) Requests() int64 { return d.requests.Load() }

// PeakInflight is the most requests the target held at once.
func (d *Driver) PeakInflight() int64 { return d.peak.Load() }

// MaxInflight implements drivers.Inflighter.
func (d *Driver) MaxInflight() int { return max(d.Inflight, 1) }

// Dial implements drivers.Driver.
func (d *Driver) Dial(ctx context.Context) (drivers.Conn, error) {
	n := d.dials.Add(1)
	if d.DialFail != nil {
		if err := d.DialFail(n); err != nil {
			return nil, err
		}
	}
	if d.DialHang != nil && d.DialHang(n) {
		<-ctx.Done()
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: ctx.Err()}
	}
	c := &conn{d: d}
	if d.Dead == nil {
		return c, nil
	}
	c.dead = d.Dead(n)
	return &probed{c}, nil
}

// probed is a conn that implements drivers.Prober: the connections of a
// Driver with Dead set. The others do not, so the engine does not wait
// to probe them (engine.ProbeSettle).
type probed struct{ *conn }

type conn struct {
	d      *Driver
	dead   bool // accepted, then closed by the "server"
	closed atomic.Bool
}

// errDead is how a Dead connection ended.
var errDead = &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}

func (c *conn) Close() error { c.closed.Store(true); return nil }

// Alive implements drivers.Prober.
func (c *probed) Alive() error {
	switch {
	case c.closed.Load():
		return errors.New("fake: connection closed")
	case c.dead:
		return errDead
	}
	return nil
}

func (c *conn) Do(ctx context.Context, r drivers.Request) drivers.Outcome {
	d := c.d
	if c.closed.Load() {
		return drivers.Outcome{Class: drivers.EOF, Err: errors.New("fake: connection closed")}
	}
	d.requests.Add(1)
	a := d.active.Add(1)
	defer d.active.Add(-1)
	for {
		p := d.peak.Load()
		if a <= p || d.peak.CompareAndSwap(p, a) {
			break
		}
	}
	var s time.Duration
	switch {
	case d.StepService != nil:
		s = d.StepService(r)
	case d.Service != nil:
		s = d.Service(r.Seq)
	}
	if d.Capture != nil {
		d.Capture(r)
	}
	if d.Serial {
		// A channel, not a mutex: blocked senders queue in FIFO order, and
		// testing/synctest counts a channel wait as durably blocked, so
		// fake time advances while requests queue.
		d.once.Do(func() { d.worker = make(chan struct{}, 1) })
		select {
		case d.worker <- struct{}{}:
		case <-ctx.Done():
			return ctxOutcome(ctx)
		}
		defer func() { <-d.worker }()
	}
	if s > 0 {
		t := time.NewTimer(s)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctxOutcome(ctx)
		}
	}
	if c.dead {
		return drivers.Outcome{Class: drivers.Reset, Code: "ECONNRESET", Err: errDead}
	}
	fail := d.Fail
	if d.StepFail != nil {
		fail = func(uint64) (drivers.Class, string) { return d.StepFail(r) }
	}
	if fail != nil {
		if cl, code := fail(r.Seq); cl != "" && cl != drivers.OK {
			return drivers.Outcome{Class: cl, Code: code, Responded: cl == drivers.Status || cl == drivers.RuleFailed, Err: errors.New("fake: " + string(cl))}
		}
	}
	return drivers.Outcome{Class: drivers.OK, Responded: true, BytesOut: 100, BytesIn: 100}
}

func ctxOutcome(ctx context.Context) drivers.Outcome {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return drivers.Outcome{Class: drivers.Timeout, Err: ctx.Err()}
	}
	return drivers.Outcome{Class: drivers.Cancelled, Err: context.Cause(ctx)}
}

// Flows is a fake target whose arrivals run flows (drivers.FlowDriver):
// Driver answers each step, List is the mix.
type Flows struct {
	*Driver
	// List is what Flows returns.
	List []drivers.Flow
}

// Flows returns f.List.
func (f *Flows) Flows() []drivers.Flow { return f.List }

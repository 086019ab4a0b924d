package engine

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/runner-dev/runner/drivers"
	"github.com/runner-dev/runner/schema"
)

// streamQueue is a fake multiplexing driver whose server allows cap
// requests at once per connection (as HTTP/2's
// SETTINGS_MAX_CONCURRENT_STREAMS): a request past it waits in the
// client, without a timeout, until a stream frees, the drain runs out
// (Request.QueueEnd) or ctx ends, and then was never sent
// (Outcome.Unsent). served counts what the target saw.
type streamQueue struct {
	cap     int
	service time.Duration
	served  atomic.Int64
}

func (d *streamQueue) MaxInflight() int { return 64 }
func (d *streamQueue) KeepsDeadline()   {}

func (d *streamQueue) Dial(context.Context) (drivers.Conn, error) {
	return &streamQueueConn{d: d, slots: make(chan struct{}, d.cap)}, nil
}

type streamQueueConn struct {
	d     *streamQueue
	slots chan struct{}
}

func (c *streamQueueConn) Close() error { return nil }

func (c *streamQueueConn) Do(ctx context.Context, r drivers.Request) drivers.Outcome {
	select {
	case c.slots <- struct{}{}:
	case <-r.QueueEnd:
		return drivers.Outcome{Class: drivers.Cancelled, Code: drivers.CodePhaseEnd, Unsent: true}
	case <-ctx.Done():
		return drivers.Outcome{Class: drivers.Cancelled, Unsent: true}
	}
	defer func() { <-c.slots }()
	c.d.served.Add(1)
	t := time.NewTimer(c.d.service)
	defer t.Stop()
	select {
	case <-t.C:
		return drivers.Outcome{Class: drivers.OK, Responded: true, Sent: time.Now().Add(-c.d.service)}
	case <-ctx.Done():
		return drivers.Outcome{Class: drivers.CtxClass(ctx)}
	}
}

// Requests a multiplexing driver held unsent (waiting for a stream under
// the server's cap) are never requests of the target: left over when the
// drain runs out, cancelled before sending on an interrupt, so that
// requests == what the target served and arrivals == requests + left
// over + cancelled unsent. Before the fix they were recorded as requests
// (and timeouts) sent at the engine's stamp.
func TestUnsentRequestsAreNotRequests(t *testing.T) {
	for _, interrupt := range []bool{false, true} {
		t.Run(map[bool]string{false: "drain", true: "interrupt"}[interrupt], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				// 200/s for 1s against 1 stream of 10ms: the target
				// takes 100/s, the rest queues in the client.
				d := &streamQueue{cap: 1, service: 10 * time.Millisecond}
				pl := onePhase(t, schema.Phase{Open: &schema.Open{Rate: constRate(200), Connections: 1, Inflight: 4}, Duration: dur("1s")}, 100*time.Millisecond)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				if interrupt {
					time.AfterFunc(500*time.Millisecond, cancel)
				}
				r := &Runner{Driver: d, Timeout: 100 * time.Millisecond, NewSleeper: NewTimerSleeper}
				res, err := r.Run(ctx, pl)
				if err != nil {
					t.Fatal(err)
				}
				s := res.Phases[0].Summary
				if err := s.Check(); err != nil {
					t.Fatal(err)
				}
				if s.Requests != d.served.Load() {
					t.Errorf("requests %d, the target served %d: an unsent request was counted", s.Requests, d.served.Load())
				}
				if s.Timeouts != 0 || s.Errors != 0 {
					t.Errorf("timeouts %d errors %d, want 0: the wait for a stream is the client's queue", s.Timeouts, s.Errors)
				}
				unsent := s.LeftOverUnsent
				if interrupt {
					unsent = s.CancelledUnsent
					if s.LeftOverUnsent != 0 {
						t.Errorf("left over %d on an interrupt, want 0", s.LeftOverUnsent)
					}
				}
				if unsent < 4 || s.Arrivals != s.Requests+unsent+s.Dropped {
					t.Errorf("arrivals %d = requests %d + unsent %d (+ dropped %d)? want at least the 4 workers' held requests unsent", s.Arrivals, s.Requests, unsent, s.Dropped)
				}
			})
		})
	}
}

// streamQueueFlows runs a two-step flow on streamQueue.
type streamQueueFlows struct{ *streamQueue }

func (streamQueueFlows) Flows() []drivers.Flow {
	return []drivers.Flow{{Name: "f", Weight: 1, Steps: []drivers.Step{{Name: "a"}, {Name: "b", Think: 5 * time.Millisecond}}}}
}

// The same with flows, and with the closed model: a step held unsent is
// booked on its step as left over, never as a step request; an iteration
// whose first step was never sent is left over itself, one whose later
// step was not is cut short as if thinking (its user had not sent it).
// Every identity holds, and the steps' requests are what the target
// served. With a cap of 0 nothing is ever sent: all left over.
func TestUnsentFlowStepsAndClosedModel(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cap   int
		flows bool
		phase schema.Phase
	}{
		{"flow, open", 1, true, schema.Phase{Open: &schema.Open{Rate: constRate(200), Connections: 1, Inflight: 4}, Duration: dur("1s")}},
		{"flow, cap 0", 0, true, schema.Phase{Open: &schema.Open{Rate: constRate(50), Connections: 1, Inflight: 2}, Duration: dur("200ms")}},
		{"closed, cap 0", 0, false, schema.Phase{Closed: &schema.Closed{Connections: 2}, Duration: dur("200ms")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				q := &streamQueue{cap: tc.cap, service: 10 * time.Millisecond}
				var d drivers.Driver = q
				if tc.flows {
					d = streamQueueFlows{q}
				}
				pl := onePhase(t, tc.phase, 100*time.Millisecond)
				r := &Runner{Driver: d, Timeout: 100 * time.Millisecond, NewSleeper: NewTimerSleeper}
				res, err := r.Run(context.Background(), pl)
				if err != nil {
					t.Fatal(err)
				}
				pr := res.Phases[0]
				if err := pr.Summary.Check(); err != nil {
					t.Fatal(err)
				}
				if err := pr.CheckSteps(); err != nil {
					t.Fatal(err)
				}
				s := pr.Summary
				if s.Errors != 0 || s.Timeouts != 0 {
					t.Errorf("errors %d timeouts %d, want 0", s.Errors, s.Timeouts)
				}
				served := s.Requests
				if tc.flows {
					served = 0
					for _, st := range pr.Steps {
						served += st.Summary.Requests
						if st.Summary.Errors != 0 {
							t.Errorf("step %s: %d errors", st.Name, st.Summary.Errors)
						}
					}
				}
				if served != q.served.Load() {
					t.Errorf("%d requests booked, the target served %d", served, q.served.Load())
				}
				if s.LeftOverUnsent == 0 {
					t.Errorf("nothing left over: the test did not make requests wait")
				}
				if tc.cap == 0 && (s.Requests != 0 || s.Arrivals != s.LeftOverUnsent) {
					t.Errorf("cap 0: requests %d, arrivals %d, left over %d; want every arrival left over", s.Requests, s.Arrivals, s.LeftOverUnsent)
				}
			})
		})
	}
}

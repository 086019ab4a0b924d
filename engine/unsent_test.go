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

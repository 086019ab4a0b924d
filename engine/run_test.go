package engine

import (
	"context"
	"errors"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/runner-dev/runner/drivers"
	"github.com/runner-dev/runner/drivers/fake"
	"github.com/runner-dev/runner/schema"
)

// phase builds a one-phase plan by hand (the loader is tested apart).
func onePhase(t *testing.T, ph schema.Phase, timeout time.Duration) *Plan {
	t.Helper()
	sc := &schema.Scenario{Version: 1, Name: "t", File: "t.yaml", Phases: []schema.Phase{ph}, Repeats: 1}
	pl, err := Compile(sc, Limits{MaxInflight: 64, Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	return pl
}

func constService(d time.Duration) func(uint64) time.Duration {
	return func(uint64) time.Duration { return d }
}

func run(t *testing.T, d drivers.Driver, pl *Plan, timeout time.Duration) *Result {
	t.Helper()
	r := &Runner{Driver: d, Timeout: timeout, NewSleeper: NewTimerSleeper}
	res, err := r.Run(context.Background(), pl)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range res.Phases {
		if err := p.Summary.Check(); err != nil {
			t.Fatalf("phase %s: %v", p.Phase.Name, err)
		}
	}
	return res
}

func dur(s string) schema.Duration {
	d, err := time.ParseDuration(s)
	if err != nil {
		panic(err)
	}
	return schema.Duration(d)
}

func constRate(r float64) schema.RateSpec {
	return schema.RateSpec{From: schema.Rate(r), To: schema.Rate(r)}
}

// B04, the defect pinned: a rate applied per connection instead of to the
// whole run. At the engine: the rate is global, never multiplied by
// connections.
func TestField_B04_RateIsGlobal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &fake.Driver{Service: constService(5 * time.Millisecond)}
		pl := onePhase(t, schema.Phase{Open: &schema.Open{Rate: constRate(10), Connections: 50}, Duration: dur("30s")}, 10*time.Second)
		if got := pl.Phases[0].ExpectedRequests; got != 300 {
			t.Fatalf("plan expects %d requests, want 300", got)
		}
		s := run(t, d, pl, 10*time.Second).Phases[0].Summary
		if s.Arrivals != 300 || s.Requests != 300 || s.OK != 300 || d.Requests() != 300 {
			t.Fatalf("arrivals %d requests %d ok %d target %d, want 300 each", s.Arrivals, s.Requests, s.OK, d.Requests())
		}
		if got := s.AchievedRate(); got < 9.99 || got > 10.01 {
			t.Fatalf("achieved rate %.3f/s, want 10/s", got)
		}
		if p, _ := s.Response.Percentile(99); p != 5*time.Millisecond {
			t.Fatalf("p99 %s, want 5ms: a healthy open model adds no queueing", p)
		}
	})
}

// B08, the defect pinned: requests in flight at a phase's end cancelled and
// booked as the target's errors.
//
// The request in flight when a closed phase's time is up finishes and
// counts as ok; nothing at the end is booked as an error of the target.
func TestField_B08_EndOfPhaseDrains(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &fake.Driver{Service: constService(150 * time.Millisecond)}
		pl := onePhase(t, schema.Phase{Closed: &schema.Closed{Connections: 1}, Duration: dur("1s")}, 10*time.Second)
		pr := run(t, d, pl, 10*time.Second).Phases[0]
		s := pr.Summary
		// Sends at 0, 150, …, 900 ms: 7 requests, the last done at 1.05 s.
		if s.OK != 7 || s.Errors != 0 || s.Requests != 7 {
			t.Fatalf("ok %d errors %d requests %d, want 7/0/7", s.OK, s.Errors, s.Requests)
		}
		if s.Elapsed != time.Second || pr.Wall != 1050*time.Millisecond {
			t.Fatalf("elapsed %s wall %s, want 1s and 1.05s", s.Elapsed, pr.Wall)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		d := &fake.Driver{Service: constService(150 * time.Millisecond)}
		pl := onePhase(t, schema.Phase{Closed: &schema.Closed{Connections: 50}, Duration: dur("5s")}, 10*time.Second)
		s := run(t, d, pl, 10*time.Second).Phases[0].Summary
		// 34 rounds (0 … 4.95 s) of 50 connections.
		if s.Errors != 0 || s.OK != 34*50 || s.OK+s.Errors+s.Cancelled != s.Requests {
			t.Fatalf("ok %d errors %d cancelled %d requests %d", s.OK, s.Errors, s.Cancelled, s.Requests)
		}
	})
}

// A request sent before the drain's bound ends by its own timeout, never
// by the phase's clock: request 3 (which never gets an answer) starts at
// 0.8 s and times out at 10.8 s, although the drain's bound (the plan's
// grace, 2 s here) passed at 3 s. Nothing is cut in flight, nothing is
// left over: every request ended in an outcome of its own.
func TestRequestsEndByTheirOwnTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &fake.Driver{Service: func(seq uint64) time.Duration {
			if seq == 3 {
				return time.Hour
			}
			return 400 * time.Millisecond
		}}
		pl := onePhase(t, schema.Phase{Closed: &schema.Closed{Connections: 1}, Duration: dur("1s")}, 2*time.Second)
		pr := run(t, d, pl, 10*time.Second).Phases[0]
		s := pr.Summary
		if s.OK != 2 || s.Errors != 1 || s.Timeouts != 1 || s.Cancelled != 0 || s.LeftOver() != 0 {
			t.Fatalf("ok %d errors %d timeouts %d cancelled %d left over %d, want 2/1/1/0/0", s.OK, s.Errors, s.Timeouts, s.Cancelled, s.LeftOver())
		}
		if s.Elapsed != time.Second || pr.Wall != 10800*time.Millisecond {
			t.Fatalf("elapsed %s wall %s, want 1s and 10.8s (request 3's timeout)", s.Elapsed, pr.Wall)
		}
	})
}

// Open model above the target's capacity, queue mode: a single FIFO worker
// with service time S = 9 ms offered 200/s for 1 s. Arrival k (0-based)
// comes at 5k ms, waits for the slot, is sent at 9k ms and completes at
// 9(k+1) ms: response time 9 + 4k ms, known exactly. When the phase's
// time is up (1 s) no new arrival comes due, but the 88 still waiting are
// offered load: they are sent during the drain (the timeout, 10 s, is the
// bound), so all 200 are measured and the tail is not cut off. The rates
// are over the windows in which things happened: sent over 1.791 s,
// completed over 1.8 s; the target can do 1/S = 111.1/s, never 200/s.
func TestOpenQueueCountsFromIntendedStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &fake.Driver{Service: constService(9 * time.Millisecond), Serial: true}
		pl := onePhase(t, schema.Phase{Open: &schema.Open{Rate: constRate(200), Connections: 1}, Duration: dur("1s")}, 10*time.Second)
		s := run(t, d, pl, 10*time.Second).Phases[0].Summary
		if s.Arrivals != 200 || s.Requests != 200 || s.OK != 200 || s.Dropped != 0 || s.LeftOver() != 0 {
			t.Fatalf("arrivals %d requests %d ok %d dropped %d left over %d, want 200/200/200/0/0", s.Arrivals, s.Requests, s.OK, s.Dropped, s.LeftOver())
		}
		// Nearest rank over 9+4k ms, k = 0..199: p50 is the 100th smallest
		// (k = 99) = 405 ms; p90 the 180th (k = 179) = 725 ms; p99 the
		// 198th (k = 197) = 797 ms; max (k = 199) 805 ms.
		for _, c := range []struct {
			p    float64
			want time.Duration
		}{{50, 405 * time.Millisecond}, {90, 725 * time.Millisecond}, {99, 797 * time.Millisecond}, {100, 805 * time.Millisecond}} {
			got, _ := s.Response.Percentile(c.p)
			if rel := float64(got-c.want) / float64(c.want); rel < 0 || rel > 0.001 {
				t.Fatalf("p%g = %s, want %s", c.p, got, c.want)
			}
		}
		// Service time is always S: the queue sits in the client.
		if got, _ := s.Service.Max(); got != 9*time.Millisecond {
			t.Fatalf("service max %s, want 9ms", got)
		}
		if s.Elapsed != time.Second || s.SendWindow() != 1791*time.Millisecond || s.CompletionWindow() != 1800*time.Millisecond {
			t.Fatalf("elapsed %s, sent over %s, completed over %s; want 1s, 1.791s, 1.8s", s.Elapsed, s.SendWindow(), s.CompletionWindow())
		}
		if got, want := s.Throughput(), 200/1.8; math.Abs(got-want) > 1e-9 {
			t.Fatalf("throughput %.3f/s, want %.3f/s (the target's capacity)", got, want)
		}
		if got, want := s.AchievedRate(), 200/1.791; math.Abs(got-want) > 1e-9 {
			t.Fatalf("achieved %.3f/s, want %.3f/s", got, want)
		}
		// Little's law over the same window: L = ΣR / 1.8 s; in flight at
		// the target always 1 (the serial slot); the rest waited in the
		// client, exactly the send lag.
		if l, in, wait := s.LittleL(), s.InflightMean(), s.WaitingMean(); math.Abs(l-(in+wait)) > 1e-9 || math.Abs(in-1) > 1e-9 {
			t.Fatalf("L %.4f, in flight %.4f, waiting %.4f: want L = in flight (1) + waiting", l, in, wait)
		}
	})
}

// The drain is bounded: the same overload with a 300 ms timeout. Queued
// arrivals may be sent until 1.3 s: arrivals 0…144 were sent by then (at
// 9k ms; arrival 145 would leave at 1.305 s, too late), each completes
// within its own timeout, and the 55 never sent are left over. Each left-over
// arrival's response time is censored: at least 1.3 s − 5k ms.
func TestOpenQueueDrainBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &fake.Driver{Service: constService(9 * time.Millisecond), Serial: true}
		pl := onePhase(t, schema.Phase{Open: &schema.Open{Rate: constRate(200), Connections: 1}, Duration: dur("1s")}, 300*time.Millisecond)
		s := run(t, d, pl, 300*time.Millisecond).Phases[0].Summary
		if s.Arrivals != 200 || s.OK != 145 || s.CancelledAtEnd != 0 || s.LeftOverUnsent != 55 || s.LeftOver() != 55 || s.Dropped != 0 {
			t.Fatalf("arrivals %d ok %d cut %d unsent %d dropped %d, want 200/145/0/55/0", s.Arrivals, s.OK, s.CancelledAtEnd, s.LeftOverUnsent, s.Dropped)
		}
		// Arrival 199 (due at 995 ms) waited at least 305 ms; arrival 145
		// (due 725 ms) at least 575 ms, the largest.
		lo, _ := s.LeftOverBound.Min()
		hi, _ := s.LeftOverBound.Max()
		if lo != 305*time.Millisecond || hi != 575*time.Millisecond {
			t.Fatalf("left-over bounds %s … %s, want 305ms … 575ms", lo, hi)
		}
	})
}

// An absurd backlog (10 M/s offered to one slow slot) is counted in closed
// form when the drain runs out, not arrival by arrival, and the identity
// holds: sends at 0, 99, …, 11,979 ms within the 2 s phase and its 10 s
// drain are 122 requests, each answered; the rest are left over.
func TestHugeBacklogCountedAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &fake.Driver{Service: constService(99 * time.Millisecond)}
		pl := onePhase(t, schema.Phase{Open: &schema.Open{Rate: constRate(1e7), Connections: 1}, Duration: dur("2s")}, 10*time.Second)
		s := run(t, d, pl, 10*time.Second).Phases[0].Summary
		if s.Arrivals != 2e7 || s.Requests != 122 || s.OK != 122 || s.LeftOver() != s.Arrivals-122 {
			t.Fatalf("arrivals %d requests %d ok %d left over %d", s.Arrivals, s.Requests, s.OK, s.LeftOver())
		}
	})
}

// An open phase bounded by count lasts the time its arrivals span: 50
// arrivals at 100/s are half a second, so achieved is 100/s, not more.
func TestOpenCountBoundWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &fake.Driver{Service: constService(5 * time.Millisecond)}
		pl := onePhase(t, schema.Phase{Open: &schema.Open{Rate: constRate(100), Connections: 2}, Requests: 50}, 10*time.Second)
		if pl.Phases[0].ExpectedDuration != 500*time.Millisecond {
			t.Fatalf("expected duration %s, want 500ms", pl.Phases[0].ExpectedDuration)
		}
		s := run(t, d, pl, 10*time.Second).Phases[0].Summary
		if s.Requests != 50 || s.Elapsed != 500*time.Millisecond || s.AchievedRate() != 100 {
			t.Fatalf("requests %d elapsed %s achieved %.1f", s.Requests, s.Elapsed, s.AchievedRate())
		}
	})
}

// In-flight is averaged over the phase's window: requests still open in
// the grace period cannot push it above the possible concurrency.
func TestInflightMeanBoundedByConcurrency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &fake.Driver{Service: constService(time.Hour)}
		pl := onePhase(t, schema.Phase{Closed: &schema.Closed{Connections: 4}, Duration: dur("1s")}, 5*time.Second)
		s := run(t, d, pl, 5*time.Second).Phases[0].Summary
		if got := s.InflightMean(); got > 4 || got < 3.99 {
			t.Fatalf("mean in-flight %.3f with 4 connections stuck the whole phase, want 4", got)
		}
	})
}

// Drop mode: arrivals every 5 ms, service 9 ms, one slot: every other
// arrival finds the slot busy and is dropped; nothing is lost. (9 ms, not
// 10: a completion and an arrival at the same instant would race.)
func TestOpenDropKeepsIdentity(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &fake.Driver{Service: constService(9 * time.Millisecond)}
		pl := onePhase(t, schema.Phase{Open: &schema.Open{Rate: constRate(200), Connections: 1, OnSaturation: "drop"}, Duration: dur("1s")}, 10*time.Second)
		s := run(t, d, pl, 10*time.Second).Phases[0].Summary
		if s.Arrivals != 200 || s.Requests != 100 || s.Dropped != 100 {
			t.Fatalf("arrivals %d requests %d dropped %d, want 200/100/100", s.Arrivals, s.Requests, s.Dropped)
		}
		if s.Requests+s.Dropped != s.Arrivals {
			t.Fatalf("requests + dropped != arrivals")
		}
	})
}

// The in-flight cap is per connection: 2 connections × inflight 3 never
// hold more than 6 requests at the target.
func TestInflightCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &fake.Driver{Service: constService(100 * time.Millisecond), Inflight: 8}
		// 6 slots × 10/s: the 1,000 arrivals take 16.7 s, within the drain.
		pl := onePhase(t, schema.Phase{Open: &schema.Open{Rate: constRate(1000), Connections: 2, Inflight: 3}, Duration: dur("1s")}, 20*time.Second)
		s := run(t, d, pl, 20*time.Second).Phases[0].Summary
		if d.PeakInflight() != 6 {
			t.Fatalf("peak in flight %d, want 6", d.PeakInflight())
		}
		if s.Arrivals != 1000 || s.Requests != s.Arrivals || s.LeftOver() != 0 {
			t.Fatalf("arrivals %d requests %d left over %d: the queue drains within the timeout", s.Arrivals, s.Requests, s.LeftOver())
		}
	})
}

// The ramp is a staircase: 2 connections from 1 s, 4 from 2 s, for 3 s.
func TestRampStaircase(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &fake.Driver{Service: constService(95 * time.Millisecond)}
		pl := onePhase(t, schema.Phase{Ramp: &schema.Ramp{Connections: schema.Staircase{From: 0, To: 4, Step: 2, Every: dur("1s")}}}, 10*time.Second)
		p := pl.Phases[0]
		if p.Duration != 3*time.Second || len(p.Steps) != 2 || p.Steps[0] != (Step{At: time.Second, Connections: 2}) {
			t.Fatalf("plan %+v", p)
		}
		s := run(t, d, pl, 10*time.Second).Phases[0].Summary
		// Sends every 95 ms until 3 s: the 2 connections of the first stair
		// (from 1 s) send 22 each, the 2 of the second (from 2 s) 11 each.
		if s.OK != 66 || d.Dials() != 4 || s.ConnectionsOpened != 4 {
			t.Fatalf("ok %d dials %d opened %d, want 66/4/4", s.OK, d.Dials(), s.ConnectionsOpened)
		}
	})
}

// A phase bounded by count sends exactly that many requests.
func TestRequestsBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &fake.Driver{Service: func(seq uint64) time.Duration { return time.Duration(seq) * time.Millisecond }}
		pl := onePhase(t, schema.Phase{Closed: &schema.Closed{Connections: 200}, Requests: 1006}, 10*time.Second)
		s := run(t, d, pl, 10*time.Second).Phases[0].Summary
		if s.Requests != 1006 || s.OK != 1006 || d.Requests() != 1006 {
			t.Fatalf("requests %d ok %d target %d, want 1006", s.Requests, s.OK, d.Requests())
		}
	})
}

// Warmup and repeats: each (repeat, phase) is measured on its own.
func TestRepeatsAndWarmup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &fake.Driver{Service: constService(10 * time.Millisecond)}
		sc := &schema.Scenario{Version: 1, Name: "t", File: "t.yaml", Repeats: 3, Phases: []schema.Phase{
			{Name: "warm", Warmup: true, Closed: &schema.Closed{Connections: 2}, Duration: dur("1s")},
			{Name: "steady", Open: &schema.Open{Rate: constRate(50), Connections: 2}, Duration: dur("2s")},
		}}
		pl, err := Compile(sc, Limits{Timeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		res := run(t, d, pl, time.Second)
		if len(res.Phases) != 6 {
			t.Fatalf("%d phase results, want 6", len(res.Phases))
		}
		for i, pr := range res.Phases {
			if pr.Repeat != i/2+1 || pr.Phase.Warmup != (i%2 == 0) {
				t.Fatalf("result %d is repeat %d phase %s", i, pr.Repeat, pr.Phase.Name)
			}
			if !pr.Phase.Warmup && pr.Summary.OK != 100 {
				t.Fatalf("steady ok %d, want 100", pr.Summary.OK)
			}
		}
		// One connection pair per repeat, reused by both phases.
		if d.Dials() != 6 {
			t.Fatalf("dials %d, want 6", d.Dials())
		}
	})
}

// Ctrl-C: the phase stops at once, requests in flight end as cancelled,
// no later phase runs, and the identity holds.
func TestInterruptStopsPromptly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &fake.Driver{Service: constService(300 * time.Millisecond)}
		sc := &schema.Scenario{Version: 1, Name: "t", File: "t.yaml", Repeats: 2, Phases: []schema.Phase{
			{Name: "a", Open: &schema.Open{Rate: constRate(100), Connections: 10, Inflight: 4}, Duration: dur("10s")},
			{Name: "b", Closed: &schema.Closed{Connections: 1}, Duration: dur("10s")},
		}}
		pl, err := Compile(sc, Limits{Timeout: 5 * time.Second, MaxInflight: 4})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancelCause(context.Background())
		time.AfterFunc(2505*time.Millisecond, func() { cancel(errors.New("interrupt")) })
		t0 := time.Now()
		d.Inflight = 4
		res, err := (&Runner{Driver: d, Timeout: 5 * time.Second, NewSleeper: NewTimerSleeper}).Run(ctx, pl)
		if err != nil {
			t.Fatal(err)
		}
		if took := time.Since(t0); took != 2505*time.Millisecond {
			t.Fatalf("run took %s after a 2.5 s interrupt", took)
		}
		if !res.Interrupted || len(res.Phases) != 1 || !res.Phases[0].Interrupted {
			t.Fatalf("interrupted %v, %d phases", res.Interrupted, len(res.Phases))
		}
		s := res.Phases[0].Summary
		if err := s.Check(); err != nil {
			t.Fatal(err)
		}
		// Arrivals at 0, 10, …, 2500 ms: 251; those sent in the last 300 ms
		// (2210 … 2500: 30) were cut short.
		if s.Arrivals != 251 || s.Cancelled != 30 || s.OK != 221 || s.Errors != 0 {
			t.Fatalf("arrivals %d ok %d cancelled %d errors %d", s.Arrivals, s.OK, s.Cancelled, s.Errors)
		}
	})
}

// Not a single connection: the run cannot run.
func TestNoConnectionAtAll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &fake.Driver{DialFail: func(int64) error { return fake.ErrRefused }}
		pl := onePhase(t, schema.Phase{Closed: &schema.Closed{Connections: 3}, Duration: dur("1s")}, time.Second)
		_, err := (&Runner{Driver: d, NewSleeper: NewTimerSleeper}).Run(context.Background(), pl)
		if !errors.Is(err, ErrNoConnection) {
			t.Fatalf("err %v, want ErrNoConnection", err)
		}
	})
}

// Some connections fail: they are counted, and each request on a missing
// connection tries to dial and ends as a connect error.
func TestPartialConnections(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &fake.Driver{Service: constService(100 * time.Millisecond), DialFail: func(n int64) error {
			if n > 1 {
				return fake.ErrRefused
			}
			return nil
		}}
		pl := onePhase(t, schema.Phase{Closed: &schema.Closed{Connections: 2}, Requests: 4}, time.Second)
		pr := run(t, d, pl, time.Second).Phases[0]
		s := pr.Summary
		if pr.ConnectionsEstablished != 1 || s.ConnectFailures != 1 {
			t.Fatalf("established %d connect failures %d, want 1 and 1", pr.ConnectionsEstablished, s.ConnectFailures)
		}
		connect := s.ErrorsByClass[string(drivers.Connect)]
		if s.Requests != 4 || connect < 1 || connect+s.OK != 4 || connect != s.Errors {
			t.Fatalf("requests %d ok %d errors %v", s.Requests, s.OK, s.ErrorsByClass)
		}
	})
}

// Ctrl-C in a closed phase: workers stop starting at once; no burst of
// requests that are cancelled as soon as they are made.
func TestInterruptClosedNoPhantomRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &fake.Driver{Service: constService(5 * time.Millisecond)}
		pl := onePhase(t, schema.Phase{Closed: &schema.Closed{Connections: 4}, Duration: dur("10s")}, time.Second)
		ctx, cancel := context.WithCancelCause(context.Background())
		time.AfterFunc(1002*time.Millisecond, func() { cancel(errors.New("interrupt")) })
		res, err := (&Runner{Driver: d, Timeout: time.Second, NewSleeper: NewTimerSleeper}).Run(ctx, pl)
		if err != nil {
			t.Fatal(err)
		}
		s := res.Phases[0].Summary
		// 4 connections × 201 sends (0, 5, …, 1000 ms); the 4 in flight at
		// 1002 ms are cancelled.
		if s.Requests != 4*201 || s.Cancelled != 4 || s.OK != 4*200 {
			t.Fatalf("requests %d ok %d cancelled %d, want 804/800/4", s.Requests, s.OK, s.Cancelled)
		}
		if err := s.Check(); err != nil {
			t.Fatal(err)
		}
	})
}

// Ctrl-C while arrivals queue for a busy slot: the due arrivals that were
// never sent are cancelled, and the identities hold.
func TestInterruptQueuedArrivals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &fake.Driver{Service: constService(time.Hour)}
		pl := onePhase(t, schema.Phase{Open: &schema.Open{Rate: constRate(50), Connections: 4}, Duration: dur("10s")}, 20*time.Second)
		ctx, cancel := context.WithCancelCause(context.Background())
		time.AfterFunc(1990*time.Millisecond, func() { cancel(errors.New("interrupt")) })
		res, err := (&Runner{Driver: d, Timeout: 20 * time.Second, NewSleeper: NewTimerSleeper}).Run(ctx, pl)
		if err != nil {
			t.Fatal(err)
		}
		s := res.Phases[0].Summary
		// Arrivals at 0, 20, …, 1980 ms: 100; 4 were sent and hang; 96 never left.
		if s.Arrivals != 100 || s.Requests != 4 || s.CancelledUnsent != 96 || s.Cancelled != 100 {
			t.Fatalf("arrivals %d requests %d cancelled %d (unsent %d)", s.Arrivals, s.Requests, s.Cancelled, s.CancelledUnsent)
		}
		if err := s.Check(); err != nil {
			t.Fatal(err)
		}
	})
}

// An open phase bounded by count ends when its arrivals' span is over,
// like one bounded by time: 50 arrivals at 100/s span 0.5 s (the offered
// rate's window). A slow single-worker target (45 ms) serves them one by
// one: all 50 are sent (the last at 2.205 s, in the drain) and complete
// by 2.25 s, so throughput is 50 / 2.25 s = 22.2/s, the target's 1/S,
// never 50 / 0.5 s.
func TestOpenCountBoundStopsAtItsWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &fake.Driver{Service: constService(45 * time.Millisecond), Serial: true}
		pl := onePhase(t, schema.Phase{Open: &schema.Open{Rate: constRate(100), Connections: 1}, Requests: 50}, 10*time.Second)
		s := run(t, d, pl, 10*time.Second).Phases[0].Summary
		if s.Arrivals != 50 || s.Requests != 50 || s.LeftOver() != 0 || s.Elapsed != 500*time.Millisecond {
			t.Fatalf("arrivals %d requests %d left over %d elapsed %s, want 50/50/0/500ms", s.Arrivals, s.Requests, s.LeftOver(), s.Elapsed)
		}
		if got, want := s.Throughput(), 50/2.25; math.Abs(got-want) > 1e-9 {
			t.Fatalf("throughput %.2f/s, want %.2f/s", got, want)
		}
		if got := s.Drain(); got != 1750*time.Millisecond {
			t.Fatalf("drain %s, want 1.75s", got)
		}
	})
}

// A rate ramp cut short by its count offers the rate of the part that ran:
// 0 → 800/s over 2 s, 200 arrivals: Λ(t) = 200t², and from 0/s arrival i
// comes at Λ⁻¹(i+1), so the 200th at 1 s and the window ends where the
// 201st would come, √(201/200) s; the offered rate is Λ(w)/w =
// √(200·201) ≈ 200.5/s, not the whole ramp's 400/s.
func TestOfferedRateOfARampCutShort(t *testing.T) {
	pl := onePhase(t, schema.Phase{Open: &schema.Open{Rate: schema.RateSpec{From: 0, To: 800, Ramp: true}, Connections: 4}, Requests: 200, Duration: dur("2s")}, time.Second)
	p := pl.Phases[0]
	if w, want := p.Window(), secs(math.Sqrt(201.0/200)); w != want {
		t.Fatalf("window %s, want %s", w, want)
	}
	if last := p.Schedule(1).At(199); last != time.Second {
		t.Fatalf("arrival 199 at %s, want 1s", last)
	}
	if got, want := p.PlannedOfferedRate(), math.Sqrt(200*201); math.Abs(got-want) > 0.01 {
		t.Fatalf("offered %.2f/s, want %.2f/s", got, want)
	}
}

// Progress reports a running phase once a second: elapsed against the
// planned length, counts so far, what is in flight, the p99 so far.
func TestProgress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &fake.Driver{Service: constService(20 * time.Millisecond)}
		pl := onePhase(t, schema.Phase{Open: &schema.Open{Rate: constRate(100), Connections: 4}, Duration: dur("5s")}, time.Second)
		var got []Progress
		r := &Runner{Driver: d, Timeout: time.Second, NewSleeper: NewTimerSleeper, Progress: func(p Progress) { got = append(got, p) }}
		if _, err := r.Run(context.Background(), pl); err != nil {
			t.Fatal(err)
		}
		if len(got) < 4 || len(got) > 6 {
			t.Fatalf("%d progress reports for a 5 s phase, want one a second", len(got))
		}
		for i, p := range got {
			if p.Total != 5*time.Second || p.Elapsed != time.Duration(i+1)*time.Second {
				t.Errorf("report %d: elapsed %s of %s", i, p.Elapsed, p.Total)
			}
			// At 100/s with 20 ms each: ~100 requests a second, 2 in flight.
			if want := int64(i+1) * 100; p.Requests < want-3 || p.Requests > want+3 || p.InFlight > 4 || p.Errors != 0 {
				t.Errorf("report %d: %+v", i, p)
			}
			if !p.P99OK || p.P99 != 20*time.Millisecond {
				t.Errorf("report %d: p99 %s (%v), want 20ms", i, p.P99, p.P99OK)
			}
		}
	})
}

// Send lag is how long an arrival waited in the client before it went
// out: one connection, an arrival every 10 ms, 15 ms of service each, so
// arrival i (due at 10i ms) leaves when the previous one is done, at 15i
// ms: it lagged exactly 5i ms. The phase's 10 arrivals span 100 ms; all
// ten leave (the last three in the drain) and lagged 0 … 45 ms. In the
// closed model it is always 0.
func TestSendLag(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &fake.Driver{Service: constService(15 * time.Millisecond)}
		pl := onePhase(t, schema.Phase{Open: &schema.Open{Rate: constRate(100), Connections: 1}, Requests: 10}, time.Second)
		s := run(t, d, pl, time.Second).Phases[0].Summary
		if s.SendLag.Count() != 10 || s.Requests != 10 || s.LeftOver() != 0 {
			t.Fatalf("send lag of %d requests (requests %d, left over %d), want 10, 10, 0", s.SendLag.Count(), s.Requests, s.LeftOver())
		}
		if mx, _ := s.SendLag.Max(); mx != 45*time.Millisecond {
			t.Errorf("max send lag %s, want 45ms (arrival 9)", mx)
		}
		if mean, _ := s.SendLag.Mean(); mean != 22500*time.Microsecond {
			t.Errorf("mean send lag %s, want 22.5ms (5 ms × 4.5)", mean)
		}
		closed := onePhase(t, schema.Phase{Closed: &schema.Closed{Connections: 2}, Requests: 10}, time.Second)
		s = run(t, d, closed, time.Second).Phases[0].Summary
		if mx, _ := s.SendLag.Max(); s.SendLag.Count() != 10 || mx != 0 {
			t.Errorf("closed model: send lag max %s over %d requests, want 0", mx, s.SendLag.Count())
		}
	})
}

package engine

import (
	"context"
	"testing"
	"time"

	"github.com/runner-dev/runner/drivers"
	"github.com/runner-dev/runner/drivers/fake"
	"github.com/runner-dev/runner/schema"
)

// keeper is the fake driver marked drivers.DeadlineKeeper, as the HTTP
// driver is: requests run on the phase's context, with no per-request one.
type keeper struct{ *fake.Driver }

func (keeper) KeepsDeadline() {}

// benchDrivers are the two ways the engine hands a request to a driver.
func benchDrivers() []struct {
	name string
	d    func() drivers.Driver
} {
	return []struct {
		name string
		d    func() drivers.Driver
	}{
		{"ctx-per-request", func() drivers.Driver { return &fake.Driver{} }},
		{"deadline-keeper", func() drivers.Driver { return keeper{&fake.Driver{}} }},
	}
}

// BenchmarkClosedLoopOverhead measures the engine's own cost per request:
// a closed model over a fake target that answers at once, so every
// nanosecond and allocation is the engine's (scheduling, stamping,
// recording), not a driver's or a network's.
func BenchmarkClosedLoopOverhead(b *testing.B) {
	for _, bd := range benchDrivers() {
		b.Run(bd.name, func(b *testing.B) {
			sc := &schema.Scenario{Version: 1, Name: "b", File: "b.yaml", Repeats: 1, Phases: []schema.Phase{
				{Closed: &schema.Closed{Connections: 4}, Requests: max(b.N, 1)},
			}}
			pl, err := Compile(sc, Limits{Timeout: time.Second})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			res, err := (&Runner{Driver: bd.d(), Timeout: time.Second}).Run(context.Background(), pl)
			if err != nil {
				b.Fatal(err)
			}
			if got := res.Phases[0].Summary.OK; got != int64(max(b.N, 1)) {
				b.Fatalf("ok %d, want %d", got, b.N)
			}
		})
	}
}

// noSleep is a sleeper whose every instant has already come: the pacer
// dispatches arrivals as fast as slots free up.
type noSleep struct{}

func (noSleep) Until(_ time.Time, done <-chan struct{}) bool {
	select {
	case <-done:
		return false
	default:
		return true
	}
}

func (noSleep) Close() error { return nil }

// BenchmarkOpenPacer measures the open model's cost per request: pacer,
// hand-off to an in-flight slot, send and record. Its sleeper never
// waits (every arrival is already due: 1/s over a window of b.N
// seconds), so it runs flat out and every arrival is sent; once the
// target has seen them all, the run is cancelled rather than left to
// wait out its window.
func BenchmarkOpenPacer(b *testing.B) {
	for _, bd := range benchDrivers() {
		b.Run(bd.name, func(b *testing.B) {
			n := max(b.N, 1)
			sc := &schema.Scenario{Version: 1, Name: "b", File: "b.yaml", Repeats: 1, Phases: []schema.Phase{
				{Open: &schema.Open{Rate: schema.RateSpec{From: 1, To: 1}, Connections: 4}, Requests: n},
			}}
			pl, err := Compile(sc, Limits{Timeout: time.Second})
			if err != nil {
				b.Fatal(err)
			}
			d := bd.d()
			f := fakeOf(d)
			r := &Runner{Driver: d, Timeout: time.Second, NewSleeper: func() Sleeper { return noSleep{} }}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go func() {
				t := time.NewTicker(time.Millisecond)
				defer t.Stop()
				for range t.C {
					if f.Requests() >= int64(n) {
						cancel()
						return
					}
					if ctx.Err() != nil {
						return
					}
				}
			}()
			b.ReportAllocs()
			b.ResetTimer()
			res, _ := r.Run(ctx, pl)
			b.StopTimer()
			if res == nil || len(res.Phases) == 0 {
				b.Fatal("no result")
			}
			if s := res.Phases[0].Summary; s.OK != int64(n) {
				b.Fatalf("ok %d, want %d (arrivals %d, requests %d, dropped %d)", s.OK, n, s.Arrivals, s.Requests, s.Dropped)
			}
		})
	}
}

// fakeOf unwraps the fake driver of a benchmark.
func fakeOf(d drivers.Driver) *fake.Driver {
	if k, ok := d.(keeper); ok {
		return k.Driver
	}
	return d.(*fake.Driver)
}

// BenchmarkOpenDispatchCPU measures what pacing costs on the real clock:
// 20,000 arrivals/s over 50 connections to a fake target that answers at
// once, each arrival on its own instant (precise) or grouped by a 1 ms
// dispatch window. ns/op is the schedule's spacing (50 µs), not a speed;
// cpu-ns/op is the process's CPU (user + system, getrusage) per arrival:
// the pacer's wake-ups, the hand-offs to the slots and the recording,
// without a network. early-max-µs is how early the window sent the most
// (0 for precise), late-p99-µs the send lag's p99.
func BenchmarkOpenDispatchCPU(b *testing.B) {
	for _, c := range []struct{ name, window string }{{"precise", "0s"}, {"window-100us", "100us"}, {"window-250us", "250us"}, {"window-500us", "500us"}, {"window-1ms", "1ms"}} {
		b.Run(c.name, func(b *testing.B) {
			n := max(b.N, 1)
			w := dur(c.window)
			sc := &schema.Scenario{Version: 1, Name: "b", File: "b.yaml", Repeats: 1, Phases: []schema.Phase{
				{Open: &schema.Open{Rate: schema.RateSpec{From: 20000, To: 20000}, Connections: 50, DispatchWindow: &w}, Requests: n},
			}}
			pl, err := Compile(sc, Limits{Timeout: time.Second})
			if err != nil {
				b.Fatal(err)
			}
			r := &Runner{Driver: keeper{&fake.Driver{}}, Timeout: time.Second}
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cpuTime()
			res, err := r.Run(context.Background(), pl)
			cpu := cpuTime() - cpu0
			b.StopTimer()
			if err != nil {
				b.Fatal(err)
			}
			s := res.Phases[0].Summary
			if s.OK != int64(n) {
				b.Fatalf("ok %d, want %d", s.OK, n)
			}
			early, _ := s.SendEarly.Max()
			late, _ := s.SendLag.Percentile(99)
			b.ReportMetric(float64(cpu)/float64(n), "cpu-ns/op")
			b.ReportMetric(float64(early)/float64(time.Microsecond), "early-max-µs")
			b.ReportMetric(float64(late)/float64(time.Microsecond), "late-p99-µs")
		})
	}
}

package engine

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/runner-dev/runner/drivers/fake"
	"github.com/runner-dev/runner/schema"
)

// A dispatch window groups arrivals: 1000/s (one every 1 ms) with a 4 ms
// window. The first group starts on arrival 0's instant (nothing before
// it to be dense with): arrivals 0…3 go at 0 ms (early by 0, 1, 2, 3 ms).
// After that the arrivals are dense (1 ms apart, under the window), so
// the pacer wakes W/4 = 1 ms before each group's first arrival and sends
// what is due before that wake-up + 4 ms: arrivals 4+3m, 5+3m, 6+3m at
// 3+3m ms (early by 1, 2, 3 ms), m = 0…31. In fake time: 3 + 96 = 99 early
// sends, Σ 6 + 32·6 = 198 ms (mean 2 ms), from 1 to 3 ms; none late.
// Each response time counts from its send (never from the later intended
// instant): exactly the 2 ms service. Without a window nothing is early.
func TestDispatchWindowGroupsArrivals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, c := range []struct {
			window    string
			early     int64
			mean, max time.Duration
		}{{"0s", 0, 0, 0}, {"4ms", 99, 2 * time.Millisecond, 3 * time.Millisecond}} {
			d := &fake.Driver{Service: constService(2 * time.Millisecond)}
			pl := onePhase(t, schema.Phase{Open: &schema.Open{Rate: constRate(1000), Connections: 8, DispatchWindow: ptr(dur(c.window))}, Duration: dur("100ms")}, time.Second)
			s := run(t, d, pl, time.Second).Phases[0].Summary
			if s.Arrivals != 100 || s.OK != 100 {
				t.Fatalf("window %s: arrivals %d ok %d, want 100 and 100", c.window, s.Arrivals, s.OK)
			}
			if n := s.SendEarly.Count(); n != c.early {
				t.Fatalf("window %s: %d requests sent early, want %d", c.window, n, c.early)
			}
			if c.early > 0 {
				mean, _ := s.SendEarly.Mean()
				mx, _ := s.SendEarly.Max()
				mn, _ := s.SendEarly.Min()
				if d := mean - c.mean; d < -1 || d > 1 || mx != c.max || mn != time.Millisecond { // the mean within a rounding nanosecond
					t.Fatalf("window %s: early by %s…%s, mean %s; want 1ms…%s, mean %s", c.window, mn, mx, mean, c.max, c.mean)
				}
			}
			if lag, _ := s.SendLag.Max(); lag != 0 {
				t.Fatalf("window %s: send lag max %s, want 0 (grouping never sends late)", c.window, lag)
			}
			lo, _ := s.Response.Min()
			hi, _ := s.Response.Max()
			if lo != 2*time.Millisecond || hi != 2*time.Millisecond {
				t.Fatalf("window %s: response times %s…%s, want the 2 ms service time throughout", c.window, lo, hi)
			}
		}
	})
}

// A sparse stretch is paced on each arrival's own instant even with a
// window: at 100/s (10 ms apart) a 1 ms window groups nothing and sends
// nothing early, and the pacer takes no lead.
func TestDispatchWindowSparseIsPrecise(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &fake.Driver{Service: constService(2 * time.Millisecond)}
		pl := onePhase(t, schema.Phase{Open: &schema.Open{Rate: constRate(100), Connections: 2, DispatchWindow: ptr(dur("1ms"))}, Duration: dur("1s")}, time.Second)
		s := run(t, d, pl, time.Second).Phases[0].Summary
		if s.OK != 100 || s.SendEarly.Count() != 0 {
			t.Fatalf("ok %d, sent early %d; want 100 and none", s.OK, s.SendEarly.Count())
		}
	})
}

// Drop mode takes no window: an early send frees its slot early and would
// change which arrivals find every slot busy (a 2 ms window had dropped
// 241 of 1200 where the schedule drops 400). An explicit one is refused;
// the high-rate default does not apply.
func TestDispatchWindowNotWithDrop(t *testing.T) {
	sc := &schema.Scenario{Version: 1, Name: "t", File: "t.yaml", Repeats: 1, Phases: []schema.Phase{
		{Open: &schema.Open{Rate: constRate(400), OnSaturation: "drop", DispatchWindow: ptr(dur("2ms"))}, Duration: dur("1s")},
	}}
	if _, err := Compile(sc, Limits{Timeout: time.Second}); err == nil || !strings.Contains(err.Error(), "drop") {
		t.Fatalf("a window with drop: %v, want refused", err)
	}
	pl := onePhase(t, schema.Phase{Open: &schema.Open{Rate: constRate(20000), OnSaturation: "drop"}, Duration: dur("1s")}, time.Second)
	if w := pl.Phases[0].DispatchWindow; w != 0 {
		t.Fatalf("drop at 20000/s got the default window %s, want 0", w)
	}
}

// A window past schema.MaxDispatchWindow is refused by Compile (plans
// built in Go skip the loader's check).
func TestDispatchWindowBounded(t *testing.T) {
	sc := &schema.Scenario{Version: 1, Name: "t", File: "t.yaml", Repeats: 1, Phases: []schema.Phase{
		{Open: &schema.Open{Rate: constRate(10), DispatchWindow: ptr(dur("11ms"))}, Duration: dur("1s")},
	}}
	if _, err := Compile(sc, Limits{Timeout: time.Second}); err == nil {
		t.Fatal("an 11ms dispatch window compiled")
	}
}

func ptr[T any](v T) *T { return &v }

// Unset, the window is the default (1 ms) above 5000/s and 0 at or below
// it; an explicit 0 keeps a high rate precise. The plan says which.
func TestDispatchWindowDefault(t *testing.T) {
	for _, c := range []struct {
		rate   float64
		window *schema.Duration
		want   time.Duration
		dflt   bool
	}{
		{5000, nil, 0, false},
		{5001, nil, time.Millisecond, true},
		{20000, ptr(dur("0s")), 0, false},
		{20000, ptr(dur("250us")), 250 * time.Microsecond, false},
	} {
		pl := onePhase(t, schema.Phase{Open: &schema.Open{Rate: constRate(c.rate), Connections: 1, DispatchWindow: c.window}, Duration: dur("1s")}, time.Second)
		p := pl.Phases[0]
		if p.DispatchWindow != c.want || p.DispatchDefault != c.dflt {
			t.Errorf("rate %g/s, window %v: %s (default %v), want %s (default %v)", c.rate, c.window, p.DispatchWindow, p.DispatchDefault, c.want, c.dflt)
		}
		if text := p.DispatchText(); (c.want > 0) != (text != "") || c.dflt != strings.Contains(text, "the default above 5000/s") {
			t.Errorf("rate %g/s: dispatch text %q", c.rate, text)
		}
	}
	// A ramp's top rate decides.
	pl := onePhase(t, schema.Phase{Open: &schema.Open{Rate: schema.RateSpec{From: 100, To: 8000, Ramp: true}, Connections: 1}, Duration: dur("1s")}, time.Second)
	if p := pl.Phases[0]; p.DispatchWindow != time.Millisecond || !p.DispatchDefault {
		t.Errorf("ramp to 8000/s: window %s (default %v), want the 1ms default", p.DispatchWindow, p.DispatchDefault)
	}
}

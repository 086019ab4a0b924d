package engine

import (
	"math"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/runner-dev/runner/drivers/fake"
	"github.com/runner-dev/runner/schema"
)

// sendTimes is a fake target's service function that notes when each
// request reached it, as offsets from start (fake time under synctest).
type sendTimes struct {
	start time.Time
	mu    sync.Mutex
	at    []time.Duration
}

func (s *sendTimes) service(uint64) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.at = append(s.at, time.Since(s.start))
	return time.Millisecond
}

// first and last return the earliest and the latest send offsets.
func (s *sendTimes) span(t *testing.T) (first, last time.Duration) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.at) == 0 {
		t.Fatal("no request reached the target")
	}
	first, last = s.at[0], s.at[0]
	for _, a := range s.at {
		first, last = min(first, a), max(last, a)
	}
	return first, last
}

// near fails unless got is within a microsecond of want (the schedule
// rounds offsets to the nanosecond; fake time is otherwise exact).
func near(t *testing.T, what string, got, want time.Duration) {
	t.Helper()
	if d := got - want; d < -time.Microsecond || d > time.Microsecond {
		t.Fatalf("%s at %s, want %s", what, got, want)
	}
}

// rate: 0/s is a pause: no arrival, no request, the connections dialled
// and kept, and the phase lasts its whole duration.
func TestPausePhase(t *testing.T) {
	for _, arrivals := range []string{"uniform", "poisson"} {
		t.Run(arrivals, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				d := &fake.Driver{}
				pl := onePhase(t, schema.Phase{Open: &schema.Open{Rate: constRate(0), Connections: 3, Arrivals: arrivals, Seed: 1}, Duration: dur("5s")}, time.Second)
				p := pl.Phases[0]
				if p.ExpectedRequests != 0 || p.ExpectedDuration != 5*time.Second {
					t.Fatalf("plan expects %d requests in %s, want 0 in 5s", p.ExpectedRequests, p.ExpectedDuration)
				}
				start := time.Now()
				pr := run(t, d, pl, time.Second).Phases[0]
				took := time.Since(start)
				s := pr.Summary
				if s.Arrivals != 0 || s.Requests != 0 || s.Dropped != 0 || d.Requests() != 0 {
					t.Fatalf("arrivals %d requests %d dropped %d target %d, want 0 each", s.Arrivals, s.Requests, s.Dropped, d.Requests())
				}
				if s.ConnectionsOpened != 3 || d.Dials() != 3 {
					t.Fatalf("connections opened %d, dials %d, want 3", s.ConnectionsOpened, d.Dials())
				}
				if s.Elapsed != 5*time.Second || took != 5*time.Second {
					t.Fatalf("elapsed %s, run took %s, want 5s: a pause lasts its duration", s.Elapsed, took)
				}
				if r, ok := MeasuredOfferedRate(pr); !ok || r != 0 {
					t.Fatalf("offered %g/s (%v), want 0/s", r, ok)
				}
			})
		})
	}
}

// Rate ramps from and to 0/s run exactly their closed-form schedules, and
// the pacer neither spins nor waits past the end while the rate is 0/s.
func TestRampsWithZeroEnds(t *testing.T) {
	tests := []struct {
		name        string
		from, to    schema.Rate
		n           int64
		first, last time.Duration
	}{
		// 0 → 100/s over 10 s: Λ(t) = 5t², Λ(10) = 500. Nothing is sent at
		// 0/s: the first arrival is at √(2/slope) = √0.2 s, and ⌈500 − 1⌉
		// = 499 arrivals come before the end, the last at √(499/5) s.
		{"from zero", 0, 100, 499, secs(math.Sqrt(0.2)), secs(math.Sqrt(499.0 / 5))},
		// 100 → 0/s over 10 s: Λ(t) = 100t − 5t², Λ(10) = 500. Arrival 0 at
		// the start (100/s there), 500 in all, the last at (100 − √20)/10 s,
		// before the end.
		{"to zero", 100, 0, 500, 0, secs((100 - math.Sqrt(20)) / 10)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				st := &sendTimes{start: time.Now()}
				d := &fake.Driver{Service: st.service}
				pl := onePhase(t, schema.Phase{Open: &schema.Open{Rate: schema.RateSpec{From: tt.from, To: tt.to, Ramp: true}, Connections: 2}, Duration: dur("10s")}, time.Second)
				if got := pl.Phases[0].ExpectedRequests; got != tt.n {
					t.Fatalf("plan expects %d requests, want %d", got, tt.n)
				}
				s := run(t, d, pl, time.Second).Phases[0].Summary
				took := time.Since(st.start)
				if s.Arrivals != tt.n || s.OK != tt.n || d.Requests() != tt.n {
					t.Fatalf("arrivals %d ok %d target %d, want %d", s.Arrivals, s.OK, d.Requests(), tt.n)
				}
				first, last := st.span(t)
				near(t, "first arrival", first, tt.first)
				near(t, "last arrival", last, tt.last)
				if s.Elapsed != 10*time.Second || took != 10*time.Second {
					t.Fatalf("elapsed %s, run took %s, want 10s", s.Elapsed, took)
				}
			})
		})
	}
}

// A pause needs a duration: a count bound alone would never be reached.
// The loader says so with the position; a plan built by hand is refused too.
func TestPauseNeedsDuration(t *testing.T) {
	sc := &schema.Scenario{Version: 1, Name: "t", File: "t.yaml", Repeats: 1, Phases: []schema.Phase{
		{Open: &schema.Open{Rate: constRate(0)}, Requests: 10},
	}}
	_, err := Compile(sc, Limits{MaxInflight: 1, Timeout: time.Second})
	if err == nil || err.Error() != "t.yaml: phases[0]: open.rate: 0/s is a pause, and a pause needs the phase's duration" {
		t.Fatalf("Compile: %v", err)
	}
}

// runner plan shows a pause as one, and the closed-form counts of ramps
// from and to 0/s.
func TestDescribeZeroRates(t *testing.T) {
	sc := &schema.Scenario{Version: 1, Name: "z", File: "z.yaml", Repeats: 1, Phases: []schema.Phase{
		{Name: "pause", Open: &schema.Open{Rate: constRate(0)}, Duration: dur("5s")},
		{Name: "up", Open: &schema.Open{Rate: schema.RateSpec{From: 0, To: 100, Ramp: true}, Arrivals: "uniform"}, Duration: dur("10s")},
		{Name: "down", Open: &schema.Open{Rate: schema.RateSpec{From: 100, To: 0, Ramp: true}, Arrivals: "uniform"}, Duration: dur("10s")},
	}}
	pl, err := Compile(sc, Limits{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	out := pl.Describe()
	for _, want := range []string{
		"rate         0/s: a pause of 5s, 0 requests (the connections stay open)\n    bound        duration 5s",
		"expected     0 requests; time 5s",
		"rate         0/s → 100/s linear over 10s, uniform arrivals (none at 0/s: the first at 447.214ms)",
		"expected     499 requests; time 10s",
		"rate         100/s → 0/s linear over 10s, uniform arrivals",
		"expected     500 requests; time 10s",
		"expected requests: 999 per repeat",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("plan lacks %q:\n%s", want, out)
		}
	}
}

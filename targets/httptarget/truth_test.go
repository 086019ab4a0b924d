package httptarget

import (
	"slices"
	"sync"
	"testing"
	"time"
)

func TestParseArgs_TruthKnobs(t *testing.T) {
	cfg, err := ParseArgs([]string{"--workers", "1", "--delay", "10ms", "--stall-every", "2s", "--stall-for", "500ms", "--stall-origin", "first"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Workers != 1 || cfg.StallEvery != 2*time.Second || cfg.StallFor != 500*time.Millisecond || cfg.StallOrigin != StallFromFirst {
		t.Errorf("ParseArgs = %+v", cfg)
	}
	if cfg, _ := ParseArgs(nil); cfg.Workers != 0 || cfg.StallEvery != 0 || cfg.StallOrigin != "" {
		t.Errorf("defaults = %+v", cfg)
	}
	for _, args := range [][]string{
		{"--workers", "2"},
		{"--workers", "-1"},
		{"--stall-every", "2s"},                       // no --stall-for
		{"--stall-for", "500ms"},                      // no --stall-every
		{"--stall-every", "1s", "--stall-for", "1s"},  // never unstalled
		{"--stall-every", "-1s", "--stall-for", "1s"}, // negative
		{"--stall-every", "2", "--stall-for", "1s"},   // no unit
		{"--stall-origin", "phase"},
	} {
		if _, err := ParseArgs(args); err == nil {
			t.Errorf("ParseArgs(%q): want error", args)
		}
	}
	if u := Usage(); !contains(u, "-workers") || !contains(u, "-stall-every") || !contains(u, "-stall-for") || !contains(u, "-stall-origin") {
		t.Errorf("Usage lacks a truth knob:\n%s", u)
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// TestDue_SingleWorker: the single worker's schedule is exact and FIFO:
// c_k = max(a_k, c_{k−1}) + S, whatever the arrivals' spacing.
func TestDue_SingleWorker(t *testing.T) {
	ms := time.Millisecond
	t0 := time.Now()
	tg := &target{cfg: Config{Workers: 1}.withDefaults(), start: t0}
	for _, c := range []struct{ arrive, d, want time.Duration }{
		{0, 10 * ms, 10 * ms},         // idle worker: at once
		{1 * ms, 10 * ms, 20 * ms},    // behind the first
		{2 * ms, 10 * ms, 30 * ms},    // behind both
		{50 * ms, 10 * ms, 60 * ms},   // idle again
		{55 * ms, 3 * ms, 63 * ms},    // service time is its own delay
		{200 * ms, 0, 200 * ms},       // no delay, idle
		{200 * ms, 10 * ms, 210 * ms}, // same instant: behind it
	} {
		if got := tg.due(t0.Add(c.arrive), c.d).Sub(t0); got != c.want {
			t.Errorf("arrival at %s, S %s: due at %s, want %s", c.arrive, c.d, got, c.want)
		}
	}
	// The worker waited 50 − 30 ms and 200 − 63 ms with nothing queued.
	if got := tg.truth.idle; got != 157*ms {
		t.Errorf("worker idle %s, want 157ms", got)
	}
	// Without the knob every request is served at once.
	all := &target{cfg: Config{}.withDefaults(), start: t0}
	for i := 0; i < 3; i++ {
		if got := all.due(t0, 10*ms).Sub(t0); got != 10*ms {
			t.Errorf("workers 0, request %d: due at %s, want 10ms", i, got)
		}
	}
}

// TestDue_Stall: a response due inside [kP, kP+D) leaves at kP+D, from
// either origin.
func TestDue_Stall(t *testing.T) {
	ms := time.Millisecond
	t0 := time.Now()
	tg := &target{cfg: Config{StallEvery: 2000 * ms, StallFor: 500 * ms}.withDefaults(), start: t0}
	for _, c := range []struct{ due, want time.Duration }{
		{0, 500 * ms},
		{499 * ms, 500 * ms},
		{500 * ms, 500 * ms}, // the stall's end is not in it
		{1999 * ms, 1999 * ms},
		{2000 * ms, 2500 * ms},
		{2250 * ms, 2500 * ms},
		{4100 * ms, 4500 * ms},
		{-1 * ms, -1 * ms}, // before the origin: never held
	} {
		if got := tg.afterStall(t0.Add(c.due)).Sub(t0); got != c.want {
			t.Errorf("due at %s: leaves at %s, want %s", c.due, got, c.want)
		}
	}
	// Origin "first": the stall clock starts at the first counted request;
	// with a single worker the stall holds the response, not the schedule.
	first := &target{cfg: Config{Workers: 1, StallEvery: 100 * ms, StallFor: 30 * ms, StallOrigin: StallFromFirst}.withDefaults(), start: t0.Add(-time.Hour)}
	a := t0.Add(7 * time.Second)
	for _, c := range []struct{ arrive, d, want time.Duration }{
		{0, 10 * ms, 30 * ms},         // served by 10 ms, held to the stall's end
		{1 * ms, 10 * ms, 30 * ms},    // served by 20 ms, held too
		{2 * ms, 10 * ms, 30 * ms},    // served by exactly 30 ms: leaves then
		{3 * ms, 10 * ms, 40 * ms},    // after the stall
		{95 * ms, 10 * ms, 130 * ms},  // due at 105 ms, in the second stall
		{150 * ms, 10 * ms, 160 * ms}, // between stalls
	} {
		if got := first.due(a.Add(c.arrive), c.d).Sub(a); got != c.want {
			t.Errorf("origin first, arrival at %s: leaves at %s, want %s", c.arrive, got, c.want)
		}
	}
}

// TestSingleWorker_Served: through Serve, concurrent requests on separate
// connections are answered one service time apart. The
// server's instants are exact; the client's readings add loopback and
// scheduling noise, so each gap is only bounded below by S/2 (a reading
// would have to be 15 ms late to fail it), the last answer by n·S (it
// cannot be early) and the whole above loosely.
func TestSingleWorker_Served(t *testing.T) {
	const s = 30 * time.Millisecond
	base := start(t, Config{Workers: 1, Delay: s})
	c := client(t)
	get(t, c, base+"/healthz") // warm a connection up
	const n = 4
	done := make([]time.Duration, n)
	t0 := time.Now()
	var wg sync.WaitGroup
	for i := range n {
		// 8 ms apart, so the arrival order is the sending order.
		time.Sleep(8 * time.Millisecond)
		wg.Add(1)
		go func() {
			defer wg.Done()
			get(t, client(t), base+"/x")
			done[i] = time.Since(t0)
		}()
	}
	wg.Wait()
	// One worker answers one request per service time, whichever came
	// first: the answers, in the order they came, are S apart. (A client
	// goroutine delayed more than 8 ms on a busy machine sends out of
	// order; the worker's spacing holds all the same.)
	slices.Sort(done)
	for i := 1; i < n; i++ {
		if gap := done[i] - done[i-1]; gap < s/2 {
			t.Errorf("answer %d came %s after answer %d, want about %s (one service time, one worker); all: %v", i, gap, i-1, s, done)
		}
	}
	if done[n-1] < n*s {
		t.Errorf("last of %d answered after %s, want ≥ %s", n, done[n-1], n*s)
	}
	if done[n-1] > n*s+2*time.Second {
		t.Errorf("last of %d answered after %s", n, done[n-1])
	}
}

// TestStall_Served: with origin "first", the first counted request opens a
// stall and is held for its length; a request between stalls is not held.
func TestStall_Served(t *testing.T) {
	base := start(t, Config{StallEvery: 400 * time.Millisecond, StallFor: 150 * time.Millisecond, StallOrigin: StallFromFirst})
	c := client(t)
	get(t, c, base+"/healthz") // not counted: starts nothing
	t0 := time.Now()
	get(t, c, base+"/x")
	if el := time.Since(t0); el < 150*time.Millisecond {
		t.Errorf("first request answered after %s, want ≥ 150ms (the stall)", el)
	}
	// Now 150 ms (+ noise) in; the next stall begins at 400 ms.
	if el := time.Since(t0); el < 300*time.Millisecond {
		t1 := time.Now()
		get(t, c, base+"/y")
		if el := time.Since(t1); el > 100*time.Millisecond && time.Since(t0) < 400*time.Millisecond {
			t.Errorf("a request between stalls took %s", el)
		}
	}
}

// TestRecordLate_KeepsTheWorst: late_max_us is the most any response left
// after its due instant, in µs; a forever delay (zero due) is not booked.
func TestRecordLate_KeepsTheWorst(t *testing.T) {
	var tg target
	now := time.Now()
	tg.recordLate(now.Add(-5 * time.Millisecond))
	tg.recordLate(now.Add(-1 * time.Millisecond))
	tg.recordLate(time.Time{})
	got := tg.lateMaxUs.Load()
	if got < 5000 || got > 5000+int64(time.Minute/time.Microsecond) {
		t.Errorf("late_max_us = %d, want at least 5000 (the worst)", got)
	}
	if tg.recordLate(now.Add(time.Hour)); tg.lateMaxUs.Load() != got {
		t.Errorf("a response due in the future changed late_max_us to %d", tg.lateMaxUs.Load())
	}
}

package engine

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/runner-dev/runner/drivers/fake"
	"github.com/runner-dev/runner/engine/rules"
	"github.com/runner-dev/runner/schema"
)

// seqLog is a fake target's service function that notes every sequence
// number it serves.
type seqLog struct {
	mu   sync.Mutex
	seen map[uint64]int
}

func (l *seqLog) service(seq uint64) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seen == nil {
		l.seen = map[uint64]int{}
	}
	l.seen[seq]++
	return 5 * time.Millisecond
}

// runSegment runs segment s of pl against a fake target of 5 ms
// service time noting sequence numbers in log.
func runSegment(t *testing.T, pl *Plan, s Segment, log *seqLog) *Result {
	t.Helper()
	r := &Runner{Driver: &fake.Driver{Service: log.service, Inflight: 4}, Timeout: time.Second, NewSleeper: NewTimerSleeper, Segment: s}
	res, err := r.Run(context.Background(), pl)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// The segments of a run, merged, are the run one generator makes: the
// same arrivals, requests and responses per phase, every sequence number
// once, the fingerprints of the segments' arrivals adding up to the whole
// schedule's, and (the target answering in a constant time) the same
// response-time histogram.
func TestSegmentsMergeToTheWholeRun(t *testing.T) {
	cases := map[string]schema.Phase{
		"open uniform":           {Open: &schema.Open{Rate: constRate(200), Connections: 5}, Duration: dur("2s")},
		"open poisson":           {Open: &schema.Open{Rate: constRate(300), Connections: 40, Arrivals: "poisson", Seed: 7}, Duration: dur("2s")},
		"open ramp, count bound": {Open: &schema.Open{Rate: schema.RateSpec{From: 50, To: 400, Ramp: true}, Connections: 4}, Duration: dur("3s"), Requests: 401},
		"closed count bound":     {Closed: &schema.Closed{Connections: 12}, Requests: 103},
		"closed ramp":            {Ramp: &schema.Ramp{Connections: schema.Staircase{From: 1, To: 7, Step: 3, Every: dur("500ms")}}, Duration: dur("2s")},
	}
	for name, ph := range cases {
		for _, n := range []int{1, 2, 3, 4} {
			t.Run(name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					pl := onePhase(t, ph, time.Second)
					var wholeLog seqLog
					whole := runSegment(t, pl, Segment{}, &wholeLog)
					var parts []*Result
					var log seqLog
					var fps []Fingerprint
					for k := range n {
						s := Segment{K: k, N: n}
						parts = append(parts, runSegment(t, pl, s, &log))
						if fp, ok := ArrivalFingerprint(s.Phase(&pl.Phases[0]), 1); ok {
							fps = append(fps, fp)
						}
					}
					merged, err := MergeResults(pl, parts)
					if err != nil {
						t.Fatal(err)
					}
					w, m := whole.Phases[0], merged.Phases[0]
					if m.Phase != &pl.Phases[0] {
						t.Fatal("the merged phase is not the plan's")
					}
					ws, ms := w.Summary, m.Summary
					if pl.Phases[0].Model == Closed && pl.Phases[0].Requests == 0 {
						// Bounded by time, a closed phase's count depends
						// on which requests end before its end, each
						// connection's last one or not.
						if d := ms.Requests - ws.Requests; d < -7 || d > 7 || ms.Arrivals != ms.Requests || ws.OK != ws.Requests {
							t.Fatalf("N=%d: merged requests %d (arrivals %d), one generator %d", n, ms.Requests, ms.Arrivals, ws.Requests)
						}
						return
					}
					if ws.Arrivals != ms.Arrivals || ws.Requests != ms.Requests || ws.OK != ms.OK || ws.Errors != ms.Errors {
						t.Fatalf("N=%d: merged arrivals/requests/ok/errors %d/%d/%d/%d, one generator %d/%d/%d/%d",
							n, ms.Arrivals, ms.Requests, ms.OK, ms.Errors, ws.Arrivals, ws.Requests, ws.OK, ws.Errors)
					}
					if m.ConnectionsRequested != w.ConnectionsRequested || m.ConnectionsEstablished != w.ConnectionsEstablished {
						t.Fatalf("N=%d: connections %d/%d, one generator %d/%d", n, m.ConnectionsEstablished, m.ConnectionsRequested, w.ConnectionsEstablished, w.ConnectionsRequested)
					}
					if len(log.seen) != int(ms.Requests) || len(log.seen) != len(wholeLog.seen) {
						t.Fatalf("N=%d: %d distinct sequence numbers for %d requests (one generator: %d)", n, len(log.seen), ms.Requests, len(wholeLog.seen))
					}
					for seq, c := range log.seen {
						if c != 1 || seq == 0 {
							t.Fatalf("N=%d: sequence number %d served %d times", n, seq, c)
						}
					}
					for _, q := range []float64{50, 99, 100} {
						a, _ := ws.Response.Percentile(q)
						b, _ := ms.Response.Percentile(q)
						if a != b || ws.Response.Count() != ms.Response.Count() {
							t.Fatalf("N=%d: p%g %s over %d, one generator %s over %d", n, q, b, ms.Response.Count(), a, ws.Response.Count())
						}
					}
					if pl.Phases[0].Model == Open {
						wfp, ok := ArrivalFingerprint(&pl.Phases[0], 1)
						if !ok || len(fps) != n {
							t.Fatal("no fingerprint of an open phase")
						}
						sum := fps[0]
						for _, fp := range fps[1:] {
							if sum, err = AddFingerprints(sum, fp); err != nil {
								t.Fatal(err)
							}
						}
						if sum != wfp || wfp.Count != ws.Arrivals {
							t.Fatalf("N=%d: segments' fingerprints add up to %+v, the schedule's is %+v (%d arrivals ran)", n, sum, wfp, ws.Arrivals)
						}
						if n > 1 && fps[0] == wfp {
							t.Fatal("a segment's fingerprint is the whole schedule's")
						}
					}
				})
			})
		}
	}
}

// A plan splits into no more segments than an open phase has
// connections.
func TestSegmentNeedsAConnectionEach(t *testing.T) {
	pl := onePhase(t, schema.Phase{Open: &schema.Open{Rate: constRate(10), Connections: 3}, Duration: dur("1s")}, time.Second)
	if err := (Segment{K: 0, N: 3}).Check(pl); err != nil {
		t.Fatal(err)
	}
	r := &Runner{Driver: &fake.Driver{}, Segment: Segment{K: 3, N: 4}}
	if _, err := r.Run(context.Background(), pl); err == nil {
		t.Fatal("4 segments of 3 connections ran")
	}
	closed := onePhase(t, schema.Phase{Closed: &schema.Closed{Connections: 8}, Requests: 3}, time.Second)
	if err := (Segment{K: 3, N: 4}).Check(closed); err == nil {
		t.Fatal("a bound of 3 requests split into 4 segments: one would run unbounded")
	}
	uneven := onePhase(t, schema.Phase{Closed: &schema.Closed{Connections: 3}, Requests: 1500}, time.Second)
	if err := (Segment{K: 0, N: 2}).Check(uneven); err == nil {
		t.Fatal("1500 requests split evenly over segments of 2 and 1 connections")
	}
}

// A segment's fingerprint changes when its arrivals do: another segment
// index, another seed, one arrival fewer.
func TestFingerprintSeesTheArrivals(t *testing.T) {
	ph := schema.Phase{Open: &schema.Open{Rate: constRate(100), Connections: 2, Arrivals: "poisson", Seed: 1}, Duration: dur("1s")}
	pl := onePhase(t, ph, time.Second)
	a, _ := ArrivalFingerprint(Segment{K: 0, N: 2}.Phase(&pl.Phases[0]), 1)
	b, _ := ArrivalFingerprint(Segment{K: 1, N: 2}.Phase(&pl.Phases[0]), 1)
	c, _ := ArrivalFingerprint(Segment{K: 0, N: 2}.Phase(&pl.Phases[0]), 2) // another draw
	ph.Requests = 10
	d, _ := ArrivalFingerprint(Segment{K: 0, N: 2}.Phase(&onePhase(t, ph, time.Second).Phases[0]), 1)
	if a.Sum == b.Sum || a.Sum == c.Sum || a.Sum == d.Sum || d.Count != 5 {
		t.Fatalf("fingerprints do not tell the arrivals apart: %+v %+v %+v %+v", a, b, c, d)
	}
}

// Started at an instant, every phase starts on the timetable, exactly
// (the clock here is synctest's); a first phase not ready in time does
// not start late: nothing is sent.
func TestStartAtTimetable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sc := &schema.Scenario{Version: 1, Name: "t", File: "t.yaml", Repeats: 2, Phases: []schema.Phase{
			{Name: "warm", Warmup: true, Open: &schema.Open{Rate: constRate(100), Connections: 2}, Duration: dur("1s")},
			{Name: "steady", Open: &schema.Open{Rate: constRate(100), Connections: 2}, Duration: dur("2s")},
		}}
		pl, err := Compile(sc, Limits{MaxInflight: 64, Timeout: 500 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now().Add(3 * time.Second)
		d := &fake.Driver{Service: constService(time.Millisecond)}
		scrapes := 0.0 // a target that counts only our scrapes
		r := &Runner{Driver: d, Timeout: 500 * time.Millisecond, NewSleeper: NewTimerSleeper, StartAt: start, PhaseGap: time.Second,
			Counters: func(context.Context) (map[string]float64, error) {
				scrapes++
				return map[string]float64{"scrapes": scrapes}, nil
			}}
		res, err := r.Run(context.Background(), pl)
		if err != nil {
			t.Fatal(err)
		}
		// On a timetable the ready fetch falls inside the delta too.
		for i, pr := range res.Phases {
			if pr.Fetches != 2 || pr.Server["scrapes"] != 2 {
				t.Errorf("phase %d: fetches %d, scrapes in the delta %v; want 2", i, pr.Fetches, pr.Server["scrapes"])
			}
		}
		// warm 1 s + grace 0.5 s + gap 1 s; steady 2 s + 0.5 s + 1 s.
		want := []time.Duration{0, 2500 * time.Millisecond, 6 * time.Second, 8500 * time.Millisecond}
		if len(res.Phases) != 4 {
			t.Fatalf("%d phases", len(res.Phases))
		}
		for i, pr := range res.Phases {
			if got := pr.Start.Sub(start); got != want[i] || pr.StartLag != 0 || !pr.Timetabled {
				t.Fatalf("phase %d started at %s (lag %s), want %s on the timetable", i, got, pr.StartLag, want[i])
			}
		}

		d = &fake.Driver{Service: constService(time.Millisecond)}
		r = &Runner{Driver: d, Timeout: 500 * time.Millisecond, NewSleeper: NewTimerSleeper, StartAt: time.Now().Add(-time.Millisecond)}
		res, err = r.Run(context.Background(), pl)
		if !errors.Is(err, ErrStartMissed) || len(res.Phases) != 0 || d.Requests() != 0 {
			t.Fatalf("a start instant already past: err %v, %d phases, %d requests; want ErrStartMissed and nothing sent", err, len(res.Phases), d.Requests())
		}
	})
}

// A later phase not ready on its instant (the phase before drained past
// its slot) is released late, but its arrivals keep their instants on
// the timetable: those due meanwhile are sent at once, each counted from
// its own intended start, and booked as the generator's lateness, each
// once (in drop mode too, where the pacer deems every arrival reached
// early: it booked the up-front ones twice).
func TestLateReleaseKeepsTheTimetable(t *testing.T) {
	for _, mode := range []string{"queue", "drop"} {
		t.Run(mode, func(t *testing.T) { lateRelease(t, mode) })
	}
}

func lateRelease(t *testing.T, mode string) {
	synctest.Test(t, func(t *testing.T) {
		sc := &schema.Scenario{Version: 1, Name: "t", File: "t.yaml", Repeats: 1, Phases: []schema.Phase{
			// One connection, 10/s, 900 ms each: a queue that drains
			// long past the phase's slot on the timetable.
			{Name: "slow", Open: &schema.Open{Rate: constRate(10), Connections: 1}, Duration: dur("1s")},
			{Name: "next", Open: &schema.Open{Rate: constRate(100), Connections: 50, OnSaturation: mode}, Duration: dur("2s")},
		}}
		pl, err := Compile(sc, Limits{MaxInflight: 64, Timeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now().Add(time.Second)
		slow := func(seq uint64) time.Duration {
			if seq <= 10 {
				return 900 * time.Millisecond
			}
			return time.Millisecond
		}
		r := &Runner{Driver: &fake.Driver{Service: slow}, Timeout: time.Second, NewSleeper: NewTimerSleeper, StartAt: start, PhaseGap: 100 * time.Millisecond}
		res, err := r.Run(context.Background(), pl)
		if err != nil {
			t.Fatal(err)
		}
		next := res.Phases[1]
		instant := start.Add(pl.Timetable(100 * time.Millisecond)[1])
		if next.StartLag < 100*time.Millisecond || !next.Start.Equal(instant.Add(next.StartLag)) {
			t.Fatalf("released %s late at %s; its instant %s", next.StartLag, next.Start, instant)
		}
		s := next.Summary
		late := Due(pl.Phases[1].Schedule(1), next.StartLag-LatenessLimit, 0)
		// In drop mode the burst of the lag's arrivals may find the
		// connections busy: dropped, not lost.
		if s.Arrivals != 200 || s.Requests+s.Dropped != 200 || (mode == "queue" && s.Dropped != 0) || next.LateArrivals != late || next.LatenessMax != next.StartLag {
			t.Fatalf("arrivals %d requests %d late %d (want %d) lateness %s", s.Arrivals, s.Requests, next.LateArrivals, late, next.LatenessMax)
		}
		// The first arrival was due at the instant and sent at the
		// release: its response time holds the lag.
		if mx, _ := s.Response.Max(); mx < next.StartLag {
			t.Fatalf("longest response %s, shorter than the lag %s the first arrival waited", mx, next.StartLag)
		}
		ws := Checks(pl, res)
		if !slices.ContainsFunc(ws, func(w Warning) bool { return w.Code == "schedule-lateness" && w.Invalidates }) ||
			!slices.ContainsFunc(ws, func(w Warning) bool { return w.Code == "late-start" && !w.Invalidates }) {
			t.Fatalf("warnings %+v: want the late start told and its late arrivals invalidating", ws)
		}
	})
}

// A closed phase released late lost that time from its window: more than
// 1 % of it makes a pass inconclusive.
func TestLateStartOfAClosedPhase(t *testing.T) {
	pl := onePhase(t, schema.Phase{Closed: &schema.Closed{Connections: 1}, Duration: dur("1s")}, time.Second)
	for _, c := range []struct {
		lag     time.Duration
		told    bool
		invalid bool
	}{{5 * time.Millisecond, false, false}, {15 * time.Millisecond, true, true}} {
		pr := &PhaseResult{Repeat: 1, Phase: &pl.Phases[0], Summary: emptySummary(), StartLag: c.lag, Timetabled: true}
		ws := Checks(pl, &Result{Phases: []*PhaseResult{pr}})
		i := slices.IndexFunc(ws, func(w Warning) bool { return w.Code == "late-start" })
		if (i >= 0) != c.told || (i >= 0 && ws[i].Invalidates != c.invalid) {
			t.Fatalf("lag %s: warnings %+v", c.lag, ws)
		}
	}
}

// Counters: the largest reading before and after a phase give its delta;
// a counter a dial-in moved (its reading after the dial-in differs from
// the one before) whose segments' readings differ is known only within
// their spread, and a rule on it is inconclusive, never judged on a
// guess.
func TestMergedCountersAroundDialIns(t *testing.T) {
	pl := onePhase(t, schema.Phase{Open: &schema.Open{Rate: constRate(10), Connections: 4}, Duration: dur("1s")}, time.Second)
	m := func(req, conns float64) map[string]float64 {
		return map[string]float64{"requests": req, "connections": conns}
	}
	part := func(before, ready, after map[string]float64, requests int64) *Result {
		s := emptySummary()
		s.Requests, s.Arrivals, s.OK = requests, requests, requests
		return &Result{Phases: []*PhaseResult{{Repeat: 1, Phase: &pl.Phases[0], Summary: s, Timetabled: true,
			ServerBefore: before, ServerReady: ready, ServerAfter: after, Fetches: 2}}}
	}
	// Segment 0 read 0 connections, dialled 2; segment 1 read after that
	// (2), dialled 2 more. 10 requests each.
	a := part(m(0, 0), m(0, 2), m(20, 4), 10)
	b := part(m(0, 2), m(0, 4), m(20, 4), 10)
	res, err := MergeResults(pl, []*Result{a, b})
	if err != nil {
		t.Fatal(err)
	}
	pr := res.Phases[0]
	if pr.Server["requests"] != 20 || pr.ServerUncertain["requests"] != 0 {
		t.Fatalf("requests delta %v (uncertain %v), want exactly 20", pr.Server["requests"], pr.ServerUncertain)
	}
	if pr.ServerUncertain["connections"] != 2 {
		t.Fatalf("connections uncertain by %v, want the spread of the readings, 2", pr.ServerUncertain["connections"])
	}
	env := RuleEnv(pr)
	r := mustRule(t, "server.connections == connections_opened")
	if got := r.Eval(env); got.Status != rules.Inconclusive || !strings.Contains(got.Reason, "known only within ±2") {
		t.Fatalf("rule on an uncertain counter: %+v", got)
	}
	if got := mustRule(t, "server.requests == requests").Eval(env); got.Status != rules.Pass {
		t.Fatalf("rule on an exact counter: %+v", got)
	}
	// Each segment's ready and after fetches fall inside the merged
	// delta: a target counting its scrapes counted all four.
	if pr.Fetches != 4 {
		t.Fatalf("fetches %d, want the segments' 2 + 2", pr.Fetches)
	}
	if got := mustRule(t, "fetches == 4").Eval(env); got.Status != rules.Pass {
		t.Fatalf("fetches in a rule: %+v", got)
	}
}

func mustRule(t *testing.T, src string) *rules.Rule {
	t.Helper()
	r, err := rules.Compile(src)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestServerDeltasThatCannotBeKnown, from the breaker: a counter that went
// backwards (1000 → 10, a restarted target) gave a delta of −990 that
// passed `server.x < 100`; a series missing or NaN before the phase read
// as 0, so its whole value became the delta; readings past 2⁵³ lost 50 to
// rounding and passed `server.x < 1`. Each is unknown now, and a rule
// that reads it is inconclusive, saying why; a series that a non-empty
// reading lacked still counts from 0 (created at its first event).
func TestServerDeltasThatCannotBeKnown(t *testing.T) {
	before := map[string]float64{"back": 1000, "nan": math.NaN(), "huge": 1e20, "ok": 5, "inf": 1}
	after := map[string]float64{"back": 10, "nan": 150, "huge": 1e20 + 1e5, "ok": 55, "inf": math.Inf(1), "new503": 3}
	d, unknown := serverDeltas(before, after)
	if len(d) != 2 || d["ok"] != 50 || d["new503"] != 3 {
		t.Errorf("deltas %v, want ok 50 and new503 3 (a series created at its first event)", d)
	}
	for k, want := range map[string]string{"back": "went backwards", "nan": "not a finite number", "inf": "not a finite number", "huge": "beyond 2^53"} {
		if !strings.Contains(unknown[k], want) {
			t.Errorf("%s: unknown %q, want %q", k, unknown[k], want)
		}
	}
	if d, unknown := serverDeltas(map[string]float64{}, map[string]float64{"x": 50}); len(d) != 0 || !strings.Contains(unknown["x"], "held no counter") {
		t.Errorf("after an empty reading: deltas %v unknown %v, want x unknown", d, unknown)
	}
	pl := onePhase(t, schema.Phase{Open: &schema.Open{Rate: constRate(10), Connections: 1}, Duration: dur("1s")}, time.Second)
	s := emptySummary()
	s.Requests, s.Arrivals, s.OK = 10, 10, 10
	pr := &PhaseResult{Repeat: 1, Phase: &pl.Phases[0], Summary: s, ServerBefore: before, ServerAfter: after, Fetches: 1}
	pr.Server, pr.ServerUnknown = serverDeltas(before, after)
	env := RuleEnv(pr)
	if got := mustRule(t, "server.back < 100").Eval(env); got.Status != rules.Inconclusive || !strings.Contains(got.Reason, "went backwards") {
		t.Errorf("rule on a counter that went backwards: %+v", got)
	}
	if got := mustRule(t, "server.ok == 50").Eval(env); got.Status != rules.Pass {
		t.Errorf("rule on a known counter: %+v", got)
	}
	// Counters not fetched at all: fetches is not available either, so
	// a rule on it alone cannot pass.
	pr.Server, pr.ServerUnknown, pr.Fetches = nil, nil, 0
	if got := mustRule(t, "fetches == 0").Eval(RuleEnv(pr)); got.Status == rules.Pass {
		t.Errorf("fetches == 0 with no counters fetched: %+v", got)
	}
}

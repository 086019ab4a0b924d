package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rs/zerolog"

	"github.com/runner-dev/runner/drivers/fake"
	"github.com/runner-dev/runner/schema"
)

// logLines records each log line with the fake time it was written at,
// counted from start.
type logLines struct {
	mu    sync.Mutex
	start time.Time
	lines []logLine
}

type logLine struct {
	at  time.Duration
	msg string
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, logLine{time.Since(l.start), string(p)})
	return len(p), nil
}

// find returns the lines containing s.
func (l *logLines) find(s string) []logLine {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []logLine
	for _, ln := range l.lines {
		if strings.Contains(ln.msg, s) {
			out = append(out, ln)
		}
	}
	return out
}

func (l *logLines) String() string {
	var b strings.Builder
	for _, ln := range l.lines {
		fmt.Fprintf(&b, "%6s %s", ln.at, ln.msg)
	}
	return b.String()
}

// warningOf returns the message of the run's first warning with code.
func warningOf(pl *Plan, res *Result, code string) string {
	for _, w := range Checks(pl, res) {
		if w.Code == code {
			return w.Message
		}
	}
	return ""
}

// The defect pinned: connections the server accepted and closed at once
// counted as established, so a run claims a concurrency it never had.
//
// Accepted, then closed: dials 49 to 52 give connections the server
// closed at once. The barrier's probe finds two dead, re-dials each once,
// finds the re-dials dead too, and counts 48 established, not 50.
func TestField_ConcurrencyNotReached_AcceptedThenClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &fake.Driver{Service: constService(10 * time.Millisecond), Dead: func(n int64) bool { return n > 48 && n <= 52 }}
		pl := onePhase(t, schema.Phase{Closed: &schema.Closed{Connections: 50}, Requests: 500}, time.Second)
		res := run(t, d, pl, time.Second)
		pr := res.Phases[0]
		s := pr.Summary
		if pr.ConnectionsEstablished != 48 || pr.ConnectionsClosedEarly != 2 {
			t.Fatalf("established %d closed early %d, want 48 and 2", pr.ConnectionsEstablished, pr.ConnectionsClosedEarly)
		}
		// 52 dials succeeded (the dead ones were accepted); none failed.
		if s.ConnectFailures != 0 || d.Dials() < 52 {
			t.Fatalf("connect failures %d dials %d", s.ConnectFailures, d.Dials())
		}
		want := "48 of 50 connections established: the requested concurrency was not reached; 2 were accepted and then closed by the server"
		if got := warningOf(pl, res, "connections-missing"); !strings.Contains(got, want) {
			t.Fatalf("connections-missing warning %q, want it to say %q", got, want)
		}
	})
}

// A connection found dead at the barrier whose re-dial is sound counts
// as established: only what stays dead is missing.
func TestProbeRedialRecovers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &fake.Driver{Dead: func(n int64) bool { return n == 3 }}
		pl := onePhase(t, schema.Phase{Closed: &schema.Closed{Connections: 10}, Requests: 100}, time.Second)
		res := run(t, d, pl, time.Second)
		pr := res.Phases[0]
		if pr.ConnectionsEstablished != 10 || pr.ConnectionsClosedEarly != 0 || d.Dials() != 11 {
			t.Fatalf("established %d closed early %d dials %d, want 10/0/11", pr.ConnectionsEstablished, pr.ConnectionsClosedEarly, d.Dials())
		}
		if s := pr.Summary; s.OK != 100 || s.Errors != 0 || s.ConnectionsOpened != 11 {
			t.Fatalf("ok %d errors %d opened %d, want 100/0/11", s.OK, s.Errors, s.ConnectionsOpened)
		}
		if w := warningOf(pl, res, "connections-missing"); w != "" {
			t.Fatalf("unexpected warning %q", w)
		}
	})
}

// Dials that hang (a port that drops SYNs) end with the request timeout,
// the dial-in ends with its window, and the dials not made by then count
// as connect failures; the phase runs with what was established. The
// failures are said as they happen, rate-limited: the first at once, then
// a line at most every DialReportEvery, and a summary at the end.
func TestDialInBoundedInTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &fake.Driver{Service: constService(90 * time.Millisecond), DialHang: func(n int64) bool { return n > 2 }}
		const timeout = 4 * time.Second // window: DefaultDialWindow (10 s)
		pl := onePhase(t, schema.Phase{Closed: &schema.Closed{Connections: 50}, Duration: dur("1s")}, timeout)
		logs := &logLines{start: time.Now()}
		r := &Runner{Driver: d, Timeout: timeout, NewSleeper: NewTimerSleeper, Log: zerolog.New(logs)}
		res, err := r.Run(context.Background(), pl)
		if err != nil {
			t.Fatal(err)
		}
		pr := res.Phases[0]
		if got := pr.Start.Sub(logs.start); got != DefaultDialWindow {
			t.Fatalf("the phase started %s after the run, want the dial-in's window %s\n%s", got, DefaultDialWindow, logs)
		}
		// Dials 3-10 time out at 4 s, 11-18 at 8 s, 19-26 are cut at 10 s;
		// the other 24 are not made.
		s := pr.Summary
		if pr.ConnectionsEstablished != 2 || s.ConnectFailures != 48 {
			t.Fatalf("established %d connect failures %d, want 2 and 48", pr.ConnectionsEstablished, s.ConnectFailures)
		}
		// The phase ran on its 2 connections (the other slots' requests
		// dial inside the request, and hang to their timeout).
		if s.OK != 24 {
			t.Fatalf("ok %d, want 24 (2 × 12 sends at 0, 90, …, 990 ms): the phase runs with what was established", s.OK)
		}
		// Said as it happens: the first failure at once (4 s), how far the
		// dial-in is every 3 s, and a summary when it ends (10 s).
		for _, want := range []logLine{
			{3 * time.Second, `"message":"dial-in after 3s: 2 of 50 connections established, 0 failed, 48 still dialling"`},
			{timeout, `"stage":"dial-in","kind":"connect: ETIMEDOUT","error":"dial tcp: context deadline exceeded","message":"dial failed: connect: ETIMEDOUT"`},
			{6 * time.Second, `"message":"dial-in after 6s: 2 of 50 connections established, 8 failed, 40 still dialling"`},
			{9 * time.Second, `"message":"dial-in after 9s: 2 of 50 connections established, 16 failed, 32 still dialling"`},
			{DefaultDialWindow, `"message":"48 of 50 dials failed so far: connect: ETIMEDOUT (24), not dialled: the dial-in's 10s ran out (24)"`},
		} {
			if l := logs.find(want.msg); len(l) != 1 || l[0].at != want.at {
				t.Fatalf("want one line at %s with %s\n%s", want.at, want.msg, logs)
			}
		}
		// Nothing else: the other 47 failures are in the lines above (the
		// not-made dials' kind has its own first line at 10 s).
		if n := len(logs.find(`"stage":"dial-in"`)); n != 6 {
			t.Fatalf("%d dial-in lines, want 6\n%s", n, logs)
		}
	})
}

// Not one dial succeeds within the window: no connection could be
// established, and the run says so when the window ends, not after every
// dial's timeout.
func TestNoConnectionWithinWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &fake.Driver{DialHang: func(int64) bool { return true }}
		pl := onePhase(t, schema.Phase{Closed: &schema.Closed{Connections: 50}, Duration: dur("1s")}, time.Second)
		t0 := time.Now()
		_, err := (&Runner{Driver: d, Timeout: time.Second, DialWindow: 2500 * time.Millisecond, NewSleeper: NewTimerSleeper}).Run(context.Background(), pl)
		if !errors.Is(err, ErrNoConnection) {
			t.Fatalf("err %v, want ErrNoConnection", err)
		}
		// Dials 1-8 time out at 1 s, 9-16 at 2 s, 17-24 are cut at 2.5 s.
		if took := time.Since(t0); took != 2500*time.Millisecond || d.Dials() != 24 {
			t.Fatalf("gave up after %s and %d dials, want 2.5s and 24", took, d.Dials())
		}
	})
}

// A ramp's stair dials follow the barrier's rules: the stair's
// connections are probed, a dead one re-dialled once, and one still dead
// is not established at the top stair.
func TestRampStairProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Dials 1-2: the first stair, at the barrier; 3-4 the second
		// stair's, dead; 5-6 their re-dials: 5 dead, 6 sound.
		d := &fake.Driver{Service: constService(95 * time.Millisecond), Dead: func(n int64) bool { return n >= 3 && n <= 5 }}
		pl := onePhase(t, schema.Phase{Ramp: &schema.Ramp{Connections: schema.Staircase{From: 0, To: 4, Step: 2, Every: dur("1s")}}}, 10*time.Second)
		res := run(t, d, pl, 10*time.Second)
		pr := res.Phases[0]
		if pr.ConnectionsEstablished != 3 || pr.ConnectionsClosedEarly != 1 {
			t.Fatalf("established %d closed early %d, want 3 and 1", pr.ConnectionsEstablished, pr.ConnectionsClosedEarly)
		}
		if w := warningOf(pl, res, "connections-missing"); !strings.Contains(w, "3 of 4 connections established") || !strings.Contains(w, "1 were accepted and then closed") {
			t.Fatalf("connections-missing warning %q", w)
		}
	})
}

// The workers of one slot (inflight > 1) that find it empty dial it once
// between them: the first dials, the others wait and take its connection.
// Each dialling on its own made one connection per worker, all but the
// last overwritten in the pool and never closed (HTTP/2 found it: four
// connections for a slot whose barrier dial had failed).
func TestEmptySlotDialledOnceForItsWorkers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &fake.Driver{Inflight: 4, Service: func(uint64) time.Duration { return 50 * time.Millisecond },
			DialFail: func(n int64) error {
				if n == 1 {
					return fake.ErrRefused // the barrier's dial
				}
				time.Sleep(5 * time.Millisecond) // a dial takes a while
				return nil
			}}
		pl := onePhase(t, schema.Phase{Open: &schema.Open{Rate: constRate(800), Connections: 2, Inflight: 4}, Duration: dur("100ms")}, time.Second)
		r := &Runner{Driver: d, Timeout: time.Second, NewSleeper: NewTimerSleeper}
		res, err := r.Run(context.Background(), pl)
		if err != nil {
			t.Fatal(err)
		}
		if got := d.Dials(); got != 3 {
			t.Errorf("%d dials, want 3: two at the barrier (one failed) and one for the empty slot's four workers", got)
		}
		if s := res.Phases[0].Summary; s.OK != s.Requests || s.Reconnects != 1 {
			t.Errorf("ok %d of %d, reconnects %d; want all ok, 1 re-dial", s.OK, s.Requests, s.Reconnects)
		}
	})
}

// streamCapped is a fake driver whose server caps the streams per
// connection (drivers.StreamCapper), as HTTP/2's
// SETTINGS_MAX_CONCURRENT_STREAMS does.
type streamCapped struct {
	*fake.Driver
	cap       int
	announced bool
}

func (d streamCapped) StreamCap() (int, bool) { return d.cap, d.announced }

// A server's stream cap below the phase's inflight is said in the log
// once per phase, after its dial-in, 0 and an inflight of 1 included;
// at or above it, or with none announced, nothing is said.
func TestStreamCapLogged(t *testing.T) {
	for _, tc := range []struct {
		cap       int
		announced bool
		inflight  int
		lines     int
		says      string
	}{
		{2, true, 8, 1, "capped at 2, not the 8"},
		{8, true, 8, 0, ""},
		{0, false, 8, 0, ""}, // none announced: unlimited
		{0, true, 8, 1, "allows 0 concurrent streams per HTTP/2 connection (SETTINGS_MAX_CONCURRENT_STREAMS 0): nothing can be sent"},
		{0, true, 1, 1, "nothing can be sent"},
	} {
		synctest.Test(t, func(t *testing.T) {
			logs := &logLines{start: time.Now()}
			d := streamCapped{&fake.Driver{Inflight: 8, Service: constService(time.Millisecond)}, tc.cap, tc.announced}
			pl := onePhase(t, schema.Phase{Open: &schema.Open{Rate: constRate(100), Connections: 1, Inflight: tc.inflight}, Duration: dur("100ms")}, time.Second)
			r := &Runner{Driver: d, Timeout: time.Second, NewSleeper: NewTimerSleeper, Log: zerolog.New(logs)}
			if _, err := r.Run(context.Background(), pl); err != nil {
				t.Fatal(err)
			}
			got := logs.find("concurrent streams per HTTP/2 connection")
			if len(got) != tc.lines {
				t.Fatalf("cap %d, inflight %d: %d lines, want %d:\n%s", tc.cap, tc.inflight, len(got), tc.lines, logs)
			}
			if tc.lines > 0 && !strings.Contains(got[0].msg, tc.says) {
				t.Errorf("line %q does not say %q", got[0].msg, tc.says)
			}
		})
	}
}

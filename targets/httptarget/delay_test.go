package httptarget

import (
	"context"
	"math"
	nethttp "net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseArgs_SlowStartAndDelayPerSeq(t *testing.T) {
	cfg, err := ParseArgs([]string{"--delay", "5ms", "--slow-for", "5s", "--slow-delay", "300ms", "--delay-per-seq", "4ms"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.SlowFor != 5*time.Second || cfg.SlowDelay != 300*time.Millisecond || cfg.DelayPerSeq != 4*time.Millisecond || cfg.Delay != 5*time.Millisecond {
		t.Errorf("ParseArgs = %+v", cfg)
	}
	for _, args := range [][]string{
		{"--slow-for", "-1s"},
		{"--slow-delay", "-1ms"},
		{"--delay-per-seq", "-4ms"},
		{"--delay-per-seq", "4"}, // no unit
	} {
		if _, err := ParseArgs(args); err == nil {
			t.Errorf("ParseArgs(%q): want error", args)
		}
	}
}

// TestDelay_Knobs: the delay a counted request gets, from the slow start
// and the number that ends its path. start is set relative to now, so no
// row waits for the clock.
func TestDelay_Knobs(t *testing.T) {
	ms := time.Millisecond
	slow := Config{Delay: 5 * ms, SlowFor: 5 * time.Second, SlowDelay: 300 * ms}
	perSeq := Config{Delay: 1 * ms, DelayPerSeq: 4 * ms}
	cases := []struct {
		cfg  Config
		age  time.Duration // how long ago the target started
		path string
		want time.Duration
	}{
		// just started: inside the slow start
		{slow, 0, "/", 300 * ms},
		// 4.9 s in: still slow
		{slow, 4900 * ms, "/", 300 * ms},
		// 5.1 s in: the plain delay again
		{slow, 5100 * ms, "/", 5 * ms},
		// no slow start configured: always the plain delay
		{Config{Delay: 5 * ms}, 0, "/", 5 * ms},
		// request 17: 17 × 4 ms on top of the plain delay
		{perSeq, 0, "/d/17", 69 * ms},
		// request 1006: the longest of B19's end-to-end test
		{perSeq, 0, "/d/1006", 4025 * ms},
		// a query string is not part of the path
		{perSeq, 0, "/d/3?x=9", 13 * ms},
		// not a number, a trailing slash, a sign: nothing extra
		{perSeq, 0, "/d/x", 1 * ms},
		{perSeq, 0, "/d/17/", 1 * ms},
		{perSeq, 0, "/d/-3", 1 * ms},
		{perSeq, 0, "/d/+3", 1 * ms},
		// a number so large the delay would overflow: wait "forever"
		{perSeq, 0, "/d/9223372036854775807", math.MaxInt64},
		// both knobs add up
		{Config{SlowFor: time.Second, SlowDelay: 100 * ms, DelayPerSeq: 2 * ms}, 0, "/5", 110 * ms},
	}
	for _, c := range cases {
		tg := &target{cfg: c.cfg, start: time.Now().Add(-c.age)}
		r := httptest.NewRequest(nethttp.MethodGet, c.path, nil)
		if got := tg.delay(r); got != c.want {
			t.Errorf("%+v, %s after start, %s: delay %s, want %s", c.cfg, c.age, c.path, got, c.want)
		}
	}
}

// TestSlowStart_Served: through Serve, a request in the slow start waits
// at least the slow delay (a lower bound: timers never fire early), and
// the control endpoints are never delayed by it.
func TestSlowStart_Served(t *testing.T) {
	base := start(t, Config{SlowFor: time.Minute, SlowDelay: 100 * time.Millisecond})
	c := client(t)
	t0 := time.Now()
	if status, _ := get(t, c, base+"/x"); status != 200 {
		t.Fatalf("status %d", status)
	}
	if el := time.Since(t0); el < 100*time.Millisecond {
		t.Errorf("answered after %v in the slow start, want ≥ 100ms", el)
	}
	if m := stats(t, base); m["requests"] != 1 || m["ok"] != 1 {
		t.Errorf("stats %v", m)
	}
}

// TestWait: the wait never ends before its delay, and ends promptly when
// its request is cancelled.
func TestWait(t *testing.T) {
	for _, d := range []time.Duration{time.Microsecond, 3 * time.Millisecond, 30 * time.Millisecond} {
		t0 := time.Now()
		wait(context.Background(), d)
		if el := time.Since(t0); el < d {
			t.Errorf("wait(%s) returned after %s", d, el)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	t0 := time.Now()
	wait(ctx, time.Minute)
	if el := time.Since(t0); el > 10*time.Second {
		t.Errorf("a cancelled wait of 1m returned after %s", el)
	}
	t0 = time.Now()
	wait(ctx, time.Minute) // already cancelled
	if el := time.Since(t0); el > 10*time.Second {
		t.Errorf("a wait with a cancelled context returned after %s", el)
	}
}

// TestParseArgs_DelayPath: --delay-path takes a comma list, repeats, and
// refuses what cannot work, naming it.
func TestParseArgs_DelayPath(t *testing.T) {
	ms := time.Millisecond
	cfg, err := ParseArgs([]string{"--delay-path", "/login=5ms, /items=2ms", "--delay-path=/items/=3ms", "--delay", "1ms"})
	if err != nil {
		t.Fatal(err)
	}
	want := PathDelays{"/login": 5 * ms, "/items": 2 * ms, "/items/": 3 * ms}
	if !reflect.DeepEqual(cfg.DelayPath, want) || cfg.Delay != ms {
		t.Errorf("DelayPath %v, Delay %s; want %v and 1ms", cfg.DelayPath, cfg.Delay, want)
	}
	for _, c := range []struct {
		args []string
		want string // in the error
	}{
		{[]string{"--delay-path", "/login"}, "want PATH=DURATION"},
		{[]string{"--delay-path", "/login=5"}, "needs a unit"},
		{[]string{"--delay-path", "/login=-5ms"}, "must not be negative"},
		{[]string{"--delay-path", "login=5ms"}, "starts with /"},
		{[]string{"--delay-path", "/stats=5ms"}, "never delayed"},
		{[]string{"--delay-path", "/a=1ms", "--delay-path", "/a=2ms"}, "given twice"},
		{[]string{"--delay-path", "/a=1ms,/a=1ms"}, "given twice"},
		{[]string{"--max-sessions", "-1"}, "max-sessions"},
	} {
		if _, err := ParseArgs(c.args); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseArgs(%q): %v, want an error with %q", c.args, err, c.want)
		}
	}
	if u := Usage(); !strings.Contains(u, "-delay-path") || !strings.Contains(u, "-users") {
		t.Errorf("Usage() lacks -delay-path or -users:\n%s", u)
	}
}

// TestDelay_DelayPath: which delay a path gets from --delay-path, and how
// it combines with the other knobs.
func TestDelay_DelayPath(t *testing.T) {
	ms := time.Millisecond
	pd := PathDelays{"/login": 5 * ms, "/items": 2 * ms, "/items/": 3 * ms, "/a/": 7 * ms, "/a/b/": 9 * ms}
	cases := []struct {
		cfg  Config
		path string
		want time.Duration
	}{
		// an exact key
		{Config{Delay: ms, DelayPath: pd}, "/login", 5 * ms},
		// an exact key does not cover what is under it
		{Config{Delay: ms, DelayPath: pd}, "/login/x", ms},
		// "/items" is exact, "/items/" the subtree
		{Config{Delay: ms, DelayPath: pd}, "/items", 2 * ms},
		{Config{Delay: ms, DelayPath: pd}, "/items/42", 3 * ms},
		{Config{Delay: ms, DelayPath: pd}, "/items/", 3 * ms},
		// the longest subtree wins
		{Config{DelayPath: pd}, "/a/b/c", 9 * ms},
		{Config{DelayPath: pd}, "/a/c", 7 * ms},
		// no key: the plain delay
		{Config{Delay: ms, DelayPath: pd}, "/other", ms},
		// a 0 key replaces the plain delay too
		{Config{Delay: ms, DelayPath: PathDelays{"/z": 0}}, "/z", 0},
		// the slow start still wins
		{Config{DelayPath: pd, SlowFor: time.Hour, SlowDelay: 100 * ms}, "/login", 100 * ms},
		// delay-per-seq adds to the path's delay: 3 + 4 × 1 ms
		{Config{DelayPath: pd, DelayPerSeq: ms}, "/items/4", 7 * ms},
	}
	for _, c := range cases {
		tg := &target{cfg: c.cfg, start: time.Now()}
		r := httptest.NewRequest(nethttp.MethodGet, c.path, nil)
		if got := tg.delay(r); got != c.want {
			t.Errorf("%v, %s: delay %s, want %s", c.cfg.DelayPath, c.path, got, c.want)
		}
	}
}

// TestDelayPath_Served: through Serve, a path with a per-path delay waits
// at least that long (a lower bound: waits never end early), whatever the
// method.
func TestDelayPath_Served(t *testing.T) {
	base := start(t, Config{DelayPath: PathDelays{"/slow": 60 * time.Millisecond}})
	c := client(t)
	t0 := time.Now()
	resp, err := c.Post(base+"/slow", "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if el := time.Since(t0); el < 60*time.Millisecond || resp.StatusCode != 200 {
		t.Errorf("POST /slow: %d after %v, want 200 after ≥ 60ms", resp.StatusCode, el)
	}
}

package httptarget

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	nethttp "net/http"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/runner-dev/runner/drivers"
	httpdriver "github.com/runner-dev/runner/drivers/http"
	"github.com/runner-dev/runner/schema"

	"github.com/runner-dev/runner/targets/targettest"
)

// start runs Serve with cfg on 127.0.0.1 and returns its base URL; it is
// stopped, and its return checked, when the test ends.
func start(t *testing.T, cfg Config) string {
	t.Helper()
	addr, _ := targettest.Start(t, func(ctx context.Context, ready func(string)) error { return Serve(ctx, cfg, ready) })
	return "http://" + addr
}

// client is a keep-alive client whose idle connections are closed when
// the test ends.
func client(t *testing.T) *nethttp.Client {
	tr := &nethttp.Transport{MaxIdleConnsPerHost: 64}
	t.Cleanup(tr.CloseIdleConnections)
	return &nethttp.Client{Transport: tr, Timeout: 5 * time.Second}
}

func get(t *testing.T, c *nethttp.Client, url string) (int, string) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode, string(b)
}

// stats fetches /stats on a fresh connection, as reconciliation does.
func stats(t *testing.T, base string) map[string]int64 {
	t.Helper()
	c := &nethttp.Client{Transport: &nethttp.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}
	status, body := get(t, c, base+"/stats")
	if status != 200 {
		t.Fatalf("/stats: %d", status)
	}
	var m map[string]int64
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatalf("/stats is not a flat JSON object of integers: %v\n%s", err, body)
	}
	return m
}

func TestParseArgs(t *testing.T) {
	cfg, err := ParseArgs([]string{"--delay", "5ms", "--error-every", "4", "-close-after=10", "--error-status", "500", "--listen", "127.0.0.1:9"})
	if err != nil {
		t.Fatal(err)
	}
	want := Config{Listen: "127.0.0.1:9", Delay: 5 * time.Millisecond, ErrorEvery: 4, ErrorStatus: 500, CloseAfter: 10}
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("ParseArgs = %+v, want %+v", cfg, want)
	}
	cfg, err = ParseArgs(nil)
	if err != nil || !reflect.DeepEqual(cfg, Config{Listen: DefaultListen, ErrorStatus: 503}) {
		t.Errorf("ParseArgs(nil) = %+v, %v", cfg, err)
	}
	for _, args := range [][]string{
		{"--stall", "1s"},        // unknown flag
		{"--delay", "5"},         // no unit
		{"--delay", "-1ms"},      // negative
		{"--error-every", "-2"},  // negative
		{"--error-status", "99"}, // not a final status
		{"--close-after", "x"},   // not a number
		{"extra"},                // positional
	} {
		if _, err := ParseArgs(args); err == nil {
			t.Errorf("ParseArgs(%q): want error", args)
		}
	}
	if u := Usage(); !strings.Contains(u, "-error-every") || !strings.Contains(u, "-close-after") {
		t.Errorf("Usage() = %q", u)
	}
}

// TestErrorEvery: every 4th request of 100, across 4 concurrent
// connections, is a 503: exactly 25, and /stats says so.
func TestErrorEvery(t *testing.T) {
	base := start(t, Config{ErrorEvery: 4})
	c := client(t)
	var dials atomic.Int64
	var dialer net.Dialer
	c.Transport.(*nethttp.Transport).DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return dialer.DialContext(ctx, network, addr)
	}
	var (
		mu     sync.Mutex
		counts = map[int]int{}
		wg     sync.WaitGroup
	)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 25 {
				resp, err := c.Get(base + "/work")
				if err != nil {
					t.Error(err)
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode == 200 && string(b) != "ok\n" || resp.StatusCode == 503 && len(b) != 0 {
					t.Errorf("status %d body %q", resp.StatusCode, b)
				}
				mu.Lock()
				counts[resp.StatusCode]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if counts[503] != 25 || counts[200] != 75 {
		t.Errorf("answers %v, want 25 × 503 and 75 × 200", counts)
	}
	m := stats(t, base)
	for k, v := range map[string]int64{"requests": 100, "ok": 75, "status_200": 75, "status_503": 25, "closed_by_server": 0} {
		if m[k] != v {
			t.Errorf("stats[%s] = %d, want %d (%v)", k, m[k], v, m)
		}
	}
	// A connection the transport dialled but did not need may be accepted
	// a moment after the last response: give it that moment.
	for end := time.Now().Add(2 * time.Second); m["connections"] != dials.Load() && time.Now().Before(end); {
		time.Sleep(10 * time.Millisecond)
		m = stats(t, base)
	}
	if m["connections"] != dials.Load() {
		t.Errorf("stats[connections] = %d, the client dialled %d", m["connections"], dials.Load())
	}
}

// TestCloseAfter: with close-after 3, nine sequential keep-alive requests
// use three connections, each closed by the server.
func TestCloseAfter(t *testing.T) {
	base := start(t, Config{CloseAfter: 3})
	c := client(t)
	closes := 0
	for range 9 {
		resp, err := c.Get(base + "/")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.Close {
			closes++
		}
	}
	if closes != 3 {
		t.Errorf("%d responses said Connection: close, want 3", closes)
	}
	m := stats(t, base)
	if m["connections"] != 3 || m["closed_by_server"] != 3 || m["requests"] != 9 {
		t.Errorf("stats %v, want connections 3, closed_by_server 3, requests 9", m)
	}
}

// TestHealthzAndStatsNotCounted: control endpoints count neither as
// requests nor as connections.
func TestHealthzAndStatsNotCounted(t *testing.T) {
	base := start(t, Config{ErrorEvery: 1})
	c := client(t)
	for range 3 {
		if status, body := get(t, c, base+"/healthz"); status != 200 || body != "ok\n" {
			t.Fatalf("/healthz: %d %q", status, body)
		}
	}
	stats(t, base)
	m := stats(t, base)
	if m["requests"] != 0 || m["connections"] != 0 || m["status_503"] != 0 || m["control_connections"] != 3 {
		t.Errorf("stats %v, want nothing counted and 3 control connections", m)
	}
	// The health-check connection now carries a counted request: it
	// becomes a load connection.
	if status, _ := get(t, c, base+"/x"); status != 503 {
		t.Errorf("counted request with error-every 1: %d", status)
	}
	m = stats(t, base)
	if m["requests"] != 1 || m["connections"] != 1 || m["status_503"] != 1 || m["ok"] != 0 {
		t.Errorf("stats %v, want 1 request on 1 connection answered 503", m)
	}
}

func TestDelay(t *testing.T) {
	base := start(t, Config{Delay: 50 * time.Millisecond})
	c := client(t)
	t0 := time.Now()
	if status, _ := get(t, c, base+"/"); status != 200 {
		t.Fatalf("status %d", status)
	}
	if el := time.Since(t0); el < 50*time.Millisecond {
		t.Errorf("answered after %v, want ≥ 50ms", el)
	}
	t0 = time.Now()
	get(t, c, base+"/healthz")
	if el := time.Since(t0); el >= 50*time.Millisecond {
		t.Logf("healthz took %v; it is not delayed", el)
	}
}

// TestServe_ShutdownWithRequestInFlight: cancelling ctx ends Serve within
// the shutdown grace even while a long delay is in progress.
func TestServe_ShutdownWithRequestInFlight(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addrc := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, Config{Delay: time.Minute}, func(a string) { addrc <- a })
	}()
	addr := <-addrc
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	time.Sleep(50 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return within 5s")
	}
}

func TestServe_Errors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := Serve(ctx, Config{Listen: ln.Addr().String()}, nil); err == nil || !strings.Contains(err.Error(), "listen") {
		t.Errorf("Serve on a taken port: %v", err)
	}
	if err := Serve(ctx, Config{ErrorStatus: 42}, nil); err == nil {
		t.Error("Serve with error status 42: want error")
	}
}

// drive sends n requests (Seq 1…n) one after another through runner's
// HTTP driver configured by h, and returns the driver and its outcomes by
// class; every status outcome must be a 503.
func drive(t *testing.T, base string, h schema.HTTP, n int) (*httpdriver.Driver, map[drivers.Class]int) {
	t.Helper()
	d, err := httpdriver.New(h, base, "")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := d.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	byClass := map[drivers.Class]int{}
	for i := 1; i <= n; i++ {
		out := c.Do(ctx, drivers.Request{Seq: uint64(i)})
		byClass[out.Class]++
		if out.Class == drivers.Status && out.Code != "503" {
			t.Errorf("code %q", out.Code)
		}
	}
	return d, byClass
}

// TestReconcile_WithDriver: the HTTP driver's counts and the target's
// counters agree exactly: connections opened with keep-alive off equal
// requests, and the 503s the driver classed equal the target's.
func TestReconcile_WithDriver(t *testing.T) {
	base := start(t, Config{ErrorEvery: 4})
	before := stats(t, base)
	d, byClass := drive(t, base, schema.HTTP{KeepAlive: new(false)}, 40)
	after := stats(t, base)
	delta := func(k string) int64 { return after[k] - before[k] }
	if byClass[drivers.OK] != 30 || byClass[drivers.Status] != 10 {
		t.Errorf("driver outcomes %v, want 30 ok and 10 status", byClass)
	}
	if delta("status_503") != int64(byClass[drivers.Status]) || delta("requests") != 40 {
		t.Errorf("server status_503 Δ %d, requests Δ %d; driver %v", delta("status_503"), delta("requests"), byClass)
	}
	if delta("connections") != d.Opened() || d.Opened() != 40 {
		t.Errorf("server connections Δ %d, driver opened %d, want 40 each", delta("connections"), d.Opened())
	}
}

// TestResetAfterConns: with reset-after-conns 2, the first two load
// connections are served and the third is accepted and reset at once; a
// control connection made before them does not count, and carries the
// stats fetch after them.
func TestResetAfterConns(t *testing.T) {
	base := start(t, Config{ResetAfterConns: 2})
	c := client(t)
	if code, _ := get(t, c, base+"/healthz"); code != 200 {
		t.Fatalf("healthz %d", code)
	}
	addr := strings.TrimPrefix(base, "http://")
	var conns []net.Conn
	for i := range 3 {
		nc, err := net.Dial("tcp", addr) // accepted in this order
		if i == 2 && errors.Is(err, syscall.ECONNRESET) {
			// The target accepted and reset it before the dial had
			// seen its handshake complete (a slow dialer on a busy
			// machine): not served, as it should be.
			conns = append(conns, nil)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		conns = append(conns, nc)
	}
	for i, nc := range conns {
		if nc == nil {
			continue
		}
		nc.SetDeadline(time.Now().Add(5 * time.Second))
		_, werr := nc.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
		line, rerr := bufio.NewReader(nc).ReadString('\n')
		served := werr == nil && rerr == nil && strings.HasPrefix(line, "HTTP/1.1 200")
		if served != (i < 2) {
			t.Errorf("connection %d: served %v (%q, %v, %v), want %v", i+1, served, line, werr, rerr, i < 2)
		}
	}
	var m map[string]int64
	if _, body := get(t, c, base+"/stats"); json.Unmarshal([]byte(body), &m) != nil {
		t.Fatalf("stats: %q", body)
	}
	if m["connections"] != 2 || m["reset_at_accept"] != 1 || m["control_connections"] != 1 {
		t.Errorf("stats %v, want connections 2, reset_at_accept 1, control_connections 1", m)
	}
}

// TestMalformedEchoesHeader: /malformed answers a status line that is not
// HTTP, quoting the request's X-Echo header, and closes the connection;
// it counts as a request, never as ok.
func TestMalformedEchoesHeader(t *testing.T) {
	base := start(t, Config{})
	conn, err := net.DialTimeout("tcp", strings.TrimPrefix(base, "http://"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(conn, "GET /malformed HTTP/1.1\r\nHost: x\r\nX-Echo: pad token-123\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(conn) // to the close
	if err != nil {
		t.Fatal(err)
	}
	if got := string(b); got != "XTTP/1.1 502 pad token-123\r\n\r\n" {
		t.Errorf("answered %q", got)
	}
	if m := stats(t, base); m["requests"] != 1 || m["ok"] != 0 {
		t.Errorf("stats %v, want 1 request, none ok", m)
	}
}

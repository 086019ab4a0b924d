package wsgateway

import (
	"context"
	"encoding/json"
	"io"
	nethttp "net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/runner-dev/runner/targets/targettest"
)

// start runs Serve with cfg on 127.0.0.1 and returns its host:port; it
// is stopped, and its return checked, when the test ends.
func start(t *testing.T, cfg Config) string {
	t.Helper()
	addr, _ := targettest.Start(t, func(ctx context.Context, ready func(string)) error { return Serve(ctx, cfg, ready) })
	return addr
}

// dial opens a WebSocket to path; it is closed when the test ends.
func dial(t *testing.T, addr, path string) *websocket.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws://"+addr+path, nil)
	if err != nil {
		t.Fatalf("dial %s: %v", path, err)
	}
	t.Cleanup(func() { c.CloseNow() })
	return c
}

func send(t *testing.T, c *websocket.Conn, msg string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
		t.Fatalf("write %s: %v", msg, err)
	}
}

// recv reads one frame within d. Beware: a read that times out closes c.
func recv(c *websocket.Conn, d time.Duration) (websocket.MessageType, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	typ, b, err := c.Read(ctx)
	return typ, string(b), err
}

func mustRecv(t *testing.T, c *websocket.Conn) string {
	t.Helper()
	_, s, err := recv(c, 5*time.Second)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return s
}

// stats fetches GET /stats.
func stats(t *testing.T, addr string) map[string]int64 {
	t.Helper()
	c := &nethttp.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + addr + "/stats")
	if err != nil {
		t.Fatalf("GET /stats: %v", err)
	}
	defer resp.Body.Close()
	var m map[string]int64
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatalf("GET /stats: %v", err)
	}
	return m
}

// waitStats polls /stats until ok accepts it, for up to 5 s.
func waitStats(t *testing.T, addr string, ok func(map[string]int64) bool) map[string]int64 {
	t.Helper()
	var m map[string]int64
	for i := 0; i < 250; i++ {
		if m = stats(t, addr); ok(m) {
			return m
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("stats never as expected: %v", m)
	return nil
}

// expect polls /stats, for up to 5 s, until the counters in want have
// their values: a counter may move just after the client saw its frame.
func expect(t *testing.T, addr string, want map[string]int64) {
	t.Helper()
	var m map[string]int64
	for i := 0; i < 250; i++ {
		m = stats(t, addr)
		same := true
		for k, v := range want {
			if m[k] != v {
				same = false
			}
		}
		if same {
			if m["messages"] != m["ok"]+m["limited"]+m["dropped_replies"] {
				t.Errorf("stats %v: messages != ok + limited + dropped_replies", m)
			}
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Errorf("stats %v, want %v", m, want)
}

// fast is a gateway that answers at once, without limits or jitter.
func fast() Config { return Config{Service: -1, Jitter: -1, Bucket: -1} }

func TestHTTPEndpoints(t *testing.T) {
	addr := start(t, Config{})
	c := &nethttp.Client{Timeout: 5 * time.Second}
	for _, tc := range []struct {
		path string
		code int
		body string
	}{
		{"/healthz", 200, "ok\n"},
		{"/stats", 200, `"messages":0`},
		{"/", 400, "WebSocket"},
		{"/serial", 400, "WebSocket"},
	} {
		resp, err := c.Get("http://" + addr + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.code || !strings.Contains(string(b), tc.body) {
			t.Errorf("GET %s: %d %q, want %d containing %q", tc.path, resp.StatusCode, b, tc.code, tc.body)
		}
	}
	m := stats(t, addr)
	for _, k := range []string{"messages", "ok", "limited", "replies", "bad_messages", "connections", "control_connections",
		"control_messages", "closes_sent", "closes_clean", "closes_abrupt", "duplicates_sent", "unknown_sent", "dropped_replies", "serial_messages"} {
		if v, ok := m[k]; !ok || v != 0 {
			t.Errorf("stats[%s] = %d, %v; want 0, present", k, v, ok)
		}
	}
	if len(m) != 15 {
		t.Errorf("stats has %d counters, want 15: %v", len(m), m)
	}
}

// TestIDEcho: the id comes back byte for byte, whatever its JSON form,
// in the frame type of the message.
func TestIDEcho(t *testing.T) {
	addr := start(t, Config{Service: time.Millisecond, Jitter: -1})
	c := dial(t, addr, "/")
	for _, id := range []string{`1`, `1.50`, `-0`, `12345678901234567890123`, `1e3`, `"abc"`, `"a\u00e9\"b"`, `""`, `null`, `{"x":[1, 2]}`} {
		send(t, c, `{"id": `+id+` , "payload":"x"}`)
		if got, want := mustRecv(t, c), `{"id":`+id+`,"ok":true}`; got != want {
			t.Errorf("reply %s, want %s", got, want)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Write(ctx, websocket.MessageBinary, []byte(`{"id":"bin"}`)); err != nil {
		t.Fatal(err)
	}
	typ, got, err := recv(c, 5*time.Second)
	if err != nil || typ != websocket.MessageBinary || got != `{"id":"bin","ok":true}` {
		t.Errorf("binary message: reply %v %q %v, want a binary {\"id\":\"bin\",\"ok\":true}", typ, got, err)
	}
}

func TestBadMessage(t *testing.T) {
	addr := start(t, fast())
	c := dial(t, addr, "/")
	bad := []string{`not json`, `[1,2]`, `{"x":1}`, `null`, `"id"`, `{"cmd":"other"}`, `{"id":1`}
	for _, m := range bad {
		send(t, c, m)
		if got := mustRecv(t, c); got != `{"ok":false,"code":"BAD_REQUEST"}` {
			t.Errorf("%s: reply %s, want BAD_REQUEST", m, got)
		}
	}
	send(t, c, `{"id":7}`)
	if got := mustRecv(t, c); got != `{"id":7,"ok":true}` {
		t.Errorf("reply %s after bad messages", got)
	}
	expect(t, addr, map[string]int64{"bad_messages": int64(len(bad)), "messages": 1, "ok": 1, "replies": int64(len(bad)) + 1, "connections": 1})
}

// TestBurstRateLimited: 200 messages at once on one connection with a
// long service time: the bucket (100, +400/s) passes 100 plus what refills
// during the burst, the rest are RATE_LIMITED at once, and the counters
// say the same.
func TestBurstRateLimited(t *testing.T) {
	addr := start(t, Config{Service: 50 * time.Millisecond})
	c := dial(t, addr, "/")
	const n = 200
	t0 := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Write from a goroutine, so that the immediate RATE_LIMITED replies
	// are read while the burst is still being written.
	werr := make(chan error, 1)
	go func() {
		for i := 1; i <= n; i++ {
			if err := c.Write(ctx, websocket.MessageText, []byte(`{"id":`+strconv.Itoa(i)+`}`)); err != nil {
				werr <- err
				return
			}
		}
		werr <- nil
	}()
	okIDs, limited := map[int]bool{}, 0
	var lastReply string
	var lastAt time.Time
	lastLimited := false
	for i := 0; i < n; i++ {
		_, s, err := recv(c, 5*time.Second)
		if err != nil {
			t.Fatalf("after %d replies: %v", i, err)
		}
		var r struct {
			ID   int    `json:"id"`
			OK   bool   `json:"ok"`
			Code string `json:"code"`
		}
		if err := json.Unmarshal([]byte(s), &r); err != nil {
			t.Fatalf("reply %q: %v", s, err)
		}
		switch {
		case r.OK:
			okIDs[r.ID] = true
		case r.Code == "RATE_LIMITED":
			limited++
		default:
			t.Fatalf("reply %s", s)
		}
		if r.ID == n {
			lastReply, lastAt, lastLimited = s, time.Now(), !r.OK
		}
	}
	if err := <-werr; err != nil {
		t.Fatal(err)
	}
	all := time.Since(t0)
	ok := len(okIDs)
	// Every message was read before its reply came back, so the bucket
	// refilled for at most that long; when the last message was limited
	// (answered at once), until its reply.
	window := all
	if lastLimited {
		window = lastAt.Sub(t0)
	}
	maxOK := 100 + int(window.Seconds()*DefaultRefill) + 1
	t.Logf("%d ok, %d limited; burst read within %s (last reply %s): at most %d ok", ok, limited, window, lastReply, maxOK)
	if ok < 100 || ok > maxOK || ok+limited != n {
		t.Errorf("%d ok + %d limited: want 100..%d ok, %d in all", ok, limited, maxOK, n)
	}
	for i := 1; i <= 100; i++ {
		if !okIDs[i] {
			t.Errorf("message %d was limited, but the full bucket passes the first 100", i)
			break
		}
	}
	expect(t, addr, map[string]int64{"messages": n, "ok": int64(ok), "limited": int64(limited), "replies": n, "connections": 1, "dropped_replies": 0})
}

// TestBucketOff: --bucket 0 passes everything.
func TestBucketOff(t *testing.T) {
	addr := start(t, Config{Bucket: -1, Service: -1, Jitter: -1})
	c := dial(t, addr, "/")
	for i := 0; i < 300; i++ {
		send(t, c, `{"id":1}`)
	}
	for i := 0; i < 300; i++ {
		if s := mustRecv(t, c); s != `{"id":1,"ok":true}` {
			t.Fatalf("reply %d: %s", i, s)
		}
	}
}

// TestServiceTime: a reply leaves no sooner than --service after its
// message.
func TestServiceTime(t *testing.T) {
	addr := start(t, Config{Service: 30 * time.Millisecond, Jitter: 5 * time.Millisecond})
	c := dial(t, addr, "/")
	for i := 0; i < 5; i++ {
		t0 := time.Now()
		send(t, c, `{"id":1}`)
		mustRecv(t, c)
		if d := time.Since(t0); d < 30*time.Millisecond || d > 3*time.Second {
			t.Errorf("reply after %s, want 30ms or more (and not absurdly more)", d)
		}
	}
}

// TestJitterReproducible: the same seed draws the same service times.
func TestJitterReproducible(t *testing.T) {
	draw := func(seed uint64) []time.Duration {
		g := &gateway{cfg: Config{Seed: seed}.withDefaults()}
		c := g.newConn(nil, nil, false)
		var ds []time.Duration
		for i := 0; i < 5; i++ {
			ds = append(ds, c.serviceTime())
		}
		return ds
	}
	a, b, other := draw(1), draw(1), draw(2)
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("seed 1 drew %v then %v", a, b)
		}
		if a[i] < DefaultService {
			t.Errorf("service time %s below --service", a[i])
		}
	}
	if a[0] == other[0] && a[1] == other[1] {
		t.Errorf("seeds 1 and 2 drew the same: %v", a)
	}
}

// TestControl: {"cmd":"stats"} answers the counters at once, is not a
// message, and its connection is a control connection until it carries a
// normal message.
func TestControl(t *testing.T) {
	addr := start(t, fast())
	load := dial(t, addr, "/")
	send(t, load, `{"id":1}`)
	mustRecv(t, load)

	c := dial(t, addr, "/")
	send(t, c, `{"cmd":"stats"}`)
	var r struct {
		Cmd   string           `json:"cmd"`
		Stats map[string]int64 `json:"stats"`
	}
	s := mustRecv(t, c)
	if err := json.Unmarshal([]byte(s), &r); err != nil || r.Cmd != "stats" {
		t.Fatalf("control reply %s: %v", s, err)
	}
	want := map[string]int64{"messages": 1, "ok": 1, "replies": 1, "connections": 1, "control_connections": 1, "control_messages": 1}
	for k, v := range want {
		if r.Stats[k] != v {
			t.Errorf("stats[%s] = %d, want %d (%s)", k, r.Stats[k], v, s)
		}
	}
	send(t, c, `{"cmd":"stats"}`)
	mustRecv(t, c)
	expect(t, addr, map[string]int64{"control_messages": 2, "messages": 1, "replies": 1, "connections": 1, "control_connections": 1})
	// A normal message moves the connection to connections.
	send(t, c, `{"id":2}`)
	mustRecv(t, c)
	expect(t, addr, map[string]int64{"connections": 2, "control_connections": 0, "messages": 2, "replies": 2})
}

// TestSerial: /serial answers in order, message k no sooner than k × 12
// ms after the burst began, without rate limiting.
func TestSerial(t *testing.T) {
	addr := start(t, Config{Bucket: 1}) // the bucket does not apply to /serial
	c := dial(t, addr, "/serial")
	const n = 10
	t0 := time.Now()
	for i := 1; i <= n; i++ {
		send(t, c, `{"id":`+strconv.Itoa(i)+`}`)
	}
	var at []time.Duration
	for i := 1; i <= n; i++ {
		s := mustRecv(t, c)
		at = append(at, time.Since(t0))
		if want := `{"id":` + strconv.Itoa(i) + `,"ok":true}`; s != want {
			t.Fatalf("reply %d: %s, want %s", i, s, want)
		}
		if min := time.Duration(i) * DefaultSerialService; at[i-1] < min {
			t.Errorf("reply %d at %s, want %s or later", i, at[i-1], min)
		}
	}
	if at[n-1] > 5*time.Second {
		t.Errorf("last reply at %s", at[n-1])
	}
	t.Logf("replies at %v", at)
	expect(t, addr, map[string]int64{"serial_messages": n, "messages": n, "ok": n, "limited": 0, "replies": n})
}

// TestSerialSpacing: one message at a time at 100/s (faster than 83/s):
// each reply leaves a full service time after the previous one was due.
func TestSerialSpacing(t *testing.T) {
	addr := start(t, Config{SerialService: 20 * time.Millisecond})
	c := dial(t, addr, "/serial")
	const n = 8
	t0 := time.Now()
	go func() {
		for i := 1; i <= n; i++ {
			c.Write(context.Background(), websocket.MessageText, []byte(`{"id":`+strconv.Itoa(i)+`}`))
			time.Sleep(10 * time.Millisecond)
		}
	}()
	for i := 1; i <= n; i++ {
		s := mustRecv(t, c)
		if want := `{"id":` + strconv.Itoa(i) + `,"ok":true}`; s != want {
			t.Fatalf("reply %d: %s, want %s", i, s, want)
		}
		// The first message arrived after t0, so reply i is due at
		// t0 + i × 20 ms at the earliest.
		if d, min := time.Since(t0), time.Duration(i)*20*time.Millisecond; d < min {
			t.Errorf("reply %d at %s, want %s or later", i, d, min)
		}
	}
}

func TestParseArgs(t *testing.T) {
	cfg, err := ParseArgs(nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := defaults(); cfg != want {
		t.Errorf("ParseArgs(nil) = %+v, want %+v", cfg, want)
	}
	if z := (Config{}).withDefaults(); z != cfg {
		t.Errorf("zero Config with defaults = %+v, want the flags' defaults %+v", z, cfg)
	}
	cfg, err = ParseArgs([]string{"--bucket", "0", "-service", "0", "--jitter=0", "--seed", "7", "--refill", "10.5",
		"--close-after", "3", "--close-abrupt", "--reorder", "4", "--duplicate-every", "5", "--unknown-id-every", "6",
		"--slow-every", "7", "--slow-delay", "2s", "--serial-service", "5ms", "--listen", "127.0.0.1:9"})
	if err != nil {
		t.Fatal(err)
	}
	want := Config{Listen: "127.0.0.1:9", Bucket: -1, Refill: 10.5, Service: -1, Jitter: -1, Seed: 7, SerialService: 5 * time.Millisecond,
		CloseAfter: 3, CloseAbrupt: true, Reorder: 4, DuplicateEvery: 5, UnknownIDEvery: 6, SlowEvery: 7, SlowDelay: 2 * time.Second}
	if cfg != want {
		t.Errorf("ParseArgs = %+v, want %+v", cfg, want)
	}
	cfg, _ = ParseArgs([]string{"--never-answer", "--close-after", "2"})
	if !cfg.NeverAnswer || cfg.CloseAfter != 2 {
		t.Errorf("never-answer: %+v", cfg)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--nope"}, "nope"},
		{[]string{"extra"}, `unexpected argument "extra"`},
		{[]string{"--bucket", "-1"}, "bucket -1: must not be negative"},
		{[]string{"--bucket", "x"}, "bucket"},
		{[]string{"--refill", "0"}, "refill 0: must be positive"},
		{[]string{"--refill", "-3"}, "refill -3"},
		{[]string{"--service", "5"}, "a duration needs a unit"},
		{[]string{"--service", "-1ms"}, "must not be negative"},
		{[]string{"--jitter", "-1ms"}, "must not be negative"},
		{[]string{"--seed", "0"}, "seed 0"},
		{[]string{"--seed", "-1"}, "seed"},
		{[]string{"--serial-service", "0"}, "serial-service 0s: must be positive"},
		{[]string{"--close-after", "-1"}, "must not be negative"},
		{[]string{"--close-abrupt"}, "close-abrupt: needs --close-after"},
		{[]string{"--reorder", "1"}, "reorder 1"},
		{[]string{"--reorder", "-2"}, "must not be negative"},
		{[]string{"--duplicate-every", "-1"}, "must not be negative"},
		{[]string{"--unknown-id-every", "-1"}, "must not be negative"},
		{[]string{"--slow-every", "3"}, "slow-every 3: needs --slow-delay"},
		{[]string{"--slow-delay", "1s"}, "slow-delay 1s: needs --slow-every"},
		{[]string{"--slow-every", "3", "--slow-delay", "-1s"}, "slow-delay -1s: must not be negative"},
		{[]string{"--slow-delay", "5"}, "a duration needs a unit"},
		{[]string{"--never-answer", "--reorder", "2"}, "never-answer"},
		{[]string{"--never-answer", "--duplicate-every", "2"}, "never-answer"},
	} {
		if _, err := ParseArgs(tc.args); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseArgs(%q) = %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
}

func TestServeRejectsInvalidConfig(t *testing.T) {
	if err := Serve(context.Background(), Config{CloseAbrupt: true}, nil); err == nil {
		t.Error("Serve with close-abrupt alone: no error")
	}
	if err := Serve(context.Background(), Config{Listen: "256.0.0.1:0"}, nil); err == nil || !strings.Contains(err.Error(), "listen") {
		t.Errorf("Serve on a bad address: %v", err)
	}
}

func TestUsage(t *testing.T) {
	u := Usage()
	for _, f := range []string{"-listen", "-bucket", "-refill", "-service", "-jitter", "-seed", "-serial-service", "-close-after", "-close-abrupt",
		"-never-answer", "-reorder", "-duplicate-every", "-unknown-id-every", "-slow-every", "-slow-delay"} {
		if !strings.Contains(u, f+" ") && !strings.Contains(u, f+"\n") {
			t.Errorf("usage lacks %s:\n%s", f, u)
		}
	}
}

// TestCancelStopsServe: cancelling ctx stops Serve within 2 s, with
// clients connected, messages in service, a serial queue and an idle
// client that never reads; clients see a close.
func TestCancelStopsServe(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addrc := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, Config{Service: 10 * time.Second, SlowEvery: 1, SlowDelay: time.Minute}, func(a string) { addrc <- a })
	}()
	var addr string
	select {
	case addr = <-addrc:
	case <-time.After(5 * time.Second):
		t.Fatal("not ready")
	}
	a := dial(t, addr, "/")
	send(t, a, `{"id":1}`)
	b := dial(t, addr, "/serial")
	for i := 0; i < 20; i++ {
		send(t, b, `{"id":1}`)
	}
	dial(t, addr, "/") // idle
	waitStats(t, addr, func(m map[string]int64) bool { return m["messages"] == 21 })
	t0 := time.Now()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
		if d := time.Since(t0); d > 2*time.Second {
			t.Errorf("Serve took %s to stop, want 2s at most", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not stop within 5s of cancel")
	}
	if _, _, err := recv(a, 2*time.Second); err == nil {
		t.Error("client a still reads after shutdown")
	}
}

// TestClientGoneInService: messages in service when their client goes
// away count as dropped_replies, so the invariant holds.
func TestClientGoneInService(t *testing.T) {
	addr := start(t, Config{Service: 10 * time.Second, SerialService: 10 * time.Second})
	c := dial(t, addr, "/")
	s := dial(t, addr, "/serial")
	for i := 0; i < 3; i++ {
		send(t, c, `{"id":1}`)
		send(t, s, `{"id":1}`)
	}
	waitStats(t, addr, func(m map[string]int64) bool { return m["messages"] == 6 })
	c.CloseNow()
	s.Close(websocket.StatusNormalClosure, "")
	expect(t, addr, map[string]int64{"messages": 6, "dropped_replies": 6, "ok": 0, "replies": 0})
}

// TestCancelGraceful: on cancel a reply in service still leaves, then the
// client gets Close 1001.
func TestCancelGraceful(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addrc := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, Config{Service: 200 * time.Millisecond, Jitter: -1}, func(a string) { addrc <- a })
	}()
	addr := <-addrc
	c := dial(t, addr, "/")
	send(t, c, `{"id":1}`)
	waitStats(t, addr, func(m map[string]int64) bool { return m["messages"] == 1 })
	cancel()
	if s := mustRecv(t, c); s != `{"id":1,"ok":true}` {
		t.Errorf("reply %s", s)
	}
	_, _, err := recv(c, 3*time.Second)
	if websocket.CloseStatus(err) != websocket.StatusGoingAway {
		t.Errorf("after the reply: %v, want close 1001", err)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not stop")
	}
}

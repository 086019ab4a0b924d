package websocket

import (
	"context"
	"encoding/json"
	"net"
	nethttp "net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/runner-dev/runner/drivers"
	"github.com/runner-dev/runner/drivers/internal/drivertest"
	"github.com/runner-dev/runner/schema"
)

// stub is a WebSocket server on loopback whose handler the test writes;
// it is stopped when the test ends.
func stub(t *testing.T, handle func(ctx context.Context, c *websocket.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(context.Background())
	srv := &nethttp.Server{Handler: nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		wg.Add(1)
		defer wg.Done()
		defer c.CloseNow()
		handle(ctx, c)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() {
		cancel()
		srv.Close()
		wg.Wait()
	})
	return "ws://" + ln.Addr().String()
}

// idOf reads the id of a message as raw JSON.
func idOf(t *testing.T, b []byte) json.RawMessage {
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Errorf("stub: %v", err)
	}
	return m.ID
}

func newDriver(t *testing.T, cfg schema.WebSocket, url string) *Driver {
	t.Helper()
	if cfg.Message == "" {
		cfg.Message = `{"id": {{seq}}}`
	}
	d, err := New(cfg, url, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// do is drivertest.Do: request seq with its context bounded by timeout.
var do = drivertest.Do

// Four messages in flight answered in reverse order: each pairs with its
// own request by id.
func TestOutOfOrderReplies(t *testing.T) {
	url := stub(t, func(ctx context.Context, c *websocket.Conn) {
		var ids []json.RawMessage
		for len(ids) < 4 {
			_, b, err := c.Read(ctx)
			if err != nil {
				return
			}
			ids = append(ids, idOf(t, b))
		}
		for i := len(ids) - 1; i >= 0; i-- {
			c.Write(ctx, websocket.MessageText, []byte(`{"id":`+string(ids[i])+`,"ok":true,"n":`+string(ids[i])+`}`))
		}
		c.Read(ctx)
	})
	d := newDriver(t, schema.WebSocket{Correlate: "id", Success: "resp.ok == true && resp.n == resp.id"}, url)
	c, err := d.Dial(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	outs := drivertest.InFlight(c, 4, 5*time.Second)
	for i, o := range outs {
		if o.Class != drivers.OK || !o.Responded {
			t.Errorf("request %d: %v %v", i+1, o.Class, o.Err)
		}
	}
	if s := d.Strays(); s.Late+s.UnknownID+s.DuplicateID != 0 {
		t.Errorf("strays %+v", s)
	}
}

// Unknown, duplicate and late replies are counted apart; the request that
// timed out stays a timeout, the others are ok.
func TestStrayReplies(t *testing.T) {
	url := stub(t, func(ctx context.Context, c *websocket.Conn) {
		for {
			_, b, err := c.Read(ctx)
			if err != nil {
				return
			}
			id := string(idOf(t, b))
			switch id {
			case "1": // answered twice, then an id never sent
				c.Write(ctx, websocket.MessageText, []byte(`{"id":1}`))
				c.Write(ctx, websocket.MessageText, []byte(`{"id":1}`))
				c.Write(ctx, websocket.MessageText, []byte(`{"id":999}`))
				c.Write(ctx, websocket.MessageText, []byte(`not json`))
			case "2": // answered after the client's 100 ms timeout
				time.Sleep(300 * time.Millisecond)
				c.Write(ctx, websocket.MessageText, []byte(`{"id":2}`))
			default:
				c.Write(ctx, websocket.MessageText, []byte(`{"id":`+id+`}`))
			}
		}
	})
	d := newDriver(t, schema.WebSocket{Correlate: "id"}, url)
	c, err := d.Dial(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if o := do(c, 1, 5*time.Second); o.Class != drivers.OK {
		t.Fatalf("1: %v %v", o.Class, o.Err)
	}
	if o := do(c, 2, 100*time.Millisecond); o.Class != drivers.Timeout {
		t.Fatalf("2: %v %v, want timeout", o.Class, o.Err)
	}
	time.Sleep(400 * time.Millisecond) // the late reply arrives
	if o := do(c, 3, 5*time.Second); o.Class != drivers.OK {
		t.Fatalf("3: %v %v", o.Class, o.Err)
	}
	s := d.Strays()
	if s.Late != 1 || s.DuplicateID != 1 || s.UnknownID != 2 {
		t.Errorf("strays late %d duplicate %d unknown %d, want 1 1 2", s.Late, s.DuplicateID, s.UnknownID)
	}
}

// A success rule over the decoded reply, and the error code read from it.
func TestSuccessRuleAndErrorCode(t *testing.T) {
	url := stub(t, func(ctx context.Context, c *websocket.Conn) {
		for {
			_, b, err := c.Read(ctx)
			if err != nil {
				return
			}
			id := string(idOf(t, b))
			reply := `{"id":` + id + `,"ok":true}`
			if id == "2" {
				reply = `{"id":2,"ok":false,"code":"RATE_LIMITED"}`
			}
			c.Write(ctx, websocket.MessageText, []byte(reply))
		}
	})
	d := newDriver(t, schema.WebSocket{Correlate: "id", Success: "resp.ok == true", ErrorCode: "resp.code"}, url)
	c, _ := d.Dial(context.Background())
	defer c.Close()
	if o := do(c, 1, 5*time.Second); o.Class != drivers.OK {
		t.Errorf("1: %v", o.Class)
	}
	if o := do(c, 2, 5*time.Second); o.Class != drivers.RuleFailed || o.Code != "RATE_LIMITED" || !o.Responded {
		t.Errorf("2: %v %q responded %v, want rule-failed RATE_LIMITED", o.Class, o.Code, o.Responded)
	}
}

// B16 (the client hanging, or booking timeouts, when the server closes a
// WebSocket) at the driver: a server close (clean or dropped) ends the request in
// flight as eof with the close code, counts the close, and the next Do
// re-dials.
func TestServerCloses(t *testing.T) {
	for _, c := range []struct {
		name string
		code string
	}{{"clean", "1000"}, {"abrupt", "1006"}} {
		t.Run(c.name, func(t *testing.T) {
			var n sync.Mutex
			conns := 0
			url := stub(t, func(ctx context.Context, ws *websocket.Conn) {
				n.Lock()
				conns++
				first := conns == 1
				n.Unlock()
				_, b, err := ws.Read(ctx)
				if err != nil {
					return
				}
				if first {
					if c.code == "1000" {
						ws.Close(websocket.StatusNormalClosure, "bye")
					} else {
						ws.CloseNow()
					}
					return
				}
				ws.Write(ctx, websocket.MessageText, []byte(`{"id":`+string(idOf(t, b))+`}`))
				ws.Read(ctx)
			})
			d := newDriver(t, schema.WebSocket{Correlate: "id"}, url)
			conn, err := d.Dial(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			o := do(conn, 1, 5*time.Second)
			if o.Class != drivers.EOF || o.Code != "close-"+c.code {
				t.Fatalf("in flight at the close: %v %q (%v), want eof close-%s", o.Class, o.Code, o.Err, c.code)
			}
			o = do(conn, 2, 5*time.Second)
			if o.Class != drivers.OK || o.Dialed != 1 {
				t.Errorf("after the close: %v dialed %d (%v), want ok after one re-dial", o.Class, o.Dialed, o.Err)
			}
			if got := d.Strays().Closes; got[c.code] != 1 || len(got) != 1 {
				t.Errorf("closes %v, want %s=1", got, c.code)
			}
		})
	}
}

// The server drops the TCP connection (no close frame) with four
// messages in flight: each ends once as eof close-1006 (none is a
// timeout, none cancelled), and the close is counted once.
func TestServerDropsWithMessagesInFlight(t *testing.T) {
	url := stub(t, func(ctx context.Context, ws *websocket.Conn) {
		for range 4 {
			if _, _, err := ws.Read(ctx); err != nil {
				return
			}
		}
		ws.CloseNow()
	})
	d := newDriver(t, schema.WebSocket{Correlate: "id"}, url)
	conn, err := d.Dial(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	outs := drivertest.InFlight(conn, 4, 5*time.Second)
	for i, o := range outs {
		if o.Class != drivers.EOF || o.Code != "close-1006" {
			t.Errorf("message %d: %v %q (%v), want eof close-1006", i+1, o.Class, o.Code, o.Err)
		}
	}
	if got := d.Strays().Closes; got["1006"] != 1 || len(got) != 1 {
		t.Errorf("closes %v, want 1006=1", got)
	}
}

// Without correlate, one message is in flight and the next reply answers
// it; a timeout drops the link so a late reply cannot answer the next.
func TestFIFOWithoutCorrelate(t *testing.T) {
	url := stub(t, func(ctx context.Context, c *websocket.Conn) {
		for {
			_, b, err := c.Read(ctx)
			if err != nil {
				return
			}
			if strings.Contains(string(b), "slow") {
				time.Sleep(300 * time.Millisecond)
			}
			c.Write(ctx, websocket.MessageText, []byte("pong"))
		}
	})
	d := newDriver(t, schema.WebSocket{Message: "ping {{seq}} {{bytes 8}}"}, url)
	if d.MaxInflight() != 1 {
		t.Errorf("MaxInflight %d without correlate", d.MaxInflight())
	}
	c, _ := d.Dial(context.Background())
	defer c.Close()
	if o := do(c, 1, 5*time.Second); o.Class != drivers.OK || o.BytesIn != 4 {
		t.Errorf("1: %v in %d", o.Class, o.BytesIn)
	}
	d2 := newDriver(t, schema.WebSocket{Message: "slow {{seq}}"}, url)
	c2, _ := d2.Dial(context.Background())
	defer c2.Close()
	if o := do(c2, 1, 100*time.Millisecond); o.Class != drivers.Timeout {
		t.Errorf("slow: %v", o.Class)
	}
	if o := do(c2, 2, 5*time.Second); o.Class != drivers.Timeout && (o.Class != drivers.OK || o.Dialed != 1) {
		t.Errorf("after a timeout: %v dialed %d, want a fresh link", o.Class, o.Dialed)
	}
	if s := d2.Strays(); len(s.Closes) != 0 {
		t.Errorf("our own drop counted as a server close: %v", s.Closes)
	}
}

// A gateway that never answers: every request times out, nothing hangs.
func TestNeverAnswers(t *testing.T) {
	url := stub(t, func(ctx context.Context, c *websocket.Conn) {
		for {
			if _, _, err := c.Read(ctx); err != nil {
				return
			}
		}
	})
	d := newDriver(t, schema.WebSocket{Correlate: "id"}, url)
	c, _ := d.Dial(context.Background())
	start := time.Now()
	for seq := uint64(1); seq <= 3; seq++ {
		if o := do(c, seq, 50*time.Millisecond); o.Class != drivers.Timeout {
			t.Errorf("%d: %v", seq, o.Class)
		}
	}
	c.Close()
	if o := do(c, 4, time.Second); o.Class != drivers.Cancelled {
		t.Errorf("after Close: %v, want cancelled", o.Class)
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("took %s", time.Since(start))
	}
}

func TestConfigErrors(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "d.csv"), []byte("user\nann\n"), 0o644)
	for _, c := range []struct {
		cfg  schema.WebSocket
		url  string
		key  string
		want string
	}{
		{schema.WebSocket{Message: `{"id": 7}`, Correlate: "id"}, "ws://h:1", "correlate", `the message's id is "7" for request 1; it must be {{seq}}`},
		{schema.WebSocket{Message: `{"x": {{seq}}}`, Correlate: "id"}, "ws://h:1", "correlate", "the message has no field id"},
		{schema.WebSocket{Message: `id={{seq}}`, Correlate: "id"}, "ws://h:1", "correlate", "the message is not JSON"},
		{schema.WebSocket{Message: `{{nope}}`}, "ws://h:1", "message", "unknown template action"},
		{schema.WebSocket{Message: `x`, Success: "resp +"}, "ws://h:1", "success", "success rule `resp +`"},
		{schema.WebSocket{Message: `x`}, "http://h:1", "target.url", "scheme must be ws or wss"},
		{schema.WebSocket{Message: `{{data.user}}`, Data: "missing.csv"}, "ws://h:1", "data", "missing.csv"},
		{schema.WebSocket{Message: `{{data.nope}}`, Data: "d.csv"}, "ws://h:1", "message", `no column "nope"`},
	} {
		_, err := New(c.cfg, c.url, dir)
		var ce *drivers.ConfigError
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.cfg, err, c.want)
			continue
		}
		if !asConfig(err, &ce) || ce.Key != c.key {
			t.Errorf("%+v: key %v, want %s", c.cfg, ce, c.key)
		}
	}
	d, err := New(schema.WebSocket{Message: `{"u": "{{data.user}}", "meta": {"rid": "{{seq}}"}}`, Data: "d.csv", Correlate: "meta.rid"}, "ws://h:1/", dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(d.msg.Render(nil, 3, 0)); got != `{"u": "ann", "meta": {"rid": "3"}}` {
		t.Errorf("rendered %s", got)
	}
}

func asConfig(err error, ce **drivers.ConfigError) bool {
	type unwrapper interface{ Unwrap() []error }
	if u, ok := err.(unwrapper); ok {
		for _, e := range u.Unwrap() {
			if asConfig(e, ce) {
				return true
			}
		}
		return false
	}
	c, ok := err.(*drivers.ConfigError)
	if ok {
		*ce = c
	}
	return ok
}

// binary: true sends binary frames; a binary reply is decoded like a
// text one.
func TestBinaryMessages(t *testing.T) {
	url := stub(t, func(ctx context.Context, c *websocket.Conn) {
		for {
			typ, b, err := c.Read(ctx)
			if err != nil {
				return
			}
			ok := "true"
			if typ != websocket.MessageBinary {
				ok = "false"
			}
			c.Write(ctx, websocket.MessageBinary, []byte(`{"id":`+string(idOf(t, b))+`,"ok":`+ok+`}`))
		}
	})
	d := newDriver(t, schema.WebSocket{Binary: true, Correlate: "id", Success: "resp.ok"}, url)
	c, _ := d.Dial(context.Background())
	defer c.Close()
	if o := do(c, 1, 5*time.Second); o.Class != drivers.OK {
		t.Errorf("binary: %v %v (the stub saw a text frame?)", o.Class, o.Err)
	}
}

// A reply larger than max_message: the library closes the connection
// with 1009 on our side. The request ends as bad-frame too-big; it is not
// a server close.
func TestReplyTooBig(t *testing.T) {
	url := stub(t, func(ctx context.Context, c *websocket.Conn) {
		for {
			_, b, err := c.Read(ctx)
			if err != nil {
				return
			}
			c.Write(ctx, websocket.MessageText, []byte(`{"id":`+string(idOf(t, b))+`,"pad":"`+strings.Repeat("x", 100)+`"}`))
		}
	})
	d, err := New(schema.WebSocket{Message: `{"id": {{seq}}}`, Correlate: "id", MaxMessage: 64}, url, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c, _ := d.Dial(context.Background())
	defer c.Close()
	o := do(c, 1, 5*time.Second)
	if o.Class != drivers.BadFrame || o.Code != "too-big" || !strings.Contains(o.Err.Error(), "larger than max_message (64 bytes)") {
		t.Errorf("%v %q %v, want bad-frame too-big", o.Class, o.Code, o.Err)
	}
	if s := d.Strays(); len(s.Closes) != 0 {
		t.Errorf("our own close counted as a server close: %v", s.Closes)
	}
}

// A re-dial that fails opened nothing (Dialed 0) and is a connect error,
// not a timeout or a reset.
func TestFailedRedial(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &nethttp.Server{Handler: nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		c.Read(r.Context())
		c.Close(websocket.StatusGoingAway, "bye")
	})}
	go srv.Serve(ln)
	d := newDriver(t, schema.WebSocket{Correlate: "id"}, "ws://"+ln.Addr().String())
	c, err := d.Dial(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if o := do(c, 1, 5*time.Second); o.Class != drivers.EOF || o.Code != "close-1001" {
		t.Fatalf("1: %v %q", o.Class, o.Code)
	}
	srv.Close() // nothing listens any more
	o := do(c, 2, 5*time.Second)
	if o.Class != drivers.Connect || o.Dialed != 0 || o.Code != "ECONNREFUSED" {
		t.Errorf("re-dial to a closed port: %v %q dialed %d (%v), want connect ECONNREFUSED, nothing opened", o.Class, o.Code, o.Dialed, o.Err)
	}
}

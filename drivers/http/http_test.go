package http

import (
	"bufio"
	"bytes"
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	nethttp "net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runner-dev/runner/drivers"
	"github.com/runner-dev/runner/drivers/internal/template"
	"github.com/runner-dev/runner/schema"
)

func okHandler(w nethttp.ResponseWriter, r *nethttp.Request) {
	io.Copy(io.Discard, r.Body)
	io.WriteString(w, "ok\n")
}

func TestTemplate(t *testing.T) {
	data := &template.Data{File: "users.csv", Columns: []string{"user", "token"}, Rows: [][]string{{"ann", "t-1"}, {"bob", ""}}}
	tests := []struct {
		src  string
		seq  uint64
		row  []string
		want string
	}{
		// No hole: the text itself.
		{"/", 7, nil, "/"},
		// One hole.
		{"/item/{{seq}}", 42, nil, "/item/42"},
		// Spaces inside the braces, holes at both ends.
		{"{{ seq }}-{{seq}}", 1234567890, nil, "1234567890-1234567890"},
		// Empty template.
		{"", 1, nil, ""},
		// Data columns in any order, next to {{seq}}.
		{"/u/{{data.user}}?t={{ data.token }}&n={{seq}}", 9, data.Rows[0], "/u/ann?t=t-1&n=9"},
		// An empty value renders as nothing.
		{"[{{data.token}}]{{data.user}}", 2, data.Rows[1], "[]bob"},
	}
	for _, tt := range tests {
		tm, err := parseTemplate(tt.src, data)
		if err != nil {
			t.Fatalf("parseTemplate(%q): %v", tt.src, err)
		}
		got := string(tm.render([]byte("x"), tt.seq, tt.row, nil))
		if got != "x"+tt.want || tm.size(tt.seq, tt.row, nil) != len(tt.want) {
			t.Errorf("render(%q, %d) = %q (size %d), want %q", tt.src, tt.seq, got, tm.size(tt.seq, tt.row, nil), tt.want)
		}
	}
	for _, tc := range []struct {
		src  string
		data *template.Data
		want string
	}{
		{"/{{seqq}}", data, `unknown template action "{{seqq}}"`},
		{"/{{bytes 4}}", data, `unknown template action "{{bytes 4}}"`},
		{"/{{seq", data, "unterminated"},
		{"/{{data.nope}}", data, `the data file users.csv has no column "nope"; columns: user, token`},
		{"/{{data.user}}", nil, "no data file"},
	} {
		if _, err := parseTemplate(tc.src, tc.data); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseTemplate(%q) = %v, want an error containing %q", tc.src, err, tc.want)
		}
	}
}

func TestNew_Errors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.pem")
	tests := []struct {
		name string
		cfg  schema.HTTP
		url  string
		want []string
	}{
		{"bad url", schema.HTTP{}, "http://[::1", []string{"target url"}},
		{"bad scheme", schema.HTTP{}, "ftp://127.0.0.1/", []string{"scheme must be http or https"}},
		{"no host", schema.HTTP{}, "http:///x", []string{"no host"}},
		{"bad rule", schema.HTTP{Success: "status >="}, "http://127.0.0.1:1", []string{"success rule `status >=`"}},
		{"rule not bool", schema.HTTP{Success: "status + 1"}, "http://127.0.0.1:1", []string{"success rule `status + 1`"}},
		{"rule unknown name", schema.HTTP{Success: "code == 200"}, "http://127.0.0.1:1", []string{"success rule `code == 200`"}},
		{"unreadable ca", schema.HTTP{TLS: &schema.TLS{CAFile: missing}}, "https://127.0.0.1:1", []string{"tls.ca_file"}},
		{"template", schema.HTTP{Path: "/{{id}}"}, "http://127.0.0.1:1", []string{"unknown template action"}},
		{"path", schema.HTTP{Path: "no-slash"}, "http://127.0.0.1:1", []string{"must start with /"}},
		{"version", schema.HTTP{Version: "3"}, "http://127.0.0.1:1", []string{`version "3"`}},
		{"h2 keep-alive off", schema.HTTP{Version: "2", KeepAlive: boolp(false)}, "http://127.0.0.1:1", []string{`keep_alive: false with version 2`}},
		{"h2 connection header", schema.HTTP{Version: "2", Headers: map[string]string{"Upgrade": "x"}}, "http://127.0.0.1:1", []string{`header "Upgrade": connection-specific`}},
		{"connection header", schema.HTTP{Headers: map[string]string{"connection": "close"}}, "http://127.0.0.1:1", []string{"keep_alive"}},
		{"header injection", schema.HTTP{Headers: map[string]string{"X-A": "a\r\nX-B: b"}}, "http://127.0.0.1:1", []string{"header X-A"}},
		// Every problem is reported at once.
		{"joined", schema.HTTP{Method: "G T", Success: "1 +"}, "gopher://x", []string{"scheme", `method "G T"`, "success rule `1 +`"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg, tt.url, "")
			if err == nil {
				t.Fatal("want error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

// TestKeepAlive checks that connections opened == requests with
// keep-alive off and == 1 with it on, for HTTP/1.1 and HTTP/1.0, counted
// by the server, by Opened and by Outcome.Dialed.
func TestKeepAlive(t *testing.T) {
	const n = 20
	tests := []struct {
		version    string
		keepAlive  bool
		wantConns  int64
		wantProto  string
		wantClosed bool // what the server saw as the request's wish to close
	}{
		{"1.1", true, 1, "HTTP/1.1", false},
		{"1.1", false, n, "HTTP/1.1", true},
		{"1.0", true, 1, "HTTP/1.0", false},
		{"1.0", false, n, "HTTP/1.0", true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s keep-alive=%v", tt.version, tt.keepAlive), func(t *testing.T) {
			var badProto atomic.Int64
			s := newServer(t, func(w nethttp.ResponseWriter, r *nethttp.Request) {
				if r.Proto != tt.wantProto || r.Close != tt.wantClosed {
					badProto.Add(1)
				}
				okHandler(w, r)
			})
			d := newDriver(t, schema.HTTP{Version: tt.version, KeepAlive: boolp(tt.keepAlive)}, s.URL)
			c := dial(t, d)
			dialed := int64(1) // the pre-dial
			for i := 1; i <= n; i++ {
				out := do(c, uint64(i), 10*time.Second)
				if out.Class != drivers.OK || !out.Responded || out.Err != nil {
					t.Fatalf("request %d: %+v", i, out)
				}
				if out.Dialed == 0 && out.Connect != 0 {
					t.Errorf("request %d: Connect %v on a reused connection", i, out.Connect)
				}
				dialed += int64(out.Dialed)
			}
			if got := s.accepted.Load(); got != tt.wantConns {
				t.Errorf("server accepted %d connections, want %d", got, tt.wantConns)
			}
			if got := d.Opened(); got != tt.wantConns {
				t.Errorf("Opened() = %d, want %d", got, tt.wantConns)
			}
			if dialed != tt.wantConns {
				t.Errorf("pre-dial + Σ Dialed = %d, want %d", dialed, tt.wantConns)
			}
			if b := badProto.Load(); b != 0 {
				t.Errorf("%d requests arrived with the wrong protocol or Connection header", b)
			}
		})
	}
}

// TestBytes_MatchTheWire checks BytesOut and BytesIn against the bytes
// the server read and wrote, with templates in path, header and body.
func TestBytes_MatchTheWire(t *testing.T) {
	var bad atomic.Value
	s := newServer(t, func(w nethttp.ResponseWriter, r *nethttp.Request) {
		b, _ := io.ReadAll(r.Body)
		seq := strings.TrimPrefix(r.URL.Path, "/item/")
		switch {
		case r.Method != "POST":
			bad.Store("method " + r.Method)
		case r.URL.Query().Get("q") != seq:
			bad.Store("query " + r.URL.RawQuery)
		case r.Header.Get("X-Seq") != seq:
			bad.Store("header " + r.Header.Get("X-Seq"))
		case string(b) != `{"id":`+seq+`}`:
			bad.Store("body " + string(b))
		case r.Host != hostOf(r):
			bad.Store("host " + r.Host)
		}
		w.Header().Set("X-Reply", strings.Repeat("r", len(seq)))
		io.WriteString(w, "ok "+seq)
	})
	d := newDriver(t, schema.HTTP{
		Method:  "POST",
		Path:    "/item/{{seq}}?q={{seq}}",
		Headers: map[string]string{"X-Seq": "{{seq}}", "Content-Type": "application/json"},
		Body:    `{"id":{{seq}}}`,
	}, s.URL)
	c := dial(t, d)
	var out, in int64
	for _, seq := range []uint64{1, 9, 10, 99, 100, 12345678901} {
		o := do(c, seq, 10*time.Second)
		if o.Class != drivers.OK {
			t.Fatalf("seq %d: %+v", seq, o)
		}
		out += o.BytesOut
		in += o.BytesIn
	}
	if v := bad.Load(); v != nil {
		t.Fatalf("server saw a wrong request: %v", v)
	}
	// The server's counters move just after its Write returns, which can
	// be after our read: wait for them briefly.
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
		if s.read.Load() == out && s.written.Load() == in {
			break
		}
	}
	if got := s.read.Load(); got != out {
		t.Errorf("Σ BytesOut = %d, server read %d", out, got)
	}
	if got := s.written.Load(); got != in {
		t.Errorf("Σ BytesIn = %d, server wrote %d", in, got)
	}
}

// hostOf is the address the request arrived on, which the Host header
// must name.
func hostOf(r *nethttp.Request) string {
	return r.Context().Value(nethttp.LocalAddrContextKey).(net.Addr).String()
}

func TestBodySize(t *testing.T) {
	var got atomic.Int64
	s := newServer(t, func(w nethttp.ResponseWriter, r *nethttp.Request) {
		b, _ := io.ReadAll(r.Body)
		got.Store(int64(len(b)))
	})
	d := newDriver(t, schema.HTTP{Method: "PUT", BodySize: 100_000}, s.URL)
	c := dial(t, d)
	out := do(c, 1, 10*time.Second)
	if out.Class != drivers.OK || got.Load() != 100_000 || out.BytesOut <= 100_000 {
		t.Fatalf("outcome %+v, server read a body of %d", out, got.Load())
	}
	if s.read.Load() != out.BytesOut {
		t.Errorf("BytesOut %d, server read %d", out.BytesOut, s.read.Load())
	}
}

// B05, the defect pinned: non-2xx responses counted as successes and
// throughput.
//
// TestField_B05_StatusIsAnError: a 503 is an error of class status with
// code "503", never throughput; the connection stays in use.
func TestField_B05_StatusIsAnError(t *testing.T) {
	s := newServer(t, func(w nethttp.ResponseWriter, r *nethttp.Request) {
		if r.URL.Path == "/3" {
			w.WriteHeader(nethttp.StatusServiceUnavailable)
			return
		}
		okHandler(w, r)
	})
	d := newDriver(t, schema.HTTP{Path: "/{{seq}}"}, s.URL)
	c := dial(t, d)
	for seq := uint64(1); seq <= 5; seq++ {
		out := do(c, seq, 10*time.Second)
		if seq == 3 {
			if out.Class != drivers.Status || out.Code != "503" || !out.Responded || out.Err == nil {
				t.Errorf("seq 3: %+v, want status 503 responded", out)
			}
		} else if out.Class != drivers.OK {
			t.Errorf("seq %d: %+v", seq, out)
		}
		if out.Dialed != 0 {
			t.Errorf("seq %d re-dialled after a status error", seq)
		}
	}
	if s.accepted.Load() != 1 {
		t.Errorf("server accepted %d connections, want 1", s.accepted.Load())
	}
}

func TestSuccessRule(t *testing.T) {
	s := newServer(t, func(w nethttp.ResponseWriter, r *nethttp.Request) {
		switch r.URL.Path {
		case "/1":
			w.Header().Set("X-Result", "good")
			io.WriteString(w, `{"ok":true}`)
		case "/2":
			w.Header().Set("X-Result", "bad")
			io.WriteString(w, `{"ok":false}`)
		case "/3":
			w.WriteHeader(404)
			io.WriteString(w, `{"ok":true}`)
		case "/4":
			w.Header().Set("X-Result", "good")
			io.WriteString(w, strings.Repeat("z", MaxRuleBody)+`{"ok":true}`)
		}
	})
	tests := []struct {
		rule  string
		want  [4]drivers.Class
		codes [4]string
	}{
		// The body decides; a 404 whose body says ok is ok because the rule says so.
		// A body beyond MaxRuleBody is cut: a rule on it is not
		// evaluated, and the response is not ok.
		{`body contains '"ok":true'`,
			[4]drivers.Class{drivers.OK, drivers.RuleFailed, drivers.OK, drivers.RuleFailed},
			[4]string{"", "200", "", "200"}},
		// The rule would pass on the part kept (the text is past the
		// cut): still not ok.
		{`!(body contains '"ok":true')`,
			[4]drivers.Class{drivers.RuleFailed, drivers.OK, drivers.RuleFailed, drivers.RuleFailed},
			[4]string{"200", "", "404", "200"}},
		// Headers: canonical name, first value.
		{`headers["X-Result"] == "good" && status == 200`,
			[4]drivers.Class{drivers.OK, drivers.RuleFailed, drivers.RuleFailed, drivers.OK},
			[4]string{"", "200", "404", ""}},
		// Status only: 404 is success here.
		{`status == 404`,
			[4]drivers.Class{drivers.RuleFailed, drivers.RuleFailed, drivers.OK, drivers.RuleFailed},
			[4]string{"200", "200", "", "200"}},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			d := newDriver(t, schema.HTTP{Path: "/{{seq}}", Success: tt.rule}, s.URL)
			if d.rule.needBody != strings.Contains(tt.rule, "body") {
				t.Errorf("needBody = %v", d.rule.needBody)
			}
			c := dial(t, d)
			for i := range 4 {
				out := do(c, uint64(i+1), 10*time.Second)
				if out.Class != tt.want[i] || out.Code != tt.codes[i] || !out.Responded {
					t.Errorf("seq %d: %s %q (%v), want %s %q", i+1, out.Class, out.Code, out.Err, tt.want[i], tt.codes[i])
				}
				if out.Class == drivers.RuleFailed && !strings.Contains(out.Err.Error(), tt.rule) {
					t.Errorf("seq %d: error %q does not quote the rule", i+1, out.Err)
				}
				if cut := i == 3 && d.rule.needBody; cut && !strings.Contains(fmt.Sprint(out.Err), "was cut at 1048576 bytes") {
					t.Errorf("seq %d: error %q does not say the body was cut", i+1, out.Err)
				}
			}
		})
	}
}

// TestTimeout_Redials: a request the server does not answer in time ends
// as timeout, its connection is closed, and the next request re-dials.
func TestTimeout_Redials(t *testing.T) {
	release := make(chan struct{})
	s := newServer(t, func(w nethttp.ResponseWriter, r *nethttp.Request) {
		if r.URL.Path == "/1" {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
		okHandler(w, r)
	})
	t.Cleanup(func() { close(release) }) // runs before s.Close
	d := newDriver(t, schema.HTTP{Path: "/{{seq}}"}, s.URL)
	c := dial(t, d)

	t0 := time.Now()
	out := do(c, 1, 100*time.Millisecond)
	if out.Class != drivers.Timeout || out.Responded {
		t.Fatalf("slow request: %+v, want timeout", out)
	}
	if el := time.Since(t0); el > 3*time.Second {
		t.Errorf("timeout of 100ms took %v", el)
	}
	out = do(c, 2, 10*time.Second)
	if out.Class != drivers.OK || out.Dialed != 1 || out.Connect <= 0 {
		t.Fatalf("request after a timeout: %+v, want ok with a re-dial", out)
	}
	if d.Opened() != 2 {
		t.Errorf("Opened() = %d, want 2", d.Opened())
	}
}

// TestTimeout_WithoutCtxDeadline: with no deadline on ctx the driver
// applies the configured timeout itself.
func TestTimeout_WithoutCtxDeadline(t *testing.T) {
	release := make(chan struct{})
	s := newServer(t, func(w nethttp.ResponseWriter, r *nethttp.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	t.Cleanup(func() { close(release) })
	d := newDriver(t, schema.HTTP{Timeout: schema.Duration(300 * time.Millisecond)}, s.URL)
	c := dial(t, d)
	out := c.Do(context.Background(), drivers.Request{Seq: 1})
	if out.Class != drivers.Timeout {
		t.Fatalf("%+v, want timeout", out)
	}
}

// TestNoSilentRetry_StaleConnection: a kept-alive connection that the server
// closes without notice after our request was written costs that request
// an eof/reset outcome; the request after it re-dials. Nothing is
// retried. (A close seen before sending re-dials: TestIdleClose_Redials.)
func TestNoSilentRetry_StaleConnection(t *testing.T) {
	var requests atomic.Int64
	s := newRawServer(t, func(c net.Conn, br *bufio.Reader) {
		if _, err := readHead(br); err != nil {
			return
		}
		requests.Add(1)
		// A keep-alive response; then the next request is read and the
		// connection closed without notice and without an answer.
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		readHead(br)
		c.Close()
	})
	d := newDriver(t, schema.HTTP{}, "http://"+s.addr)
	c := dial(t, d)
	for round := 1; round <= 3; round++ {
		out := do(c, uint64(2*round-1), 10*time.Second)
		if out.Class != drivers.OK {
			t.Fatalf("round %d: first request %+v", round, out)
		}
		if round > 1 && out.Dialed != 1 {
			t.Errorf("round %d: the request after the failure did not re-dial", round)
		}
		out = do(c, uint64(2*round), 10*time.Second)
		if (out.Class != drivers.EOF && out.Class != drivers.Reset) || out.Responded || out.Dialed != 0 {
			t.Fatalf("round %d: request on the stale connection: %+v, want eof or reset", round, out)
		}
	}
	if got := requests.Load(); got != 3 {
		t.Errorf("server answered %d requests, want 3 (a retry happened)", got)
	}
	if s.accepted.Load() != 3 || d.Opened() != 3 {
		t.Errorf("accepted %d, opened %d, want 3", s.accepted.Load(), d.Opened())
	}
}

// TestConnectionClose_Honoured: a response with Connection: close is ok;
// the next request re-dials without any error.
func TestConnectionClose_Honoured(t *testing.T) {
	s := newServer(t, func(w nethttp.ResponseWriter, r *nethttp.Request) {
		w.Header().Set("Connection", "close")
		okHandler(w, r)
	})
	d := newDriver(t, schema.HTTP{}, s.URL)
	c := dial(t, d)
	for i := 1; i <= 5; i++ {
		out := do(c, uint64(i), 10*time.Second)
		if out.Class != drivers.OK {
			t.Fatalf("request %d: %+v", i, out)
		}
		if want := min(i-1, 1); out.Dialed != want {
			t.Errorf("request %d: Dialed %d, want %d", i, out.Dialed, want)
		}
	}
	if s.accepted.Load() != 5 {
		t.Errorf("accepted %d, want 5", s.accepted.Load())
	}
}

// TestRedial_Refused: a re-dial that fails is a connect outcome with the
// errno as code.
func TestRedial_Refused(t *testing.T) {
	s := newServer(t, func(w nethttp.ResponseWriter, r *nethttp.Request) {
		w.Header().Set("Connection", "close")
		okHandler(w, r)
	})
	d := newDriver(t, schema.HTTP{}, s.URL)
	c := dial(t, d)
	if out := do(c, 1, 10*time.Second); out.Class != drivers.OK {
		t.Fatalf("%+v", out)
	}
	s.Close()
	out := do(c, 2, 10*time.Second)
	if out.Class != drivers.Connect || out.Code != "ECONNREFUSED" || out.Dialed != 0 || out.Responded {
		t.Fatalf("%+v, want connect ECONNREFUSED", out)
	}
}

func TestDial_Refused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	d := newDriver(t, schema.HTTP{}, "http://"+addr)
	_, err = d.Dial(context.Background())
	if class, code := drivers.Classify(err); class != drivers.Connect || code != "ECONNREFUSED" {
		t.Fatalf("Dial: %v classed %s %s", err, class, code)
	}
	if d.Opened() != 0 {
		t.Errorf("Opened() = %d after a refused dial", d.Opened())
	}
}

func TestShortReadAndMalformed(t *testing.T) {
	s := newRawServer(t, func(c net.Conn, br *bufio.Reader) {
		line, err := readHead(br)
		if err != nil {
			return
		}
		switch {
		case strings.Contains(line, "/short"):
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc")
		case strings.Contains(line, "/headers"):
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Le")
		case strings.Contains(line, "/garbage"):
			io.WriteString(c, "SSH-2.0-OpenSSH\r\n\r\n")
		}
	})
	for path, want := range map[string]drivers.Class{
		"/short":   drivers.ShortRead,
		"/headers": drivers.ShortRead,
		"/garbage": drivers.BadFrame,
	} {
		d := newDriver(t, schema.HTTP{Path: path}, "http://"+s.addr)
		c := dial(t, d)
		out := do(c, 1, 10*time.Second)
		if out.Class != want || out.Responded || out.BytesIn == 0 {
			t.Errorf("%s: %+v, want %s", path, out, want)
		}
	}
}

// TestCancel_ReturnsPromptly: cancelling ctx or closing the connection
// ends a Do blocked on a silent server at once, as cancelled.
func TestCancel_ReturnsPromptly(t *testing.T) {
	release := make(chan struct{})
	s := newServer(t, func(w nethttp.ResponseWriter, r *nethttp.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	t.Cleanup(func() { close(release) })
	d := newDriver(t, schema.HTTP{}, s.URL)

	t.Run("ctx", func(t *testing.T) {
		c := dial(t, d)
		ctx, cancel := context.WithCancelCause(context.Background())
		ctx, cancel2 := context.WithTimeout(ctx, 30*time.Second)
		defer cancel2()
		time.AfterFunc(50*time.Millisecond, func() { cancel(errors.New("end of phase")) })
		t0 := time.Now()
		out := c.Do(ctx, drivers.Request{Seq: 1})
		if el := time.Since(t0); el > 5*time.Second {
			t.Errorf("Do took %v after cancellation", el)
		}
		if out.Class != drivers.Cancelled || out.Responded || !strings.Contains(out.Err.Error(), "end of phase") {
			t.Errorf("%+v, want cancelled with its cause", out)
		}
	})
	t.Run("close", func(t *testing.T) {
		c := dial(t, d)
		time.AfterFunc(50*time.Millisecond, func() { c.Close() })
		t0 := time.Now()
		out := do(c, 1, 30*time.Second)
		if el := time.Since(t0); el > 5*time.Second {
			t.Errorf("Do took %v after Close", el)
		}
		if out.Class != drivers.Cancelled {
			t.Errorf("%+v, want cancelled", out)
		}
		opened := d.Opened()
		if out := do(c, 2, 10*time.Second); out.Class != drivers.Cancelled || d.Opened() != opened {
			t.Errorf("Do after Close: %+v (opened %d → %d), want cancelled without a dial", out, opened, d.Opened())
		}
	})
	t.Run("already cancelled", func(t *testing.T) {
		c := dial(t, d)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if out := c.Do(ctx, drivers.Request{Seq: 1}); out.Class != drivers.Cancelled || out.BytesOut != 0 {
			t.Errorf("%+v, want cancelled before send", out)
		}
	})
}

// TestTLS: verification is on by default (a self-signed certificate
// fails as connect "TLS"); ca_file and insecure_skip_verify pass.
func TestTLS(t *testing.T) {
	s := httptest.NewUnstartedServer(nethttp.HandlerFunc(okHandler))
	s.Config.ErrorLog = log.New(io.Discard, "", 0) // failed handshakes are expected
	s.StartTLS()
	t.Cleanup(s.Close)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(t.TempDir(), "empty.pem")
	os.WriteFile(empty, []byte("not a certificate\n"), 0o600)
	if _, err := New(schema.HTTP{TLS: &schema.TLS{CAFile: empty}}, s.URL, ""); err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Errorf("ca_file without certificates: %v", err)
	}

	tests := []struct {
		name     string
		tls      *schema.TLS
		wantCode string // "" means success
	}{
		{"default verifies", nil, "TLS"},
		{"ca_file", &schema.TLS{CAFile: ca}, ""},
		{"ca_file and server_name", &schema.TLS{CAFile: ca, ServerName: "example.com"}, ""},
		{"ca_file and wrong server_name", &schema.TLS{CAFile: ca, ServerName: "wrong.invalid"}, "TLS"},
		{"insecure", &schema.TLS{InsecureSkipVerify: true}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newDriver(t, schema.HTTP{TLS: tt.tls}, s.URL)
			if d.Insecure() != (tt.tls != nil && tt.tls.InsecureSkipVerify) {
				t.Errorf("Insecure() = %v", d.Insecure())
			}
			c, err := d.Dial(context.Background())
			if tt.wantCode != "" {
				class, code := drivers.Classify(err)
				if class != drivers.Connect || code != tt.wantCode {
					t.Fatalf("Dial: %v classed %s %q, want connect %q", err, class, code, tt.wantCode)
				}
				if d.Opened() != 1 {
					t.Errorf("Opened() = %d: the TCP connection counts even when TLS fails", d.Opened())
				}
				return
			}
			if err != nil {
				t.Fatalf("Dial: %v", err)
			}
			defer c.Close()
			for i := 1; i <= 3; i++ {
				if out := do(c, uint64(i), 10*time.Second); out.Class != drivers.OK || out.Dialed != 0 {
					t.Fatalf("request %d: %+v", i, out)
				}
			}
		})
	}
}

// B14, the defect pinned: waiting for a body after HEAD, 204 or 304, which
// have none, until the server closes.
//
// TestField_B14_HeadAnd204And304WithoutBodies: HEAD, 204 and 304
// responses have no body whatever their headers say (RFC 9112 §6.3); the
// connection stays in sync across 300 exchanges on at most three
// connections, and bytes in are the headers only.
func TestField_B14_HeadAnd204And304WithoutBodies(t *testing.T) {
	responses := map[string]string{
		"HEAD / HTTP/1.1":   "HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n",
		"GET /204 HTTP/1.1": "HTTP/1.1 204 No Content\r\nContent-Length: 10\r\n\r\n",
		"GET /304 HTTP/1.1": "HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked\r\n\r\n",
	}
	s := newRawServer(t, func(c net.Conn, br *bufio.Reader) {
		for {
			line, err := readHead(br)
			if err != nil {
				return
			}
			resp, ok := responses[line]
			if !ok {
				resp = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n"
			}
			if _, err := io.WriteString(c, resp); err != nil {
				return
			}
		}
	})
	phases := []struct {
		method, path, line string
	}{
		{"HEAD", "/", "HEAD / HTTP/1.1"},
		{"GET", "/204", "GET /204 HTTP/1.1"},
		{"GET", "/304", "GET /304 HTTP/1.1"},
	}
	ok, timeouts := 0, 0
	for _, ph := range phases {
		d := newDriver(t, schema.HTTP{Method: ph.method, Path: ph.path, Timeout: schema.Duration(2 * time.Second)}, "http://"+s.addr)
		c := dial(t, d)
		for i := 1; i <= 100; i++ {
			t0 := time.Now()
			out := do(c, uint64(i), 2*time.Second)
			elapsed := time.Since(t0)
			switch out.Class {
			case drivers.OK:
				ok++
			case drivers.Timeout:
				timeouts++
			}
			if out.Class != drivers.OK {
				t.Fatalf("%s %s #%d after %v: %+v", ph.method, ph.path, i, elapsed, out)
			}
			if want := int64(len(responses[ph.line])); out.BytesIn != want {
				t.Fatalf("%s %s #%d: BytesIn %d, want the headers only (%d)", ph.method, ph.path, i, out.BytesIn, want)
			}
		}
	}
	if ok != 300 || timeouts != 0 {
		t.Errorf("ok %d timeouts %d, want 300 and 0", ok, timeouts)
	}
	if n := s.accepted.Load(); n > 3 {
		t.Errorf("%d connections for 300 exchanges, want ≤ 3 (out of sync)", n)
	}
}

// TestInterimResponses: 1xx responses before the final one are skipped.
func TestInterimResponses(t *testing.T) {
	s := newRawServer(t, func(c net.Conn, br *bufio.Reader) {
		for {
			if _, err := readHead(br); err != nil {
				return
			}
			io.WriteString(c, "HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		}
	})
	d := newDriver(t, schema.HTTP{}, "http://"+s.addr)
	c := dial(t, d)
	for i := 1; i <= 3; i++ {
		if out := do(c, uint64(i), 10*time.Second); out.Class != drivers.OK || out.Dialed != 0 {
			t.Fatalf("request %d: %+v", i, out)
		}
	}
}

// TestFirstByte: FirstByte covers the server's think time; Connect is
// set only when Do dialled.
func TestFirstByte(t *testing.T) {
	s := newServer(t, func(w nethttp.ResponseWriter, r *nethttp.Request) {
		time.Sleep(30 * time.Millisecond)
		okHandler(w, r)
	})
	d := newDriver(t, schema.HTTP{}, s.URL)
	c := dial(t, d)
	out := do(c, 1, 10*time.Second)
	if out.Class != drivers.OK || out.FirstByte < 30*time.Millisecond || out.Connect != 0 {
		t.Fatalf("%+v, want FirstByte ≥ 30ms and no Connect", out)
	}
}

// B02, the defect pinned: the latency clock started after the request was
// written, hiding a slow send.
//
// TestField_B02_TimeSitsBeforeFirstByte: a body the server reads slowly
// delays the first response byte; FirstByte (from Do's start, before the
// write) includes that time and Connect stays zero.
func TestField_B02_TimeSitsBeforeFirstByte(t *testing.T) {
	const size, chunk, pause = 256 << 10, 32 << 10, 25 * time.Millisecond // ≥ 175 ms to read
	s := newRawServer(t, func(c net.Conn, br *bufio.Reader) {
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetReadBuffer(16 << 10)
		}
		if _, err := readHead(br); err != nil {
			return
		}
		for left := size; left > 0; left -= chunk {
			if _, err := io.CopyN(io.Discard, br, int64(min(chunk, left))); err != nil {
				return
			}
			time.Sleep(pause)
		}
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
	})
	d := newDriver(t, schema.HTTP{Method: "POST", BodySize: size}, "http://"+s.addr)
	c := dial(t, d)
	out := do(c, 1, 10*time.Second)
	if out.Class != drivers.OK {
		t.Fatalf("%+v", out)
	}
	if floor := time.Duration(size/chunk-1) * pause; out.FirstByte < floor || out.Connect != 0 {
		t.Errorf("FirstByte %v, Connect %v; want FirstByte ≥ %v (the server's reading time) and no Connect", out.FirstByte, out.Connect, floor)
	}
}

// benchStub starts a raw stub that reads each request (its head and
// Content-Length body) and answers 200 "ok\n", allocating nothing per
// request, so the allocations a benchmark reports are the driver's.
func benchStub(b *testing.B) *rawServer {
	resp := []byte("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n\r\nok\n")
	return newRawServer(b, func(c net.Conn, br *bufio.Reader) {
		for {
			n := 0
			for {
				line, err := br.ReadSlice('\n')
				if err != nil {
					return
				}
				if len(line) <= 2 {
					break
				}
				if v, ok := bytes.CutPrefix(line, []byte("Content-Length: ")); ok {
					n, _ = strconv.Atoi(string(bytes.TrimSpace(v)))
				}
			}
			if _, err := br.Discard(n); err != nil {
				return
			}
			if _, err := c.Write(resp); err != nil {
				return
			}
		}
	})
}

// benchCases are the requests BenchmarkDo and BenchmarkClosedLoop send.
func benchCases(b *testing.B) []struct {
	name string
	cfg  schema.HTTP
} {
	users := filepath.Join(b.TempDir(), "users.csv")
	if err := os.WriteFile(users, []byte("user,token\nann,t1\nbob,t2\ncy,t3\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	return []struct {
		name string
		cfg  schema.HTTP
	}{
		{"get", schema.HTTP{Path: "/item/{{seq}}", Headers: map[string]string{"X-Seq": "{{seq}}"}}},
		{"post-rule", schema.HTTP{Method: "POST", Path: "/item/{{seq}}", Body: `{"id":{{seq}}}`, Success: `status == 200 && body == "ok\n"`}},
		// Data columns in path, header and body: rendered by appending,
		// so no more allocation than get.
		{"post-data", schema.HTTP{Method: "POST", Path: "/u/{{data.user}}", Headers: map[string]string{"X-Token": "{{data.token}}"},
			Body: `{"user":"{{data.user}}","n":{{seq}}}`, Data: users, DataOrder: "random", DataSeed: 1}},
		// A cookie jar looked up for every request (the stub sets none).
		{"get-cookies", schema.HTTP{Path: "/item/{{seq}}", Cookies: boolp(true)}},
	}
}

// BenchmarkDo measures the client side of one keep-alive exchange
// against benchStub.
func BenchmarkDo(b *testing.B) {
	s := benchStub(b)
	for _, bc := range benchCases(b) {
		b.Run(bc.name, func(b *testing.B) {
			d := newDriver(b, bc.cfg, "http://"+s.addr)
			c := dial(b, d)
			ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
			defer cancel()
			b.ReportAllocs()
			var seq uint64
			for b.Loop() {
				seq++
				if out := c.Do(ctx, drivers.Request{Seq: seq}); out.Class != drivers.OK {
					b.Fatalf("%+v", out)
				}
			}
		})
	}
}

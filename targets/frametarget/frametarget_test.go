package frametarget

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	nethttp "net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runner-dev/runner/targets/targettest"
)

// start runs Serve with cfg on 127.0.0.1 and returns its host:port and a
// stop function (see targettest.Start).
func start(t *testing.T, cfg Config) (string, func() time.Duration) {
	t.Helper()
	return targettest.Start(t, func(ctx context.Context, ready func(string)) error { return Serve(ctx, cfg, ready) })
}

// client is a tiny LKDF client, written independently of the server's
// encoder.
type client struct {
	t  *testing.T
	nc net.Conn
}

func dial(t *testing.T, addr string) *client {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { nc.Close() })
	return &client{t: t, nc: nc}
}

// frame encodes a frame with the given header fields.
func frame(magic uint32, version, typ byte, flags uint16, id uint32, length uint32, payload []byte) []byte {
	b := make([]byte, 16, 16+len(payload))
	binary.BigEndian.PutUint32(b[0:], magic)
	b[4] = version
	b[5] = typ
	binary.BigEndian.PutUint16(b[6:], flags)
	binary.BigEndian.PutUint32(b[8:], id)
	binary.BigEndian.PutUint32(b[12:], length)
	return append(b, payload...)
}

func request(flags uint16, id uint32, payload []byte) []byte {
	return frame(0x4C4B4446, 1, 1, flags, id, uint32(len(payload)), payload)
}

func (c *client) write(b []byte) {
	c.t.Helper()
	c.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// resp is a decoded response frame.
type resp struct {
	magic   uint32
	version byte
	typ     byte
	flags   uint16
	id      uint32
	payload []byte
}

// read reads one response frame within 5 s; it refuses lengths over 1 MiB.
func (c *client) read() resp {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	var h [16]byte
	if _, err := io.ReadFull(c.nc, h[:]); err != nil {
		c.t.Fatalf("read header: %v", err)
	}
	r := resp{
		magic:   binary.BigEndian.Uint32(h[0:]),
		version: h[4],
		typ:     h[5],
		flags:   binary.BigEndian.Uint16(h[6:]),
		id:      binary.BigEndian.Uint32(h[8:]),
	}
	n := binary.BigEndian.Uint32(h[12:])
	if n > 1<<20 {
		c.t.Fatalf("response length %d", n)
	}
	r.payload = make([]byte, n)
	if _, err := io.ReadFull(c.nc, r.payload); err != nil {
		c.t.Fatalf("read payload: %v", err)
	}
	if r.magic != 0x4C4B4446 || r.version != 1 || r.typ != 2 {
		c.t.Fatalf("bad response header % x", h)
	}
	return r
}

// readExactly reads n raw bytes within 5 s.
func (c *client) readExactly(n int) []byte {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	b := make([]byte, n)
	if _, err := io.ReadFull(c.nc, b); err != nil {
		c.t.Fatalf("read %d bytes: %v", n, err)
	}
	return b
}

// expectClosed checks the server closes the connection within 2 s
// (EOF or reset), discarding whatever arrives before.
func (c *client) expectClosed() {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(2 * time.Second))
	_, err := io.Copy(io.Discard, c.nc)
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		c.t.Fatal("connection not closed by the server within 2s")
	}
}

// expectSilence checks nothing arrives within d and the connection stays open.
func (c *client) expectSilence(d time.Duration) {
	c.t.Helper()
	c.nc.SetReadDeadline(time.Now().Add(d))
	var b [1]byte
	n, err := c.nc.Read(b[:])
	if n > 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		c.t.Fatalf("want silence on an open connection; got %d bytes, %v", n, err)
	}
}

func stats(t *testing.T, addr string) map[string]int64 {
	t.Helper()
	hc := &nethttp.Client{Timeout: 5 * time.Second}
	r, err := hc.Get("http://" + addr + "/stats")
	if err != nil {
		t.Fatalf("GET /stats: %v", err)
	}
	defer r.Body.Close()
	var m map[string]int64
	if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
		t.Fatalf("/stats: %v", err)
	}
	hc.CloseIdleConnections()
	return m
}

// waitStats polls /stats until every counter in want has its value (2 s).
func waitStats(t *testing.T, addr string, want map[string]int64) map[string]int64 {
	t.Helper()
	var m map[string]int64
	for i := 0; i < 200; i++ {
		m = stats(t, addr)
		ok := true
		for k, v := range want {
			if m[k] != v {
				ok = false
			}
		}
		if ok {
			return m
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("stats %v; want %v", m, want)
	return nil
}

func payloadOf(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7) + seed
	}
	return b
}

func TestEchoRoundTrip(t *testing.T) {
	addr, _ := start(t, Config{})
	c := dial(t, addr)
	var total int64
	for i, n := range []int{0, 1024, 1 << 20} {
		p := payloadOf(n, byte(i))
		c.write(request(0xBEEF, uint32(100+i), p))
		r := c.read()
		if r.id != uint32(100+i) || r.flags != 0xBEEF || !bytes.Equal(r.payload, p) {
			t.Fatalf("payload %d: id %d flags %#x len %d; want echo", n, r.id, r.flags, len(r.payload))
		}
		total += int64(n)
	}
	waitStats(t, addr, map[string]int64{"requests": 3, "responses": 3, "bytes_in": total, "bytes_out": total, "connections": 1, "bad_frames": 0})
}

// payloadDigest is the digest handler's reply: every round hashes the
// whole payload, so the reply is its SHA-256 whatever the rounds.
func payloadDigest(p []byte) []byte {
	h := sha256.Sum256(p)
	return h[:]
}

func TestDigest(t *testing.T) {
	for _, rounds := range []int{0, 1, 3} { // 0: the default, 16
		addr, _ := start(t, Config{Handler: HandlerDigest, Rounds: rounds})
		c := dial(t, addr)
		want := rounds
		if want == 0 {
			want = 16
		}
		for i, n := range []int{0, 100, 70000} {
			p := payloadOf(n, 3)
			c.write(request(1, uint32(i), p))
			r := c.read()
			if d := payloadDigest(p); r.id != uint32(i) || !bytes.Equal(r.payload, d) {
				t.Fatalf("rounds %d, payload %d: got %x; want %x", want, n, r.payload, d)
			}
		}
	}
}

func TestBadFrames(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"over 1 MiB", frame(0x4C4B4446, 1, 1, 0, 1, 1<<20+1, nil)},
		{"max length", frame(0x4C4B4446, 1, 1, 0, 1, 0xFFFFFFFF, nil)},
		{"bad magic", frame(0x4C4B4447, 1, 1, 0, 1, 3, []byte("abc"))},
		{"bad version", frame(0x4C4B4446, 2, 1, 0, 1, 3, []byte("abc"))},
		{"response type", frame(0x4C4B4446, 1, 2, 0, 1, 3, []byte("abc"))},
		{"type 0", frame(0x4C4B4446, 1, 0, 0, 1, 3, []byte("abc"))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr, _ := start(t, Config{})
			c := dial(t, addr)
			// A good frame first: it is answered, then the bad one closes.
			c.write(request(0, 7, []byte("hi")))
			if r := c.read(); r.id != 7 {
				t.Fatalf("id %d", r.id)
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			c.write(tc.b)
			c.expectClosed()
			runtime.ReadMemStats(&after)
			// The hostile length is never allocated (nor anything near 1 MiB).
			if d := after.TotalAlloc - before.TotalAlloc; d > 512<<10 {
				t.Errorf("%d bytes allocated while refusing the frame", d)
			}
			waitStats(t, addr, map[string]int64{"bad_frames": 1, "requests": 1, "responses": 1})
		})
	}
}

func TestHTTPOnSamePort(t *testing.T) {
	addr, _ := start(t, Config{})
	c := dial(t, addr)
	c.write(request(0, 1, []byte("x")))
	c.read()
	hc := &nethttp.Client{Timeout: 5 * time.Second, Transport: &nethttp.Transport{DisableKeepAlives: true}}
	get := func(path string) (int, string) {
		r, err := hc.Get("http://" + addr + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer r.Body.Close()
		b, _ := io.ReadAll(r.Body)
		return r.StatusCode, string(b)
	}
	if code, body := get("/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("/healthz: %d %q", code, body)
	}
	if code, _ := get("/nope"); code != 404 {
		t.Errorf("/nope: %d; want 404", code)
	}
	if r, err := hc.Head("http://" + addr + "/healthz"); err != nil || r.StatusCode != 200 {
		t.Errorf("HEAD /healthz: %v %v", r, err)
	}
	code, body := get("/stats")
	if code != 200 {
		t.Fatalf("/stats: %d", code)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatalf("/stats %q: %v", body, err)
	}
	for _, k := range []string{"requests", "responses", "bad_frames", "connections", "control_connections", "closed_by_server", "cut_sent", "malformed_sent", "unknown_sent", "bytes_in", "bytes_out"} {
		if _, ok := m[k].(float64); !ok {
			t.Errorf("/stats has no number %q: %s", k, body)
		}
	}
	if len(m) != 11 {
		t.Errorf("/stats has %d keys; want 11: %s", len(m), body)
	}
	// 4 so far (healthz, nope, HEAD, stats) plus this fetch.
	waitStats(t, addr, map[string]int64{"connections": 1, "control_connections": 5, "requests": 1})
}

// TestWorkersConcurrency: 8 connections pipelining frames get exactly
// their replies, in order per connection, with 1 and 4 workers.
func TestWorkersConcurrency(t *testing.T) {
	for _, workers := range []int{1, 4} {
		for _, handler := range []string{HandlerEcho, HandlerDigest} {
			t.Run(fmt.Sprintf("%d-%s", workers, handler), func(t *testing.T) {
				addr, _ := start(t, Config{Workers: workers, Handler: handler})
				const conns, frames = 8, 50
				var wg sync.WaitGroup
				errs := make(chan error, conns)
				for ci := 0; ci < conns; ci++ {
					nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
					if err != nil {
						t.Fatal(err)
					}
					defer nc.Close()
					nc.SetDeadline(time.Now().Add(10 * time.Second))
					wg.Add(2)
					go func() {
						defer wg.Done()
						for i := 0; i < frames; i++ {
							if _, err := nc.Write(request(uint16(ci), uint32(ci<<16|i), payloadOf(100+i*31, byte(ci)))); err != nil {
								errs <- err
								return
							}
						}
					}()
					go func() {
						defer wg.Done()
						for i := 0; i < frames; i++ {
							var h [16]byte
							if _, err := io.ReadFull(nc, h[:]); err != nil {
								errs <- err
								return
							}
							n := binary.BigEndian.Uint32(h[12:])
							if n > 1<<20 {
								errs <- fmt.Errorf("length %d", n)
								return
							}
							p := make([]byte, n)
							if _, err := io.ReadFull(nc, p); err != nil {
								errs <- err
								return
							}
							want := payloadOf(100+i*31, byte(ci))
							if handler == HandlerDigest {
								want = payloadDigest(want)
							}
							id, flags := binary.BigEndian.Uint32(h[8:]), binary.BigEndian.Uint16(h[6:])
							if id != uint32(ci<<16|i) || flags != uint16(ci) || !bytes.Equal(p, want) {
								errs <- fmt.Errorf("conn %d frame %d: id %#x flags %d, payload ok %v", ci, i, id, flags, bytes.Equal(p, want))
								return
							}
						}
					}()
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					t.Error(err)
				}
				waitStats(t, addr, map[string]int64{"requests": conns * frames, "responses": conns * frames, "connections": conns})
			})
		}
	}
}

func TestMalformed(t *testing.T) {
	hdr := func(magic uint32, flags uint16, id, length uint32) []byte {
		return frame(magic, 1, 2, flags, id, length, nil)
	}
	p := []byte("payload!")
	for _, tc := range []struct {
		kind    string
		want    []byte // what follows the first (plain) reply
		silence bool
		stats   map[string]int64
	}{
		{MalformedHugeLength, append(hdr(0x4C4B4446, 5, 2, 0x80000000), make([]byte, 10)...), true,
			map[string]int64{"malformed_sent": 1, "responses": 1, "unknown_sent": 0}},
		{MalformedMaxLength, hdr(0x4C4B4446, 5, 2, 0xFFFFFFFF), true,
			map[string]int64{"malformed_sent": 1, "responses": 1}},
		{MalformedBadMagic, hdr(0x47455420, 5, 2, uint32(len(p))), true,
			map[string]int64{"malformed_sent": 1, "responses": 1}},
		{MalformedUnknownID, append(hdr(0x4C4B4446, 5, 2^0x80000000, 0), frame(0x4C4B4446, 1, 2, 5, 2, uint32(len(p)), p)...), false,
			map[string]int64{"malformed_sent": 1, "unknown_sent": 1, "responses": 4, "bytes_out": 3 * int64(len(p))}},
		{MalformedZeroLength, hdr(0x4C4B4446, 5, 2, 0), false,
			map[string]int64{"malformed_sent": 1, "responses": 3, "bytes_out": 2 * int64(len(p))}},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			addr, _ := start(t, Config{MalformedEvery: 2, Malformed: tc.kind})
			c := dial(t, addr)
			c.write(request(5, 1, p))
			if r := c.read(); r.id != 1 || !bytes.Equal(r.payload, p) {
				t.Fatalf("reply 1: %+v", r)
			}
			c.write(request(5, 2, p))
			if got := c.readExactly(len(tc.want)); !bytes.Equal(got, tc.want) {
				t.Fatalf("fault bytes\n got % x\nwant % x", got, tc.want)
			}
			c.write(request(5, 3, p))
			if tc.silence {
				// Nothing more, and the connection stays open.
				c.expectSilence(300 * time.Millisecond)
				c.write(request(5, 4, p))
				c.expectSilence(100 * time.Millisecond)
				tc.stats["requests"] = 4
			} else {
				if r := c.read(); r.id != 3 || !bytes.Equal(r.payload, p) {
					t.Fatalf("reply 3: %+v", r)
				}
				tc.stats["requests"] = 3
			}
			waitStats(t, addr, tc.stats)
		})
	}
}

func TestReorder(t *testing.T) {
	addr, _ := start(t, Config{Reorder: 3})
	c := dial(t, addr)
	for id := uint32(1); id <= 5; id++ {
		c.write(request(0, id, []byte{byte(id)}))
	}
	t0 := time.Now()
	var got []uint32
	for i := 0; i < 5; i++ {
		r := c.read()
		if !bytes.Equal(r.payload, []byte{byte(r.id)}) {
			t.Fatalf("id %d payload %v", r.id, r.payload)
		}
		got = append(got, r.id)
	}
	if fmt.Sprint(got) != "[3 2 1 5 4]" {
		t.Errorf("order %v; want [3 2 1 5 4]", got)
	}
	if d := time.Since(t0); d < 40*time.Millisecond {
		t.Errorf("partial batch after %s; want about 50ms", d)
	}
}

func TestCloseAfter(t *testing.T) {
	addr, _ := start(t, Config{CloseAfter: 2})
	c := dial(t, addr)
	for id := uint32(1); id <= 3; id++ {
		c.write(request(0, id, []byte("x")))
	}
	for id := uint32(1); id <= 2; id++ {
		if r := c.read(); r.id != id {
			t.Fatalf("reply %d: id %d", id, r.id)
		}
	}
	c.nc.SetReadDeadline(time.Now().Add(2 * time.Second))
	if n, err := c.nc.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Fatalf("after the 2nd reply: %d bytes, %v; want EOF", n, err)
	}
	c.nc.Close()
	waitStats(t, addr, map[string]int64{"closed_by_server": 1, "responses": 2, "requests": 3})
	// A new connection gets its own count.
	c2 := dial(t, addr)
	c2.write(request(0, 9, nil))
	c2.read()
	c2.write(request(0, 10, nil))
	c2.read()
	c2.expectClosed()
	waitStats(t, addr, map[string]int64{"closed_by_server": 2, "responses": 4})
}

// CutAfter 2: two whole replies, then the first half of the third
// (header and 42 of its 100 payload bytes), then FIN; the fourth request's
// reply is dropped. The cut is no response.
func TestCutAfter(t *testing.T) {
	addr, _ := start(t, Config{CutAfter: 2})
	c := dial(t, addr)
	p := payloadOf(100, 7)
	for id := uint32(1); id <= 4; id++ {
		c.write(request(5, id, p))
	}
	for id := uint32(1); id <= 2; id++ {
		if r := c.read(); r.id != id {
			t.Fatalf("reply %d: id %d", id, r.id)
		}
	}
	c.nc.SetReadDeadline(time.Now().Add(2 * time.Second))
	rest, err := io.ReadAll(c.nc)
	if err != nil {
		t.Fatalf("after the 2nd reply: %v; want half a frame, then EOF", err)
	}
	whole := frame(0x4C4B4446, 1, 2, 5, 3, 100, p)
	if !bytes.Equal(rest, whole[:len(whole)/2]) {
		t.Fatalf("after the 2nd reply: % x\nwant the first half of the 3rd: % x", rest, whole[:len(whole)/2])
	}
	c.nc.Close()
	waitStats(t, addr, map[string]int64{"closed_by_server": 1, "cut_sent": 1, "responses": 2, "requests": 4})
}

func TestDelay(t *testing.T) {
	const d = 150 * time.Millisecond
	addr, _ := start(t, Config{Delay: d, Workers: 1})
	// Two connections on the one worker: the wait must not serialize them.
	a, b := dial(t, addr), dial(t, addr)
	t0 := time.Now()
	a.write(request(0, 1, []byte("a")))
	b.write(request(0, 2, []byte("b")))
	ra := a.read()
	ta := time.Since(t0)
	rb := b.read()
	tb := time.Since(t0)
	if ra.id != 1 || rb.id != 2 {
		t.Fatalf("ids %d %d", ra.id, rb.id)
	}
	if ta < d || tb < d {
		t.Errorf("replies after %s and %s; want not before %s", ta, tb, d)
	}
	if tb > 2*d {
		t.Errorf("second reply after %s: the delay held up the worker", tb)
	}
}

// TestDelayPipelined: pipelined frames on one connection each wait the
// delay and keep their order.
func TestDelayPipelined(t *testing.T) {
	const d = 30 * time.Millisecond
	addr, _ := start(t, Config{Delay: d})
	c := dial(t, addr)
	sent := make([]time.Time, 20)
	for i := range sent {
		sent[i] = time.Now()
		c.write(request(0, uint32(i), []byte{byte(i)}))
		time.Sleep(time.Millisecond)
	}
	for i := range sent {
		r := c.read()
		if r.id != uint32(i) {
			t.Fatalf("reply %d has id %d: out of order", i, r.id)
		}
		if took := time.Since(sent[i]); took < d {
			t.Errorf("reply %d after %s; want not before %s", i, took, d)
		}
	}
}

func TestServeStopsWithClientsConnected(t *testing.T) {
	addr, stop := start(t, Config{Delay: 10 * time.Second})
	c := dial(t, addr)
	c.write(request(0, 1, []byte("never answered in time")))
	idle := dial(t, addr) // never sends a byte: still being classified
	_ = idle
	half := dial(t, addr)
	half.write([]byte("LKDF\x01\x01")) // half a header
	ctl, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer ctl.Close()
	fmt.Fprintf(ctl, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n") // keep-alive
	ctl.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := ctl.Read(make([]byte, 100)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if took := stop(); took > 2*time.Second {
		t.Errorf("Serve returned %s after cancel; want within 2s", took)
	}
	c.expectClosed()
	idle.expectClosed()
	half.expectClosed()
}

// TestGracefulShutdown: replies already due leave before the close.
func TestGracefulShutdown(t *testing.T) {
	addr, stop := start(t, Config{Delay: 200 * time.Millisecond})
	c := dial(t, addr)
	c.write(request(0, 1, []byte("due")))
	time.Sleep(50 * time.Millisecond) // read by the server
	go stop()
	if r := c.read(); r.id != 1 {
		t.Fatalf("id %d", r.id)
	}
	c.expectClosed()
}

// TestHalfClose: a client that half-closes still gets its replies.
func TestHalfClose(t *testing.T) {
	addr, _ := start(t, Config{Delay: 50 * time.Millisecond})
	c := dial(t, addr)
	c.write(request(0, 1, []byte("a")))
	c.write(request(0, 2, []byte("b")))
	c.nc.(*net.TCPConn).CloseWrite()
	c.read()
	c.read()
	c.expectClosed()
}

func TestParseArgs(t *testing.T) {
	cfg, err := ParseArgs([]string{"--handler", "digest", "--rounds", "3", "--workers", "1", "--delay", "5ms", "--reorder", "4", "--malformed-every", "10", "--malformed", "unknown-id", "--cut-after", "9", "-listen", "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	want := Config{Listen: "127.0.0.1:0", Handler: "digest", Rounds: 3, Workers: 1, Delay: 5 * time.Millisecond, Reorder: 4, MalformedEvery: 10, Malformed: "unknown-id", CutAfter: 9}
	if cfg != want {
		t.Errorf("got %+v\nwant %+v", cfg, want)
	}
	if cfg, err := ParseArgs([]string{"--close-after", "7"}); err != nil || cfg.CloseAfter != 7 {
		t.Errorf("--close-after 7: %+v, %v", cfg, err)
	}
	if cfg, err := ParseArgs(nil); err != nil || cfg != (Config{Listen: DefaultListen, Handler: "echo", Rounds: 16, Workers: 4}) {
		t.Errorf("defaults: %+v, %v", cfg, err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--handler", "sha"}, `handler "sha"`},
		{[]string{"--rounds", "0"}, "rounds 0"},
		{[]string{"--rounds", "-1"}, "rounds -1"},
		{[]string{"--workers", "0"}, "workers 0"},
		{[]string{"--workers", "-2"}, "workers -2"},
		{[]string{"--delay", "-1ms"}, "delay -1ms"},
		{[]string{"--delay", "5"}, "a duration needs a unit"},
		{[]string{"--reorder", "-1"}, "must not be negative"},
		{[]string{"--reorder", "1"}, "reorder 1"},
		{[]string{"--close-after", "-3"}, "must not be negative"},
		{[]string{"--cut-after", "-3"}, "must not be negative"},
		{[]string{"--close-after", "3", "--cut-after", "3"}, "give one of them"},
		{[]string{"--malformed-every", "-3", "--malformed", "zero-length"}, "must not be negative"},
		{[]string{"--malformed-every", "3"}, "needs --malformed KIND"},
		{[]string{"--malformed", "zero-length"}, "needs --malformed-every N"},
		{[]string{"--malformed-every", "3", "--malformed", "garbage"}, `malformed "garbage": want one of`},
		{[]string{"--nope"}, "flag provided but not defined"},
		{[]string{"extra"}, `unexpected argument "extra"`},
	} {
		_, err := ParseArgs(tc.args)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseArgs(%q): %v; want an error with %q", tc.args, err, tc.want)
		}
	}
	u := Usage()
	for _, f := range []string{"-listen", "-handler", "-rounds", "-workers", "-delay", "-reorder", "-malformed-every", "-malformed ", "-close-after", "-cut-after"} {
		if !strings.Contains(u, f) {
			t.Errorf("Usage lacks %s:\n%s", f, u)
		}
	}
}

func TestServeRejectsBadConfig(t *testing.T) {
	err := Serve(context.Background(), Config{Handler: "nope"}, nil)
	if err == nil {
		t.Fatal("Serve accepted handler nope")
	}
}

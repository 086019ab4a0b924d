//go:build linux

package http

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/runner-dev/runner/drivers"
	"github.com/runner-dev/runner/schema"
)

// loopHooks drives RunClosed in tests: per requests per slot, each with
// the driver's timeout, outcomes kept by slot.
type loopHooks struct {
	per     int
	timeout time.Duration
	think   time.Duration

	mu   sync.Mutex
	seq  uint64
	sent map[int]int
	outs map[int][]drivers.Outcome
	// next, when set, is called for every request: false stops the slot.
	next func(k, i int) bool
}

func newLoopHooks(per int, timeout time.Duration) *loopHooks {
	return &loopHooks{per: per, timeout: timeout, sent: map[int]int{}, outs: map[int][]drivers.Outcome{}}
}

func (h *loopHooks) Start() time.Time       { return epoch }
func (h *loopHooks) Timeout() time.Duration { return h.timeout }

func (h *loopHooks) Next(k int) (drivers.Request, time.Duration, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sent[k] >= h.per || h.next != nil && !h.next(k, h.sent[k]) {
		return drivers.Request{}, 0, false
	}
	h.sent[k]++
	h.seq++
	return drivers.Request{Seq: h.seq, Slot: k}, time.Since(epoch), true
}

func (h *loopHooks) Done(_, k int, _ drivers.Request, out drivers.Outcome, _ time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.outs[k] = append(h.outs[k], out)
}

func (h *loopHooks) Think() time.Duration { return h.think }

// step is what a scripted server does for one request: writes its chunks
// (a pause between them), then perhaps closes (with a reset when reset),
// or waits before answering at all.
type step struct {
	chunks []string
	close  bool
	reset  bool
	cork   bool
	wait   time.Duration
	// silent: no answer; the server reads until the client closes.
	silent bool
}

// scripted starts a server that answers its i-th request (1-based, over
// all its connections) with script(i).
func scripted(t *testing.T, script func(i int64) step) *rawServer {
	var n atomic.Int64
	return newRawServer(t, func(c net.Conn, br *bufio.Reader) {
		for {
			if _, err := readHead(br); err != nil {
				return
			}
			st := script(n.Add(1))
			if st.silent {
				io.Copy(io.Discard, br)
				return
			}
			if st.cork {
				cork(t, c)
			}
			time.Sleep(st.wait)
			for j, ch := range st.chunks {
				if j > 0 {
					time.Sleep(2 * time.Millisecond)
				}
				if _, err := io.WriteString(c, ch); err != nil {
					return
				}
			}
			if st.reset {
				c.(*net.TCPConn).SetLinger(0)
				return
			}
			if st.close {
				return
			}
		}
	})
}

// viaDo sends n requests through Do on one connection, one after the
// other, as a closed-model goroutine does, and one more.
func viaDo(t *testing.T, d *Driver, n int) []drivers.Outcome {
	c := dial(t, d)
	var outs []drivers.Outcome
	for i := 1; i <= n+1; i++ {
		outs = append(outs, c.Do(t.Context(), drivers.Request{Seq: uint64(i), Deadline: time.Now().Add(d.timeout)}))
	}
	return outs
}

// viaLoop sends n requests through RunClosed on one slot, then one more
// through Do on the connection the loop hands back: the socket is Go's
// again.
func viaLoop(t *testing.T, d *Driver, n int) []drivers.Outcome {
	c := dial(t, d)
	h := newLoopHooks(n, d.timeout)
	kept, err := d.RunClosed(t.Context(), make(chan struct{}), []drivers.Conn{c}, 1, h)
	if err != nil {
		t.Fatalf("RunClosed: %v", err)
	}
	if kept[0] != c {
		t.Fatalf("the loop handed back %v for the slot's conn %v", kept[0], c)
	}
	return append(h.outs[0], c.Do(t.Context(), drivers.Request{Seq: uint64(n + 1), Deadline: time.Now().Add(d.timeout)}))
}

// same is what the loop must agree with Do on for one request.
func same(o drivers.Outcome) string {
	return fmt.Sprintf("class=%s code=%s responded=%v in=%d out=%d dialed=%d", o.Class, o.Code, o.Responded, o.BytesIn, o.BytesOut, o.Dialed)
}

// TestLoop_SameOutcomesAsDo: every response shape, well formed or not,
// ends each request of the event loop exactly as Do ends it: class,
// code, bytes each way, and the re-dials it took.
func TestLoop_SameOutcomesAsDo(t *testing.T) {
	ok := "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
	big := strings.Repeat("x", 3<<20)
	small := strings.Repeat("10\r\n"+strings.Repeat("y", 15)+"\n\r\n", 2<<20/16)
	cases := []struct {
		name   string
		cfg    schema.HTTP
		script func(i int64) step
	}{
		{"content-length", schema.HTTP{}, func(int64) step { return step{chunks: []string{ok}} }},
		{"split everywhere", schema.HTTP{}, func(int64) step {
			return step{chunks: []string{"HTTP/1.1 200 OK\r\nContent-Le", "ngth: 5\r\n\r", "\nhe", "llo"}}
		}},
		{"chunked with a trailer", schema.HTTP{}, func(int64) step {
			return step{chunks: []string{"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhe", "llo\r\n0\r\nX-T: 1\r\n", "\r\n"}}
		}},
		{"interim 100 then 200", schema.HTTP{}, func(int64) step {
			return step{chunks: []string{"HTTP/1.1 100 Continue\r\n\r\n", ok}}
		}},
		{"204 and 304", schema.HTTP{}, func(i int64) step {
			if i%2 == 0 {
				return step{chunks: []string{"HTTP/1.1 304 Not Modified\r\nContent-Length: 9\r\n\r\n"}}
			}
			return step{chunks: []string{"HTTP/1.1 204 No Content\r\n\r\n"}}
		}},
		{"HEAD", schema.HTTP{Method: "HEAD"}, func(int64) step {
			return step{chunks: []string{"HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n"}}
		}},
		{"connection close", schema.HTTP{}, func(int64) step {
			return step{chunks: []string{"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok"}, close: true}
		}},
		{"HTTP/1.0 to the close", schema.HTTP{}, func(int64) step {
			return step{chunks: []string{"HTTP/1.0 200 OK\r\n\r\nsome", " body"}, close: true}
		}},
		{"status 503", schema.HTTP{}, func(int64) step {
			return step{chunks: []string{"HTTP/1.1 503 Busy\r\nContent-Length: 4\r\n\r\nbusy"}}
		}},
		{"malformed status line", schema.HTTP{}, func(int64) step {
			return step{chunks: []string{"HTTP/1.1 2x0 OK\r\n\r\n"}}
		}},
		{"body cut short", schema.HTTP{}, func(int64) step {
			return step{chunks: []string{"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"}, close: true}
		}},
		{"stray bytes behind the response", schema.HTTP{}, func(int64) step { return step{chunks: []string{ok + "garbage"}} }},
		{"close with the response", schema.HTTP{}, func(int64) step { return step{chunks: []string{ok}, cork: true, close: true} }},
		{"3 MiB body", schema.HTTP{}, func(int64) step {
			return step{chunks: []string{"HTTP/1.1 200 OK\r\nContent-Length: 3145728\r\n\r\n" + big[:1<<20], big[1<<20:]}}
		}},
		{"3 MiB body a rule reads", schema.HTTP{Success: `body contains "x"`}, func(int64) step {
			return step{chunks: []string{"HTTP/1.1 200 OK\r\nContent-Length: 3145728\r\n\r\n" + big[:1<<20], big[1<<20:]}}
		}},
		{"1 MiB chunked", schema.HTTP{}, func(int64) step {
			return step{chunks: []string{"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n100000\r\n" + big[:1<<20] + "\r\n0\r\n\r\n"}}
		}},
		{"2 MiB chunked in 16-byte chunks", schema.HTTP{}, func(int64) step {
			return step{chunks: []string{"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + small + "0\r\n\r\n"}}
		}},
		{"chunked, stalled past replayAll", schema.HTTP{Timeout: schema.Duration(300 * time.Millisecond)}, func(i int64) step {
			if i == 2 {
				return step{chunks: []string{"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + small[:200<<10]}, wait: 0}
			}
			return step{chunks: []string{"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + small + "0\r\n\r\n"}}
		}},
		{"head over the limit", schema.HTTP{}, func(int64) step {
			return step{chunks: []string{"HTTP/1.1 200 OK\r\nX-Big: " + big[:MaxHeaderBytes+10] + "\r\n\r\n"}}
		}},
		{"rule reads a header", schema.HTTP{Success: `headers["X-Ok"] == "yes"`}, func(i int64) step {
			return step{chunks: []string{fmt.Sprintf("HTTP/1.1 200 OK\r\nX-Ok: %s\r\nContent-Length: 0\r\n\r\n", map[bool]string{true: "yes", false: "no"}[i%2 == 0])}}
		}},
		{"reset mid-body", schema.HTTP{}, func(int64) step {
			return step{chunks: []string{"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nab"}, reset: true}
		}},
		{"timeout", schema.HTTP{Timeout: schema.Duration(300 * time.Millisecond)}, func(i int64) step {
			if i == 2 {
				return step{wait: time.Second, chunks: []string{ok}}
			}
			return step{chunks: []string{ok}}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			const n = 3
			want := viaDo(t, newDriver(t, tc.cfg, "http://"+scripted(t, tc.script).addr), n)
			got := viaLoop(t, newDriver(t, tc.cfg, "http://"+scripted(t, tc.script).addr), n)
			if len(got) != n+1 {
				t.Fatalf("the loop and Do after it ended %d requests, want %d: %+v", len(got), n+1, got)
			}
			for i := range n + 1 {
				if same(got[i]) != same(want[i]) {
					t.Errorf("request %d:\nloop %s (%v)\nDo   %s (%v)", i+1, same(got[i]), got[i].Err, same(want[i]), want[i].Err)
				}
			}
		})
	}
}

// TestLoop_LargeRequestBody: a request body larger than the socket takes
// at once is written as the socket drains (EPOLLOUT), every byte counted,
// as Do writes it.
func TestLoop_LargeRequestBody(t *testing.T) {
	const size = 4 << 20
	serve := func() string {
		return newRawServer(t, func(c net.Conn, br *bufio.Reader) {
			for {
				if _, err := readHead(br); err != nil {
					return
				}
				for left := int64(size); left > 0; left -= 256 << 10 {
					time.Sleep(time.Millisecond) // a slow reader fills the socket
					if _, err := io.CopyN(io.Discard, br, min(left, 256<<10)); err != nil {
						return
					}
				}
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
			}
		}).addr
	}
	cfg := schema.HTTP{Method: "POST", BodySize: size}
	want := viaDo(t, newDriver(t, cfg, "http://"+serve()), 2)
	got := viaLoop(t, newDriver(t, cfg, "http://"+serve()), 2)
	for i := range want {
		if same(got[i]) != same(want[i]) || got[i].Class != drivers.OK || got[i].BytesOut <= size {
			t.Errorf("request %d:\nloop %s (%v)\nDo   %s (%v)", i+1, same(got[i]), got[i].Err, same(want[i]), want[i].Err)
		}
	}
}

// TestLoop_EmptySlotDials: a slot that starts without a connection (its
// dial-in failed) dials at its first request, counted in Dialed, and the
// loop hands the new connection back; against a closed port every
// request is a connect failure with the errno's code, none handed back.
func TestLoop_EmptySlotDials(t *testing.T) {
	s := scripted(t, func(int64) step { return step{chunks: []string{"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"}} })
	d := newDriver(t, schema.HTTP{}, "http://"+s.addr)
	h := newLoopHooks(3, d.timeout)
	kept, err := d.RunClosed(t.Context(), make(chan struct{}), []drivers.Conn{nil}, 1, h)
	if err != nil {
		t.Fatal(err)
	}
	outs := h.outs[0]
	if len(outs) != 3 || outs[0].Class != drivers.OK || outs[0].Dialed != 1 || outs[0].Connect <= 0 || outs[1].Dialed != 0 || outs[2].Class != drivers.OK {
		t.Fatalf("outcomes %+v, want 3 ok, the first one dialled", outs)
	}
	if kept[0] == nil {
		t.Fatal("the dialled connection was not handed back")
	}
	defer kept[0].Close()
	if out := kept[0].Do(t.Context(), drivers.Request{Seq: 9, Deadline: time.Now().Add(time.Second)}); out.Class != drivers.OK || out.Dialed != 0 {
		t.Errorf("Do on the handed-back connection: %+v", out)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close() // nothing listens there now
	d = newDriver(t, schema.HTTP{}, "http://"+ln.Addr().String())
	h = newLoopHooks(2, d.timeout)
	kept, err = d.RunClosed(t.Context(), make(chan struct{}), []drivers.Conn{nil}, 1, h)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range h.outs[0] {
		if o.Class != drivers.Connect || o.Code != "ECONNREFUSED" || o.Responded {
			t.Errorf("outcome %+v, want connect ECONNREFUSED", o)
		}
	}
	if len(h.outs[0]) != 2 || kept[0] != nil {
		t.Errorf("%d outcomes, kept %v; want 2 and none", len(h.outs[0]), kept[0])
	}
}

// TestLoop_CancelEndsInFlight: the end of the loop's context ends a
// request waiting for its response at once, cancelled, as Do's does; a
// loop with many slots, some between requests, returns.
func TestLoop_CancelEndsInFlight(t *testing.T) {
	release := make(chan struct{})
	s := newRawServer(t, func(c net.Conn, br *bufio.Reader) {
		if _, err := readHead(br); err != nil {
			return
		}
		select { // never answers while the test runs
		case <-release:
		case <-time.After(10 * time.Second):
		}
	})
	defer close(release)
	d := newDriver(t, schema.HTTP{Timeout: schema.Duration(10 * time.Second)}, "http://"+s.addr)
	conns := []drivers.Conn{dial(t, d), dial(t, d), dial(t, d)}
	h := newLoopHooks(5, d.timeout)
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(100*time.Millisecond, cancel)
	t0 := time.Now()
	if _, err := d.RunClosed(ctx, make(chan struct{}), conns, 2, h); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(t0); took > 5*time.Second {
		t.Errorf("RunClosed returned %s after its context ended", took)
	}
	for k := range conns {
		if outs := h.outs[k]; len(outs) != 1 || outs[0].Class != drivers.Cancelled || outs[0].Responded {
			t.Errorf("slot %d: %+v, want one request, cancelled", k, outs)
		}
	}
}

// TestLoop_ThinkTime: a slot waits its think time after each response
// before its next request (the server sees the gaps), and stop ends the
// waits at once: no request is sent after it.
func TestLoop_ThinkTime(t *testing.T) {
	var mu sync.Mutex
	var at []time.Time
	s := newRawServer(t, func(c net.Conn, br *bufio.Reader) {
		for {
			if _, err := readHead(br); err != nil {
				return
			}
			mu.Lock()
			at = append(at, time.Now())
			mu.Unlock()
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		}
	})
	d := newDriver(t, schema.HTTP{}, "http://"+s.addr)
	h := newLoopHooks(3, d.timeout)
	h.think = 60 * time.Millisecond
	if _, err := d.RunClosed(t.Context(), make(chan struct{}), []drivers.Conn{dial(t, d)}, 1, h); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if len(at) != 3 {
		t.Fatalf("the server saw %d requests, want 3", len(at))
	}
	for i := 1; i < len(at); i++ {
		if gap := at[i].Sub(at[i-1]); gap < h.think {
			t.Errorf("request %d came %s after the one before, under the think time %s", i+1, gap, h.think)
		}
	}
	at = nil
	mu.Unlock()

	h = newLoopHooks(1000, d.timeout)
	h.think = time.Hour
	stop := make(chan struct{})
	time.AfterFunc(100*time.Millisecond, func() { close(stop) })
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := d.RunClosed(t.Context(), stop, []drivers.Conn{dial(t, d)}, 1, h); err != nil {
			t.Error(err)
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("stop did not end an hour's think time")
	}
	if n := len(h.outs[0]); n != 1 {
		t.Errorf("%d requests, want 1 (then the think time, cut by stop)", n)
	}
}

// FuzzLoopReader: whatever bytes a server answers with, cut into reads
// anywhere, the event loop's reader (plain, replayed attempts, counted
// bytes) ends the request as Do's blocking reader does: class, code,
// whether it responded, and the bytes the response took.
func FuzzLoopReader(f *testing.F) {
	for _, s := range []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokEXTRA",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nX-T: 1\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\nContent-Length: 3\r\n\r\n1\r\na\r\n0\r\n\r\n",
		"HTTP/1.0 200 OK\r\n\r\nto the end",
		"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc",
		"HTTP/1.1 2x0 OK\r\n\r\n",
		"HTTP/1.1 200 OK\nContent-Length: 1\n\nx",
		"HTTP/1.1 200 OK\r\nContent-Length: 1, 1\r\nConnection: keep-alive, close\r\n\r\nx",
		"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nxx",
		"HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\n\r\n",
		"HTTP/1.1 101 Switching Protocols\r\n\r\n",
		"HTTP/1.1 200 OK\r\n Folded: x\r\n\r\n",
		"",
	} {
		f.Add([]byte(s), []byte{3, 17, 1}, false)
		f.Add([]byte(s), []byte{}, true)
	}
	f.Fuzz(func(t *testing.T, resp, cuts []byte, head bool) {
		if len(resp) > 8<<10 {
			return
		}
		if len(cuts) > 0 && cuts[0]&1 == 1 {
			// The reader runs only where the loop thinks the response
			// may end (an empty line, the chunked framing's end, the
			// Content-Length), as it does past replayAll bytes.
			defer func(n int) { replayAll = n }(replayAll)
			replayAll = 0
		}
		var chunks [][]byte
		rest := resp
		for _, c := range cuts {
			n := min(int(c)+1, len(rest))
			if n == 0 {
				break
			}
			chunks, rest = append(chunks, rest[:n]), rest[n:]
		}
		if len(rest) > 0 {
			chunks = append(chunks, rest)
		}
		cfg := schema.HTTP{}
		if head {
			cfg.Method = "HEAD"
		}
		d := newDriver(t, cfg, "http://127.0.0.1:1")
		want := doOverPipe(t, d, chunks)
		got, _ := loopOverReads(t, d, chunks)
		if w, g := fmt.Sprintf("%s %s %v %d", want.Class, want.Code, want.Responded, want.BytesIn), fmt.Sprintf("%s %s %v %d", got.Class, got.Code, got.Responded, got.BytesIn); w != g {
			t.Fatalf("response %q in reads %q:\nloop %s (%v)\nDo   %s (%v)", resp, chunks, g, got.Err, w, want.Err)
		}
	})
}

// doOverPipe is Do's outcome for a request answered with chunks, one
// write each, then the end of the stream.
func doOverPipe(t *testing.T, d *Driver, chunks [][]byte) drivers.Outcome {
	cli, srv := net.Pipe()
	c := newConn(d)
	c.attach(cli)
	defer c.Close()
	go func() {
		defer srv.Close()
		if _, err := readHead(bufio.NewReader(srv)); err != nil {
			return
		}
		for _, ch := range chunks {
			if _, err := srv.Write(ch); err != nil {
				return
			}
		}
	}()
	return c.Do(t.Context(), drivers.Request{Seq: 1, Deadline: time.Now().Add(5 * time.Second)})
}

// loopOverReads is the loop's outcome for a request whose reads bring
// chunks, then the end of the stream, and the most bytes it held at once.
// A response the reader completes before the end of the stream must end
// there: the loop never waits for bytes a server will not send. (One it
// would fail, a malformed one, may be failed later: at its empty line,
// its limit or the end of the stream, past replayAll bytes.)
func loopOverReads(t *testing.T, d *Driver, chunks [][]byte) (drivers.Outcome, int) {
	h := newLoopHooks(1, time.Second)
	l, err := newLoop(0, d, t.Context(), nil, h, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer l.release()
	l.base = h.Start()
	lc := &loopConn{c: newConn(d), fd: -1, head: -1, state: lcReading}
	lc.r = drivers.Request{Seq: 1}
	lc.start = l.now()
	var ok bool
	if lc.w, lc.filler, lc.ex, ok = lc.c.prepare(lc.r, &lc.out); !ok {
		t.Fatal("prepare refused the request")
	}
	// settle books a streamed response once its reader has returned
	// (within wait), as the loop's wake-up does.
	settle := func(wait time.Duration) {
		for end := time.Now().Add(wait); lc.stream != nil && !lc.stream.done.Load() && time.Now().Before(end); {
			time.Sleep(time.Millisecond)
		}
		if lc.stream != nil && lc.stream.done.Load() {
			l.helpers.Wait()
			l.woken()
		}
	}
	held := 0
	for _, ch := range chunks {
		if len(h.outs[0]) > 0 {
			break
		}
		for lc.stream != nil && lc.stream.full() {
			time.Sleep(time.Millisecond) // the reader takes what it was given
		}
		l.took(lc, ch, nil, l.now())
		held = max(held, len(lc.in))
		settle(0)
	}
	if len(h.outs[0]) == 0 {
		all := bytes.Join(chunks, nil)
		if readerCompletes(d, all) {
			settle(2 * time.Second)
			if len(h.outs[0]) == 0 {
				t.Fatalf("response %q: the reader completes it before the end of the stream, the loop waits for more", all)
			}
		} else {
			l.took(lc, nil, io.EOF, l.now())
			settle(5 * time.Second)
		}
	}
	if len(h.outs[0]) != 1 {
		t.Fatalf("%d outcomes, want 1", len(h.outs[0]))
	}
	return h.outs[0][0], held
}

// readerCompletes reports whether Do's reader reads a whole response
// from b without being told the stream ended.
func readerCompletes(d *Driver, b []byte) bool {
	c := newConn(d)
	c.prepare(drivers.Request{Seq: 1}, &drivers.Outcome{})
	_, err := c.readFrom(&replay{b: b, end: errMore}, nil)
	return err == nil
}

// TestLoop_ChunkedBodyNotHeld: a chunked body of 16 MiB in 16-byte
// chunks, each ending in a line feed (so that every read holds an empty
// line), read 64 KiB at a time, ends ok with every byte counted, while
// the loop holds no more than its first replayAll bytes: the rest
// streams to the reader as it comes, neither its data nor its framing
// (which grows with the number of chunks) held.
func TestLoop_ChunkedBodyNotHeld(t *testing.T) {
	var b bytes.Buffer
	b.WriteString("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
	chunk := append(bytes.Repeat([]byte("x"), 15), '\n')
	for range 1 << 20 {
		fmt.Fprintf(&b, "%x\r\n%s\r\n", len(chunk), chunk)
	}
	b.WriteString("0\r\n\r\n")
	var reads [][]byte
	for all := b.Bytes(); len(all) > 0; {
		n := min(64<<10, len(all))
		reads, all = append(reads, all[:n]), all[n:]
	}
	d := newDriver(t, schema.HTTP{}, "http://127.0.0.1:1")
	out, held := loopOverReads(t, d, reads)
	if out.Class != drivers.OK || out.BytesIn != int64(b.Len()) {
		t.Fatalf("outcome %+v, want ok with %d bytes in", out, b.Len())
	}
	if limit := 2 * replayAll; held > limit {
		t.Errorf("the loop held %d bytes of the response at once, want at most %d", held, limit)
	}
}

// BenchmarkClosedLoop measures the client side of one keep-alive
// exchange carried by the event loop (one loop, one connection, b.N
// requests), against the stub and with the requests of BenchmarkDo: the
// two side by side are the loop's gain per request, and its allocations
// are the loop's and the driver's (the hooks allocate nothing).
func BenchmarkClosedLoop(b *testing.B) {
	s := benchStub(b)
	for _, bc := range benchCases(b) {
		b.Run(bc.name, func(b *testing.B) {
			d := newDriver(b, bc.cfg, "http://"+s.addr)
			c := dial(b, d)
			h := &benchHooks{n: b.N, timeout: time.Hour}
			b.ReportAllocs()
			b.ResetTimer()
			if _, err := d.RunClosed(b.Context(), nil, []drivers.Conn{c}, 1, h); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			if h.ok != b.N {
				b.Fatalf("%d ok of %d: the last failed with %v", h.ok, b.N, h.err)
			}
		})
	}
}

// benchHooks sends n requests on slot 0 and counts the ok ones.
type benchHooks struct {
	n, sent, ok int
	timeout     time.Duration
	err         error
}

func (h *benchHooks) Start() time.Time       { return epoch }
func (h *benchHooks) Timeout() time.Duration { return h.timeout }

func (h *benchHooks) Next(int) (drivers.Request, time.Duration, bool) {
	if h.sent == h.n {
		return drivers.Request{}, 0, false
	}
	h.sent++
	return drivers.Request{Seq: uint64(h.sent)}, time.Since(epoch), true
}

func (h *benchHooks) Done(_, _ int, _ drivers.Request, out drivers.Outcome, _ time.Duration) {
	if out.Class == drivers.OK {
		h.ok++
	} else {
		h.err = out.Err
	}
}

func (h *benchHooks) Think() time.Duration { return 0 }

// TestLoop_RedialFailures: the loop's own re-dial (a non-blocking
// connect to the address the slot was dialled at) fails as Do's does:
// connect ECONNREFUSED when nothing listens there any more, and connect
// ETIMEDOUT, within the request's timeout, when the server's accept
// queue is full and drops the handshake. Each first request is ok and
// asks to close; its second must re-dial.
func TestLoop_RedialFailures(t *testing.T) {
	ok := "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok"
	cfg := schema.HTTP{Timeout: schema.Duration(300 * time.Millisecond)}
	for _, tc := range []struct {
		name, code string
		// listen serves the first connection and then makes the address
		// refuse or drop every dial; it returns the address.
		listen func(t *testing.T) string
	}{
		{"refused", "ECONNREFUSED", func(t *testing.T) string {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			go func() {
				c, err := ln.Accept()
				ln.Close() // nothing listens any more
				if err != nil {
					return
				}
				defer c.Close()
				if _, err := readHead(bufio.NewReader(c)); err == nil {
					io.WriteString(c, ok)
				}
			}()
			t.Cleanup(func() { ln.Close() })
			return ln.Addr().String()
		}},
		{"dropped", drivers.CodeConnectTimeout, func(t *testing.T) string {
			ln := backlogZero(t)
			addr := ln.Addr().String()
			go func() {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				defer c.Close()
				if _, err := readHead(bufio.NewReader(c)); err != nil {
					return
				}
				// Fill the accept queue of one (never accepted again), so
				// that the next handshakes are dropped, then answer.
				for range 2 {
					if fc, err := net.DialTimeout("tcp", addr, 50*time.Millisecond); err == nil {
						t.Cleanup(func() { fc.Close() })
					}
				}
				io.WriteString(c, ok)
			}()
			return addr
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := viaDo(t, newDriver(t, cfg, "http://"+tc.listen(t)), 1)
			got := viaLoop(t, newDriver(t, cfg, "http://"+tc.listen(t)), 2)
			if got[0].Class != drivers.OK || want[0].Class != drivers.OK {
				t.Fatalf("first requests: loop %+v, Do %+v; want ok", got[0], want[0])
			}
			for i, o := range []drivers.Outcome{got[1], want[1]} {
				if o.Class != drivers.Connect || o.Code != tc.code || o.Dialed != 0 || o.Connect <= 0 {
					t.Errorf("%s: second request %+v, want connect %s with its connect time", []string{"loop", "Do"}[i], o, tc.code)
				}
			}
		})
	}
}

// backlogZero listens on 127.0.0.1 with an accept queue of one
// (listen(2) with backlog 0): once a connection waits in it, Linux drops
// the next handshakes. Closed when the test ends.
func backlogZero(t *testing.T) net.Listener {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(fd), "listener")
	defer f.Close()
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	ln, err := net.FileListener(f)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

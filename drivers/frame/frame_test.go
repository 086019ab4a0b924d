package frame

import (
	"context"
	"encoding/binary"
	"io"
	"maps"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runner-dev/runner/drivers"
	"github.com/runner-dev/runner/drivers/internal/drivertest"
	"github.com/runner-dev/runner/schema"
)

// serveTCP runs a loopback TCP server that hands connection number n
// (0-based) to handle on a goroutine of its own. It is stopped, and its
// connections closed, when the test ends; it returns the tcp:// URL.
func serveTCP(t testing.TB, handle func(n int, nc net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	drivertest.Serve(t, ln, handle)
	return "tcp://" + ln.Addr().String()
}

// stub is an LKDF server on loopback: for every request it calls answer
// with the request's id and payload and writes what answer returns (nil:
// nothing). It is stopped, and its connections closed, when the test ends.
func stub(t *testing.T, answer func(conn int, id uint32, payload []byte) []byte) string {
	t.Helper()
	return serveTCP(t, func(n int, nc net.Conn) {
		frames(nc, 16, 12, func(hdr, p []byte) bool {
			if out := answer(n, binary.BigEndian.Uint32(hdr[8:]), p); out != nil {
				nc.Write(out)
			}
			return true
		})
	})
}

// frames reads frames of a hdrLen-byte header with the payload's length
// as a big-endian u32 at lenOff from nc, and hands each to fn until fn
// returns false or the connection ends.
func frames(nc net.Conn, hdrLen, lenOff int, fn func(hdr, payload []byte) bool) {
	hdr := make([]byte, hdrLen)
	for {
		if _, err := io.ReadFull(nc, hdr); err != nil {
			return
		}
		p := make([]byte, binary.BigEndian.Uint32(hdr[lenOff:]))
		if _, err := io.ReadFull(nc, p); err != nil {
			return
		}
		if !fn(hdr, p) {
			return
		}
	}
}

func response(id uint32, payload []byte) []byte {
	return append(lkdfHeader(LKDFMagic, 1, 2, id, uint32(len(payload))), payload...)
}

func newDriver(t *testing.T, url, payload string) *Driver {
	t.Helper()
	d, err := New(schema.Frame{Preset: "lkdf", Payload: payload}, url, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// do is drivertest.Do: request seq with its context bounded by timeout.
var do = drivertest.Do

func TestEchoAndOutOfOrder(t *testing.T) {
	var mu sync.Mutex
	var held [][]byte
	url := stub(t, func(_ int, id uint32, p []byte) []byte {
		mu.Lock()
		defer mu.Unlock()
		held = append(held, response(id, p))
		if len(held) < 4 {
			return nil
		}
		var out []byte
		for i := len(held) - 1; i >= 0; i-- { // reversed
			out = append(out, held[i]...)
		}
		held = nil
		return out
	})
	d := newDriver(t, url, "{{bytes 1KiB}}")
	c, err := d.Dial(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	outs := drivertest.InFlight(c, 4, 5*time.Second)
	for i, o := range outs {
		if o.Class != drivers.OK || o.BytesIn != 16+1024 || o.BytesOut != 16+1024 {
			t.Errorf("request %d: %v in %d out %d (%v)", i+1, o.Class, o.BytesIn, o.BytesOut, o.Err)
		}
	}
}

// B17, the defect pinned: a hostile reply header (huge length, bad magic,
// unsolicited id) crashing the client or making it allocate.
//
// At the driver: each malformed reply header ends the
// request as bad-frame (or short-read) with the value and the limit in
// the message, as soon as the header is read, without allocating the
// declared length; the link is closed and the next request re-dials.
// An unsolicited well-formed frame is unknown-id and the real reply
// still matches; a zero length is a valid empty payload.
func TestField_B17_MalformedReplies(t *testing.T) {
	for _, c := range []struct {
		name      string
		fault     []byte
		class     drivers.Class
		code, msg string
	}{
		{"a huge length then 10 bytes", append(lkdfHeader(LKDFMagic, 1, 2, 1, 0x80000000), make([]byte, 10)...), drivers.BadFrame, "too-long", "length 2147483648 > max 1048576"},
		{"b length 0xFFFFFFFF", lkdfHeader(LKDFMagic, 1, 2, 1, 0xFFFFFFFF), drivers.BadFrame, "too-long", "length 4294967295 > max 1048576"},
		{"c GET magic", lkdfHeader(0x47455420, 1, 2, 1, 0), drivers.BadFrame, "bad-magic", "magic 0x47455420, expected 0x4C4B4446"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var mu sync.Mutex
			conns := map[int]bool{}
			url := stub(t, func(conn int, id uint32, p []byte) []byte {
				mu.Lock()
				first := !conns[conn]
				conns[conn] = true
				mu.Unlock()
				if conn == 0 && first {
					return c.fault
				}
				return response(id, p)
			})
			d := newDriver(t, url, "x")
			conn, err := d.Dial(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			start := time.Now()
			// The stub keeps the connection open and silent after the
			// fault: the header alone must end the request.
			o := do(conn, 1, 5*time.Second)
			if o.Class != c.class || o.Code != c.code || !strings.Contains(o.Err.Error(), c.msg) {
				t.Fatalf("%v %q %v, want %s %s %q", o.Class, o.Code, o.Err, c.class, c.code, c.msg)
			}
			if el := time.Since(start); el > 2*time.Second {
				t.Errorf("took %s: the bad header must end the request when it is read", el)
			}
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			if grown := int64(after.TotalAlloc) - int64(before.TotalAlloc); grown > 4<<20 {
				t.Errorf("allocated %d bytes reading a hostile header", grown)
			}
			o = do(conn, 2, 5*time.Second)
			if o.Class != drivers.OK || o.Dialed != 1 {
				t.Errorf("after the bad frame: %v dialed %d (%v), want ok on a re-dialled connection", o.Class, o.Dialed, o.Err)
			}
			if got := d.Strays().Closes[c.code]; got != 1 {
				t.Errorf("closes %v, want %s=1", d.Strays().Closes, c.code)
			}
		})
	}
}

// A frame cut short by the server's close is short-read; a close at a
// frame boundary with a request in flight is eof.
func TestShortReadAndEOF(t *testing.T) {
	for _, c := range []struct {
		name  string
		write []byte
		class drivers.Class
	}{
		{"mid payload", append(lkdfHeader(LKDFMagic, 1, 2, 1, 100), make([]byte, 10)...), drivers.ShortRead},
		{"mid header", lkdfHeader(LKDFMagic, 1, 2, 1, 100)[:7], drivers.ShortRead},
		{"boundary", nil, drivers.EOF},
	} {
		t.Run(c.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			go func() {
				nc, err := ln.Accept()
				if err != nil {
					return
				}
				io.ReadFull(nc, make([]byte, 17))
				nc.Write(c.write)
				nc.Close()
			}()
			d := newDriver(t, "tcp://"+ln.Addr().String(), "x")
			conn, err := d.Dial(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if o := do(conn, 1, 5*time.Second); o.Class != c.class {
				t.Errorf("%v %q %v, want %s", o.Class, o.Code, o.Err, c.class)
			}
		})
	}
}

// B17 (d) and (e): an unsolicited frame before the real reply is unknown-id
// and the reply still matches; a zero-length reply is valid.
func TestUnknownIDAndZeroLength(t *testing.T) {
	url := stub(t, func(_ int, id uint32, p []byte) []byte {
		if id == 1 {
			return append(response(id^0x80000000, []byte("stray")), response(id, nil)...)
		}
		return response(id, p)
	})
	d := newDriver(t, url, "payload {{seq}}")
	c, _ := d.Dial(context.Background())
	defer c.Close()
	if o := do(c, 1, 5*time.Second); o.Class != drivers.OK || o.BytesIn != 16 {
		t.Errorf("1: %v in %d", o.Class, o.BytesIn)
	}
	if o := do(c, 2, 5*time.Second); o.Class != drivers.OK {
		t.Errorf("2: %v", o.Class)
	}
	if s := d.Strays(); s.UnknownID != 1 || s.Late != 0 || s.DuplicateID != 0 {
		t.Errorf("strays %+v, want one unknown id", s)
	}
}

// A reply after its request's timeout is late; the connection stays.
func TestLateReply(t *testing.T) {
	url := stub(t, func(_ int, id uint32, p []byte) []byte {
		if id == 1 {
			time.Sleep(200 * time.Millisecond)
		}
		return response(id, p)
	})
	d := newDriver(t, url, "x")
	c, _ := d.Dial(context.Background())
	defer c.Close()
	if o := do(c, 1, 50*time.Millisecond); o.Class != drivers.Timeout {
		t.Fatalf("1: %v", o.Class)
	}
	if o := do(c, 2, 5*time.Second); o.Class != drivers.OK || o.Dialed != 0 {
		t.Errorf("2: %v dialed %d", o.Class, o.Dialed)
	}
	if s := d.Strays(); s.Late != 1 {
		t.Errorf("strays %+v, want one late", s)
	}
}

func TestConfigErrors(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		cfg  schema.Frame
		url  string
		want string
	}{
		{schema.Frame{Preset: "lkdf"}, "http://h:1", "scheme must be tcp"},
		{schema.Frame{Preset: "lkdf"}, "tcp://h", "expected tcp://host:port"},
		{schema.Frame{Preset: "nope"}, "tcp://h:1", `preset "nope"`},
		{schema.Frame{}, "tcp://h:1", "no preset and no layout"},
		{schema.Frame{Preset: "lkdf", Payload: "{{bytes 2MiB}}"}, "tcp://h:1", "the payload is 2097152 bytes; the layout allows at most 1048576"},
		{schema.Frame{Preset: "lkdf", PayloadFile: "missing.bin"}, "tcp://h:1", "missing.bin"},
		{schema.Frame{Preset: "lkdf", Payload: "{{nope}}"}, "tcp://h:1", "unknown template action"},
	} {
		if _, err := New(c.cfg, c.url, dir); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v %s: %v, want %q", c.cfg, c.url, err, c.want)
		}
	}
}

// A Ctrl-C while a write is blocked (the target does not read) ends the
// request at once; it does not wait for the write's timeout.
func TestCancelBlockedWrite(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		nc, err := ln.Accept()
		if err == nil {
			accepted <- nc // never read
		}
	}()
	d, err := New(schema.Frame{Preset: "lkdf", Payload: "{{bytes 1MiB}}", Timeout: schema.Duration(time.Minute)}, "tcp://"+ln.Addr().String(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c, err := d.Dial(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	defer func() { (<-accepted).Close() }()
	drivertest.CancelEndsBlockedWrites(t, c)
}

// The target resets the connection with frames in flight: they are the
// target's resets (never cancelled), and the close is counted.
func TestResetWithFramesInFlight(t *testing.T) {
	var mu sync.Mutex
	seen := 0
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		hdr := make([]byte, 16)
		for {
			if _, err := io.ReadFull(nc, hdr); err != nil {
				return
			}
			io.ReadFull(nc, make([]byte, binary.BigEndian.Uint32(hdr[12:])))
			mu.Lock()
			seen++
			n := seen
			mu.Unlock()
			if n == 4 { // four in flight, none answered: reset
				nc.(*net.TCPConn).SetLinger(0)
				nc.Close()
				return
			}
		}
	}()
	d := newDriver(t, "tcp://"+ln.Addr().String(), "x")
	c, err := d.Dial(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	outs := drivertest.InFlight(c, 4, 5*time.Second)
	for i, o := range outs {
		if o.Class == drivers.Cancelled || o.Class == drivers.OK || o.Class == drivers.Timeout {
			t.Errorf("request %d: %v %q %v, want the target's reset or eof", i+1, o.Class, o.Code, o.Err)
		}
	}
	if s := d.Strays(); len(s.Closes) != 1 {
		t.Errorf("closes %v, want the target's one", s.Closes)
	}
}

// One bad frame is one request's reply: one request carries its code,
// the others in flight on the closed connection are link-closed.
func TestBadFrameBlamesOne(t *testing.T) {
	var mu sync.Mutex
	n := 0
	url := stub(t, func(_ int, id uint32, p []byte) []byte {
		mu.Lock()
		defer mu.Unlock()
		if n++; n == 4 {
			return lkdfHeader(0x47455420, 1, 2, id, 0)
		}
		return nil // hold the first three: all four in flight
	})
	d := newDriver(t, url, "x")
	c, _ := d.Dial(context.Background())
	defer c.Close()
	outs := drivertest.InFlight(c, 4, 5*time.Second)
	codes := map[string]int{}
	for _, o := range outs {
		if o.Class != drivers.BadFrame {
			t.Errorf("%v %q, want bad-frame", o.Class, o.Code)
		}
		codes[o.Code]++
	}
	if codes["bad-magic"] != 1 || codes["link-closed"] != 3 {
		t.Errorf("codes %v, want one bad-magic and three link-closed", codes)
	}
}

// A u16 id wraps after 65,536 requests: a request whose id is still in
// flight is not sent (id-in-use), never paired with the old reply.
func TestIDInUse(t *testing.T) {
	url := stub(t, func(_ int, id uint32, p []byte) []byte { return nil }) // never answers
	v := func(x int64) *int64 { return &x }
	d, err := New(schema.Frame{Layout: &schema.FrameLayout{Fields: []schema.FrameField{
		{Name: "m", Size: "u16", Value: v(7)}, {Name: "id", Size: "u16", Role: "id"}, {Name: "len", Size: "u32", Role: "length"},
	}}}, url, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c, _ := d.Dial(context.Background())
	defer c.Close()
	go do(c, 1, 2*time.Second) // id 1, in flight
	time.Sleep(100 * time.Millisecond)
	if o := do(c, 65537, time.Second); o.Class != drivers.ClientError || o.Code != drivers.CodeIDInUse || o.BytesOut != 0 {
		t.Errorf("%v %q out %d, want client id-in-use, nothing sent", o.Class, o.Code, o.BytesOut)
	}
}

// TestLargeReplies: replies far larger than the connection's read buffer
// are read past whole, one after another, and one whose payload stops
// halfway (the connection left open) times out.
func TestLargeReplies(t *testing.T) {
	const size = 300 << 10 // 75 read buffers
	url := stub(t, func(_ int, id uint32, p []byte) []byte {
		if id == 4 {
			return response(id, p)[:16+size/2] // then the stub reads on: the test ends it
		}
		return response(id, p)
	})
	c, err := newDriver(t, url, "{{bytes 300KiB}}").Dial(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for seq := uint64(1); seq <= 3; seq++ {
		if o := do(c, seq, 5*time.Second); o.Class != drivers.OK || o.BytesIn != 16+size {
			t.Fatalf("request %d: %v in %d (%v), want ok with %d bytes", seq, o.Class, o.BytesIn, o.Err, 16+size)
		}
	}
	if o := do(c, 4, 300*time.Millisecond); o.Class != drivers.Timeout {
		t.Errorf("request 4 (half its payload, then silence): %v (%v), want a timeout", o.Class, o.Err)
	}
}

// TestWriteStall_DeadlinesKept: against a target that never reads, 40
// requests in flight on one connection, each 1 MiB (the socket buffers
// take several before a write blocks) and sent 20 ms after the one
// before, all end by their own
// deadline (plus the 100 ms look at whether the link is ending) as the
// target's failure (timeout, the stalled write's reset, or the re-dial
// after it timed out), none as cancelled or ok. A frame that got the writer late used to wait on a
// plain mutex past its deadline and then get a fresh timeout for its
// write: 1.8× the timeout.
func TestWriteStall_DeadlinesKept(t *testing.T) {
	// A target that never reads: it holds each connection until the end.
	url := serveTCP(t, func(int, net.Conn) {})
	const timeout = 300 * time.Millisecond
	d, err := New(schema.Frame{Preset: "lkdf", Payload: "{{bytes 1MiB}}", Timeout: schema.Duration(timeout)}, url, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c, err := d.Dial(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	type result struct {
		o    drivers.Outcome
		took time.Duration
	}
	// The process's own stalls (a machine whose other cores' work starves
	// this test) delay a request's end as much as its deadline: the
	// allowance grows by the longest one seen while the requests run.
	stall := drivertest.WatchStalls(t)
	res := make(chan result, 40)
	for seq := uint64(1); seq <= 40; seq++ {
		go func() {
			time.Sleep(time.Duration(seq-1) * 20 * time.Millisecond) // staggered, as an open model sends
			start := time.Now()
			o := c.Do(context.Background(), drivers.Request{Seq: seq, Deadline: start.Add(timeout)})
			res <- result{o, time.Since(start)}
		}()
	}
	for range 40 {
		select {
		case r := <-res:
			// After the reset the link is re-dialled; a request whose
			// deadline passes during that dial (a busy machine) ends as a
			// connect timeout, the deadline kept all the same.
			reDialTimeout := r.o.Class == drivers.Connect && r.o.Code == "ETIMEDOUT"
			if r.o.Class != drivers.Timeout && r.o.Class != drivers.Reset && !reDialTimeout {
				t.Errorf("%v %q %v, want a timeout, the stalled write's reset, or a re-dial timed out", r.o.Class, r.o.Code, r.o.Err)
			}
			if late := stall(); r.took > timeout+250*time.Millisecond+late {
				t.Errorf("%v %q ended after %s, want by its %s deadline (+ the 100 ms look, + %s the process stalled)", r.o.Class, r.o.Code, r.took, timeout, late)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a request did not end within 5 s")
		}
	}
}

// The target answers the first of four requests in flight, then closes
// the connection: in the middle of the third's reply (its header whole,
// half its payload), in the middle of a header (whose id cannot be
// read), or at a frame boundary. A cut is one request's: that one is
// short-read (the third, when its header named it); the others lost
// their replies with the connection: eof link-closed. A close at a
// boundary cut nobody's reply: all three eof. Each request ends once,
// and the close is counted once.
func TestCutWithFramesInFlight(t *testing.T) {
	full := response(3, make([]byte, 100))
	for _, c := range []struct {
		name  string
		tail  []byte
		codes map[string]int // of requests 2, 3 and 4
		cut   uint64         // the short-read request, 0: any one
		close string         // closes_by's code
	}{
		{"mid payload", full[:len(full)/2], map[string]int{"short-read": 1, "link-closed": 2}, 3, "short-read"},
		{"mid header", full[:8], map[string]int{"short-read": 1, "link-closed": 2}, 0, "short-read"},
		{"boundary", nil, map[string]int{"eof": 3}, 0, "eof"},
	} {
		t.Run(c.name, func(t *testing.T) {
			url := serveTCP(t, func(_ int, nc net.Conn) {
				hdr := make([]byte, 16)
				for range 4 {
					if _, err := io.ReadFull(nc, hdr); err != nil {
						return
					}
					io.ReadFull(nc, make([]byte, binary.BigEndian.Uint32(hdr[12:])))
				}
				nc.Write(append(response(1, []byte("x")), c.tail...))
				nc.Close()
			})
			d := newDriver(t, url, "x")
			conn, err := d.Dial(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			outs := drivertest.InFlight(conn, 4, 5*time.Second)
			if o := outs[0]; o.Class != drivers.OK {
				t.Errorf("request 1: %v %q %v, want ok (its reply came whole)", o.Class, o.Code, o.Err)
			}
			codes := map[string]int{}
			for i, o := range outs[1:] {
				seq := uint64(i + 2)
				want := drivers.EOF
				if o.Code == "short-read" {
					want = drivers.ShortRead
					if c.cut != 0 && seq != c.cut {
						t.Errorf("request %d is short-read; the cut reply was %d's", seq, c.cut)
					}
				}
				if o.Class != want {
					t.Errorf("request %d: %v %q %v, want %s", seq, o.Class, o.Code, o.Err, want)
				}
				codes[o.Code]++
			}
			if !maps.Equal(codes, c.codes) {
				t.Errorf("codes %v, want %v", codes, c.codes)
			}
			if s := d.Strays(); len(s.Closes) != 1 || s.Closes[c.close] != 1 {
				t.Errorf("closes %v, want %s=1", s.Closes, c.close)
			}
		})
	}
}

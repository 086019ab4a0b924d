package http

import (
	"bufio"
	"crypto/tls"
	"io"
	"net"
	nethttp "net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runner-dev/runner/drivers"
	"github.com/runner-dev/runner/schema"
)

// staleHandler answers every request with 200 "ok", then 2 ms later
// sends an unsolicited 503 on the idle kept-alive connection and tells
// sent. The server reads the next request as usual.
func staleHandler(sent chan<- struct{}, answered *atomic.Int64) func(c net.Conn, br *bufio.Reader) {
	return func(c net.Conn, br *bufio.Reader) {
		for {
			if _, err := readHead(br); err != nil {
				return
			}
			answered.Add(1)
			if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"); err != nil {
				return
			}
			time.Sleep(2 * time.Millisecond)
			if _, err := io.WriteString(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 2\r\n\r\nno"); err != nil {
				return
			}
			sent <- struct{}{}
		}
	}
}

// checkStaleNotCredited runs rounds of one request each on c, after the
// server sent its unsolicited response: none may read the stale 503 as
// its own; each after the first re-dials instead (Outcome.Dialed), with
// no error.
func checkStaleNotCredited(t *testing.T, c drivers.Conn, sent <-chan struct{}, answered *atomic.Int64) {
	t.Helper()
	const rounds = 4
	for i := 1; i <= rounds; i++ {
		out := do(c, uint64(i), 10*time.Second)
		if out.Class != drivers.OK || out.Err != nil || !out.Responded {
			t.Fatalf("request %d: %+v, want ok (a stale response was credited to it)", i, out)
		}
		if want := min(i-1, 1); out.Dialed != want {
			t.Errorf("request %d: Dialed %d, want %d", i, out.Dialed, want)
		}
		select {
		case <-sent:
		case <-time.After(10 * time.Second):
			t.Fatal("the server did not send its unsolicited response")
		}
		time.Sleep(20 * time.Millisecond) // let the stale bytes land in our socket buffer
	}
	if got := answered.Load(); got != rounds {
		t.Errorf("server answered %d requests, want %d", got, rounds)
	}
}

// TestStaleResponse_NotCreditedToNextRequest: a response the server sends
// unsolicited on an idle kept-alive connection is never read as the
// answer to the next request (which would understate its latency and
// blame a stale 503 on it). The connection is closed before the request
// is sent and the request re-dials, without an error of its own.
func TestStaleResponse_NotCreditedToNextRequest(t *testing.T) {
	sent := make(chan struct{}, 10)
	var answered atomic.Int64
	s := newRawServer(t, staleHandler(sent, &answered))
	d := newDriver(t, schema.HTTP{}, "http://"+s.addr)
	c := dial(t, d)
	checkStaleNotCredited(t, c, sent, &answered)
	if s.accepted.Load() != 4 || d.Opened() != 4 {
		t.Errorf("accepted %d, opened %d, want 4 (one per stale connection)", s.accepted.Load(), d.Opened())
	}
}

// TestStaleResponse_NotCreditedToNextRequest_TLS is the same over TLS,
// where the stale response sits under the record layer; TLS 1.3 session
// tickets the server sends after the handshake are not unsolicited
// responses and cost no re-dial (TestTLS checks Dialed == 0).
func TestStaleResponse_NotCreditedToNextRequest_TLS(t *testing.T) {
	cert := httptest.NewUnstartedServer(nethttp.NotFoundHandler())
	cert.StartTLS() // only for its certificate
	conf := cert.TLS.Clone()
	cert.Close()
	sent := make(chan struct{}, 10)
	var answered atomic.Int64
	handle := staleHandler(sent, &answered)
	s := newRawServer(t, func(c net.Conn, _ *bufio.Reader) {
		tc := tls.Server(c, conf)
		defer tc.Close()
		handle(tc, bufio.NewReader(tc))
	})
	d := newDriver(t, schema.HTTP{TLS: &schema.TLS{InsecureSkipVerify: true}}, "https://"+s.addr)
	c := dial(t, d)
	checkStaleNotCredited(t, c, sent, &answered)
	if d.Opened() != 4 {
		t.Errorf("opened %d, want 4", d.Opened())
	}
}

// TestIdleClose_Redials: when the server closed an idle kept-alive
// connection (FIN before we send), the next request is not sent on it and
// does not fail: it re-dials. Nothing was sent, so this is no retry.
func TestIdleClose_Redials(t *testing.T) {
	closed := make(chan struct{}, 10)
	var requests atomic.Int64
	s := newRawServer(t, func(c net.Conn, br *bufio.Reader) {
		if _, err := readHead(br); err != nil {
			return
		}
		requests.Add(1)
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		c.Close()
		closed <- struct{}{}
	})
	d := newDriver(t, schema.HTTP{}, "http://"+s.addr)
	c := dial(t, d)
	for i := 1; i <= 3; i++ {
		out := do(c, uint64(i), 10*time.Second)
		if out.Class != drivers.OK || out.Err != nil {
			t.Fatalf("request %d: %+v, want ok", i, out)
		}
		if want := min(i-1, 1); out.Dialed != want {
			t.Errorf("request %d: Dialed %d, want %d", i, out.Dialed, want)
		}
		<-closed
		time.Sleep(20 * time.Millisecond) // let the FIN arrive
	}
	if requests.Load() != 3 || s.accepted.Load() != 3 {
		t.Errorf("requests %d, accepted %d, want 3 and 3", requests.Load(), s.accepted.Load())
	}
}

// TestStrayBytesWithTheResponse: bytes a server sends right behind a
// response, in the same write, are in the buffer when the response has
// been read: the connection is closed and the next request, sent at
// once, re-dials instead of taking them for its answer.
func TestStrayBytesWithTheResponse(t *testing.T) {
	var requests atomic.Int64
	s := newRawServer(t, func(c net.Conn, br *bufio.Reader) {
		for {
			if _, err := readHead(br); err != nil {
				return
			}
			requests.Add(1)
			if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"+
				"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 2\r\n\r\nno"); err != nil {
				return
			}
		}
	})
	d := newDriver(t, schema.HTTP{}, "http://"+s.addr)
	c := dial(t, d)
	for i := 1; i <= 3; i++ {
		out := c.Do(t.Context(), drivers.Request{Seq: uint64(i), Deadline: time.Now().Add(10 * time.Second)})
		if out.Class != drivers.OK || out.Err != nil {
			t.Fatalf("request %d: %+v, want ok (the stray 503 was credited to it)", i, out)
		}
		if want := min(i-1, 1); out.Dialed != want {
			t.Errorf("request %d: Dialed %d, want %d", i, out.Dialed, want)
		}
	}
	if requests.Load() != 3 || s.accepted.Load() != 3 {
		t.Errorf("requests %d, accepted %d, want 3 and 3", requests.Load(), s.accepted.Load())
	}
}

// TestHugeResponseHeader_BadFrame: a response whose header block exceeds
// MaxHeaderBytes ends the request as bad-frame, with a message naming
// the limit, and closes the connection; the client does not buffer the
// whole header (the tester saw 154 MB RSS for 10 MiB headers on 4
// connections). A header block just under the limit is accepted.
func TestHugeResponseHeader_BadFrame(t *testing.T) {
	long := "HTTP/1.1 200 OK\r\nX-Big: " + strings.Repeat("a", 10<<20) + "\r\nContent-Length: 2\r\n\r\nok"
	var many strings.Builder
	many.WriteString("HTTP/1.1 200 OK\r\n")
	for many.Len() < 10<<20 {
		many.WriteString("X-Many: abcdefghijklmnopqrstuvwxyz\r\n")
	}
	many.WriteString("Content-Length: 2\r\n\r\nok")
	fits := "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Fits: "
	fits += strings.Repeat("b", MaxHeaderBytes-len(fits)-len("\r\n\r\n")) + "\r\n\r\nok"
	responses := map[string][]byte{"/long": []byte(long), "/many": []byte(many.String()), "/fits": []byte(fits)}
	s := newRawServer(t, func(c net.Conn, br *bufio.Reader) {
		for {
			line, err := readHead(br)
			if err != nil {
				return
			}
			path := strings.Fields(line)[1]
			if _, err := c.Write(responses[path]); err != nil {
				return
			}
		}
	})
	for _, path := range []string{"/long", "/many"} {
		t.Run(path, func(t *testing.T) {
			d := newDriver(t, schema.HTTP{Path: path}, "http://"+s.addr)
			c := dial(t, d)
			var m0, m1 runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&m0)
			out := do(c, 1, 10*time.Second)
			runtime.ReadMemStats(&m1)
			if out.Class != drivers.BadFrame || out.Responded || out.Err == nil || !strings.Contains(out.Err.Error(), "1 MiB") {
				t.Fatalf("%+v, want bad-frame naming the 1 MiB limit", out)
			}
			if out.BytesIn > MaxHeaderBytes+64<<10 {
				t.Errorf("read %d bytes of a header block capped at %d", out.BytesIn, MaxHeaderBytes)
			}
			if alloc := m1.TotalAlloc - m0.TotalAlloc; alloc > 8<<20 {
				t.Errorf("allocated %d MiB reading a capped header", alloc>>20)
			}
			// The connection was closed: the next request re-dials.
			if out := do(c, 2, 10*time.Second); out.Dialed != 1 {
				t.Errorf("next request %+v: the connection was kept", out)
			}
		})
	}
	t.Run("/fits", func(t *testing.T) {
		d := newDriver(t, schema.HTTP{Path: "/fits"}, "http://"+s.addr)
		c := dial(t, d)
		for i := 1; i <= 2; i++ {
			if out := do(c, uint64(i), 10*time.Second); out.Class != drivers.OK || out.Dialed != 0 {
				t.Fatalf("request %d: %+v, want ok on the same connection", i, out)
			}
		}
	})
}

// BenchmarkIdleLook measures the look Do takes at a kept-alive connection
// before reusing it: one non-blocking recv(2) for TCP, no allocation; a
// non-blocking read through tls.Conn for TLS (crypto/tls allocates 24 B
// per read of the socket).
func BenchmarkIdleLook(b *testing.B) {
	cert := httptest.NewUnstartedServer(nethttp.NotFoundHandler())
	cert.StartTLS() // only for its certificate
	conf := cert.TLS.Clone()
	cert.Close()
	plain := newRawServer(b, func(c net.Conn, br *bufio.Reader) { br.ReadByte() })
	secure := newRawServer(b, func(c net.Conn, _ *bufio.Reader) {
		tc := tls.Server(c, conf)
		defer tc.Close()
		bufio.NewReader(tc).ReadByte()
	})
	for _, bc := range []struct{ name, url string }{{"tcp", "http://" + plain.addr}, {"tls", "https://" + secure.addr}} {
		b.Run(bc.name, func(b *testing.B) {
			d := newDriver(b, schema.HTTP{TLS: &schema.TLS{InsecureSkipVerify: true}}, bc.url)
			c := dial(b, d).(*conn)
			c.nc.SetDeadline(time.Now().Add(time.Hour))
			b.ReportAllocs()
			for b.Loop() {
				if st := c.idle(); st != idleEmpty {
					b.Fatalf("idle() = %d", st)
				}
			}
		})
	}
}

package http

import (
	"bufio"
	"context"
	"crypto/tls"
	"io"
	"net"
	nethttp "net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/drivers"
	"github.com/runner-dev/runner/schema"
)

// The socket deadline a connection keeps from an earlier request (arm)
// and the request deadline these tests give: a request whose I/O runs
// past the first and ends before the second must not be cut short.
const (
	keptFor = time.Second
	due     = 1600 * time.Millisecond
	after   = 1300 * time.Millisecond // past keptFor, 300 ms before due
)

// readRequest reads one request head and its Content-Length body.
func readRequest(br *bufio.Reader) error {
	n := 0
	for first := true; ; first = false {
		line, err := br.ReadString('\n')
		if err != nil {
			return err
		}
		if !first && line == "\r\n" {
			break
		}
		if v, ok := strings.CutPrefix(line, "Content-Length: "); ok {
			n, _ = strconv.Atoi(strings.TrimSpace(v))
		}
	}
	_, err := br.Discard(n)
	return err
}

// lazyServer answers the first request on a connection at once and hands
// every later one to later, which must read it (readRequest) and answer.
// With conf it speaks TLS.
func lazyServer(t *testing.T, conf *tls.Config, later func(c net.Conn, br *bufio.Reader) error) *rawServer {
	return newRawServer(t, func(c net.Conn, br *bufio.Reader) {
		if conf != nil {
			tc := tls.Server(c, conf)
			defer tc.Close()
			c, br = tc, bufio.NewReader(tc)
		}
		if readRequest(br) != nil {
			return
		}
		if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"); err != nil {
			return
		}
		for later(c, br) == nil {
		}
	})
}

// testConf is a TLS server configuration with a throwaway certificate.
func testConf(t *testing.T) *tls.Config {
	cert := httptest.NewUnstartedServer(nethttp.NotFoundHandler())
	cert.StartTLS() // only for its certificate
	conf := cert.TLS.Clone()
	cert.Close()
	return conf
}

// TestLazyDeadline: a kept-alive connection keeps the socket deadline of
// an earlier request while it is well ahead, instead of setting one per
// request (arm). An I/O that runs past it is resumed up to the request's
// own deadline: a response or a blocked write that completes before it
// is ok, not a timeout; a request that gets no answer times out at its
// own deadline, not before; a cancellation still ends the request at
// once. Each case runs as the engine sends (one context for every
// request, the deadline in the request), over TCP and TLS.
func TestLazyDeadline(t *testing.T) {
	conf := testConf(t)
	answer := func(hold time.Duration) func(c net.Conn, br *bufio.Reader) error {
		return func(c net.Conn, br *bufio.Reader) error {
			if err := readRequest(br); err != nil {
				return err
			}
			time.Sleep(hold)
			_, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
			return err
		}
	}
	never := func(c net.Conn, br *bufio.Reader) error {
		readRequest(br)
		io.Copy(io.Discard, br) // until the client closes
		return io.EOF
	}
	// slowReader reads nothing for a while, then the whole request, so
	// that a large body's write blocks past the kept deadline.
	slowReader := func(c net.Conn, br *bufio.Reader) error {
		time.Sleep(after)
		return answer(0)(c, br)
	}
	for _, proto := range []string{"tcp", "tls"} {
		var sc *tls.Config
		scheme := "http://"
		if proto == "tls" {
			sc, scheme = conf, "https://"
		}
		cfg := schema.HTTP{TLS: &schema.TLS{InsecureSkipVerify: true}}
		upload := cfg
		upload.Method, upload.BodySize = "PUT", 32<<20 // more than the socket buffers hold
		for _, tc := range []struct {
			name   string
			cfg    schema.HTTP
			later  func(c net.Conn, br *bufio.Reader) error
			cancel bool
			want   drivers.Class
		}{
			{"response past the kept deadline", cfg, answer(after), false, drivers.OK},
			{"write past the kept deadline", upload, slowReader, false, drivers.OK},
			{"no response", cfg, never, false, drivers.Timeout},
			{"cancelled", cfg, never, true, drivers.Cancelled},
		} {
			t.Run(proto+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				s := lazyServer(t, sc, tc.later)
				c := dial(t, newDriver(t, tc.cfg, scheme+s.addr)).(*conn)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				first := time.Now().Add(keptFor)
				if out := c.Do(ctx, drivers.Request{Seq: 1, Deadline: first}); out.Class != drivers.OK {
					t.Fatalf("first request: %+v", out)
				}
				if !c.armed.Equal(first) {
					t.Fatalf("socket deadline %v after the first request, want its deadline %v", c.armed, first)
				}
				t0 := time.Now()
				deadline := t0.Add(due)
				if tc.cancel {
					time.AfterFunc(200*time.Millisecond, cancel)
				}
				out := c.Do(ctx, drivers.Request{Seq: 2, Deadline: deadline})
				end := time.Now()
				if out.Class != tc.want {
					t.Fatalf("second request: %+v, want class %s after %v", out, tc.want, end.Sub(t0))
				}
				switch tc.want {
				case drivers.OK:
					if !c.armed.Equal(deadline) {
						t.Errorf("socket deadline %v, want the request's %v: it was not resumed past the kept one", c.armed, deadline)
					}
				case drivers.Timeout:
					if end.Before(deadline) {
						t.Errorf("timed out %v before its deadline", deadline.Sub(end))
					}
				case drivers.Cancelled:
					if el := end.Sub(t0); el > keptFor-100*time.Millisecond {
						t.Errorf("cancelled at 200 ms, ended after %v", el)
					}
				}
			})
		}
	}
}

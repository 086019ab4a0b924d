package http

import (
	"bufio"
	"context"
	"net"
	nethttp "net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runner-dev/runner/drivers"
	"github.com/runner-dev/runner/drivers/internal/drivertest"
	"github.com/runner-dev/runner/schema"
)

// server is an in-process net/http server on 127.0.0.1 that counts the
// connections it accepted and the bytes it read and wrote.
type server struct {
	*httptest.Server
	accepted atomic.Int64
	read     atomic.Int64
	written  atomic.Int64
}

// newServer starts h; it is stopped when the test ends.
func newServer(t testing.TB, h nethttp.HandlerFunc) *server {
	t.Helper()
	s := &server{}
	s.Server = httptest.NewUnstartedServer(h)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.Listener = &countingListener{Listener: ln, s: s}
	s.Config.ConnState = func(_ net.Conn, st nethttp.ConnState) {
		if st == nethttp.StateNew {
			s.accepted.Add(1)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

type countingListener struct {
	net.Listener
	s *server
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c, s: l.s}, nil
}

type countingConn struct {
	net.Conn
	s *server
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.s.read.Add(int64(n))
	return n, err
}

func (c *countingConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.s.written.Add(int64(n))
	return n, err
}

// rawServer is a hand-written TCP stub: handle owns each accepted
// connection. Everything is closed and waited for when the test ends.
type rawServer struct {
	addr     string
	accepted atomic.Int64
}

func newRawServer(t testing.TB, handle func(c net.Conn, br *bufio.Reader)) *rawServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &rawServer{addr: ln.Addr().String()}
	drivertest.Serve(t, ln, func(_ int, c net.Conn) {
		defer c.Close()
		s.accepted.Add(1)
		handle(c, bufio.NewReader(c))
	})
	return s
}

// readHead reads one request head and returns its request line.
func readHead(br *bufio.Reader) (string, error) {
	line, err := br.ReadString('\n')
	if err != nil {
		return "", err
	}
	for {
		h, err := br.ReadString('\n')
		if err != nil {
			return "", err
		}
		if h == "\r\n" {
			return strings.TrimSpace(line), nil
		}
	}
}

func newDriver(t testing.TB, cfg schema.HTTP, url string) *Driver {
	t.Helper()
	d, err := New(cfg, url, t.TempDir())
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return d
}

func dial(t testing.TB, d *Driver) drivers.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := d.Dial(ctx)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// do is drivertest.Do: request seq with its context bounded by timeout.
var do = drivertest.Do

func boolp(b bool) *bool { return &b }

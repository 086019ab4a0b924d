package http

import (
	"bufio"
	"io"
	"net"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/runner-dev/runner/drivers"
	"github.com/runner-dev/runner/schema"
)

// cork holds what c writes until it is closed (TCP_CORK), so that the
// response and the FIN leave in one segment: the client has the close in
// hand the moment it has the response.
func cork(t *testing.T, c net.Conn) {
	rc, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Error(err)
		return
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_CORK, 1)
	}); err != nil || serr != nil {
		t.Errorf("TCP_CORK: %v, %v", err, serr)
	}
}

// TestIdleLook_CloseWithTheResponse: a server that closes its connection
// right after a keep-alive response (no Connection: close), the FIN in
// the response's own segment, is seen by the look even when the next
// request follows at once, as a closed-model connection's does: that
// request re-dials, nothing is sent on the closed connection, no request
// fails. This fails if the look were skipped for a connection whose
// response was just read.
func TestIdleLook_CloseWithTheResponse(t *testing.T) {
	var requests atomic.Int64
	s := newRawServer(t, func(c net.Conn, br *bufio.Reader) {
		cork(t, c)
		if _, err := readHead(br); err != nil {
			return
		}
		requests.Add(1)
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		// Closed on return: FIN with the corked response.
	})
	d := newDriver(t, schema.HTTP{}, "http://"+s.addr)
	c := dial(t, d)
	const rounds = 20
	for i := 1; i <= rounds; i++ {
		out := c.Do(t.Context(), drivers.Request{Seq: uint64(i), Deadline: time.Now().Add(10 * time.Second)})
		if out.Class != drivers.OK || out.Err != nil {
			t.Fatalf("request %d: %+v, want ok (sent on the connection the server had closed?)", i, out)
		}
		if want := min(i-1, 1); out.Dialed != want {
			t.Errorf("request %d: Dialed %d, want %d", i, out.Dialed, want)
		}
	}
	if requests.Load() != rounds || s.accepted.Load() != rounds {
		t.Errorf("requests %d, accepted %d, want %d and %d", requests.Load(), s.accepted.Load(), rounds, rounds)
	}
}

package http

import (
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"time"
)

// Before a request is sent on a kept-alive connection, Do looks without
// blocking at whether the server already wrote something on it while it
// was idle. A read with a deadline in the past cannot tell: Go's poller
// fails it before it reaches the socket, so the look is a recv(2) with
// MSG_DONTWAIT through syscall.RawConn, one system call and no allocation.
//
// What it finds decides the connection's fate, never the request's: the
// request has not been sent, so re-dialling is no retry (docs/design.md,
// "Connections and re-dials").
//   - nothing: the connection is reused;
//   - bytes: an unsolicited (stale) response, which the next read would
//     otherwise take for this request's: closed, re-dialled;
//   - end of stream or an error (the server closed or reset the idle
//     connection): re-dialled.
//
// The look is taken before every reuse, also when the previous response
// was read a moment ago, as a closed-model connection's is (issue 18
// weighed skipping it there). A server that closes right after a
// response without saying so has its FIN in our socket by then, often in
// the response's own segment (TestIdleLook_CloseWithTheResponse), and
// nothing short of a system call tells whether it came: skipped, the look
// would turn that close into an eof error of the next request, and stray
// bytes arriving behind a response into its answer. Bytes already read
// behind a response are the buffer's, not the look's: Do closes the
// connection (TestStrayBytesWithTheResponse).

// idleState is what a non-blocking look at an idle connection found.
type idleState int

const (
	idleEmpty  idleState = iota // nothing waiting: reuse it
	idleData                    // unsolicited bytes waiting
	idleClosed                  // end of stream, reset or closed by us
)

// errWouldBlock is what a non-blocking read returns when nothing is
// waiting. It is a temporary timeout, so tls.Conn does not remember it as
// a fatal error of the connection.
var errWouldBlock net.Error = wouldBlock{}

type wouldBlock struct{}

func (wouldBlock) Error() string   { return "nothing waiting" }
func (wouldBlock) Timeout() bool   { return true }
func (wouldBlock) Temporary() bool { return true }

// peeker looks at a plain TCP connection's receive queue without taking
// anything from it (MSG_PEEK). Its fn is built once per conn, so a look
// allocates nothing.
type peeker struct {
	rc  syscall.RawConn // nil: the connection cannot be looked at
	buf [1]byte
	n   int
	err error
	fn  func(fd uintptr) bool
}

// reset points p at nc, or at nothing when nc is not a socket.
func (p *peeker) reset(nc net.Conn) {
	p.rc = rawConn(nc)
	if p.rc != nil && p.fn == nil {
		p.fn = func(fd uintptr) bool {
			p.n, p.err = peekFD(fd, p.buf[:])
			return true // one attempt, never wait for readiness
		}
	}
}

// look reports what is waiting on the connection.
func (p *peeker) look() idleState {
	if p.rc == nil {
		return idleEmpty
	}
	if err := p.rc.Read(p.fn); err != nil {
		return rawReadFailed(err)
	}
	switch {
	case p.err == syscall.EAGAIN || p.err == syscall.EWOULDBLOCK || p.err == syscall.EINTR:
		return idleEmpty
	case p.err != nil || p.n <= 0:
		return idleClosed
	}
	return idleData
}

// rawReadFailed classes a failed RawConn.Read: a deadline that already
// passed says nothing about the peer (the request will time out on its
// own); anything else means the socket is closed.
func rawReadFailed(err error) idleState {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return idleEmpty
	}
	return idleClosed
}

// tlsBase is the TCP connection under a TLS one. A TCP-level peek cannot
// tell a stale response from a TLS 1.3 session ticket, and data may wait
// decrypted inside tls.Conn already; so the look goes through tls.Conn,
// whose reads tlsBase turns into one non-blocking recv(2) while probing is
// set, "nothing waiting" being errWouldBlock. tls.Conn consumes handshake
// records (tickets) itself and returns only application data or errors.
type tlsBase struct {
	net.Conn
	rc      syscall.RawConn // nil: no probing
	probing bool
	// resume, when not nil, says whether a read or write that failed
	// with its error can be tried again (conn.resume): below tls.Conn,
	// for which a write cut short by a deadline breaks the connection.
	resume func(error) bool

	p   []byte
	n   int
	err error
	fn  func(fd uintptr) bool
}

func newTLSBase(nc net.Conn) *tlsBase {
	b := &tlsBase{Conn: nc, rc: rawConn(nc)}
	b.fn = func(fd uintptr) bool {
		n, err := readFD(fd, b.p)
		switch {
		case err == syscall.EAGAIN || err == syscall.EWOULDBLOCK || err == syscall.EINTR:
			b.n, b.err = 0, errWouldBlock
		case err != nil:
			b.n, b.err = 0, os.NewSyscallError("read", err)
		case n == 0:
			b.n, b.err = 0, io.EOF
		default:
			b.n, b.err = n, nil
		}
		return true
	}
	return b
}

// Read implements io.Reader: the socket's Read, or one non-blocking read
// while probing.
func (b *tlsBase) Read(p []byte) (int, error) {
	if !b.probing {
		n, err := b.Conn.Read(p)
		if n == 0 && err != nil && b.resume != nil && b.resume(err) {
			n, err = b.Conn.Read(p)
		}
		return n, err
	}
	if len(p) == 0 {
		return 0, nil
	}
	b.p = p
	err := b.rc.Read(b.fn)
	b.p = nil
	if err != nil {
		return 0, err
	}
	return b.n, b.err
}

// Write implements io.Writer: the socket's Write, resumed once when
// resume allows it.
func (b *tlsBase) Write(p []byte) (int, error) {
	n, err := b.Conn.Write(p)
	if err != nil && b.resume != nil && b.resume(err) {
		var m int
		m, err = b.Conn.Write(p[n:])
		n += m
	}
	return n, err
}

// idle reports what waits on the live connection before a request is
// sent on it. Do calls it with the request's deadline already set.
func (c *conn) idle() idleState {
	b := c.tlsBase
	if b == nil {
		return c.peek.look()
	}
	if b.rc == nil {
		return idleEmpty
	}
	b.probing = true
	_, err := c.br.Peek(1)
	b.probing = false
	switch {
	case err == nil:
		return idleData
	case errors.Is(err, errWouldBlock):
		return idleEmpty
	}
	return rawReadFailed(err)
}

// errClosedEarly is Alive's answer for a connection the server closed or
// reset before any request was sent on it.
var errClosedEarly = errors.New("the server closed or reset the connection before any request")

// errUnasked is Alive's answer for a connection on which the server wrote
// before any request: the next Do would close it.
var errUnasked = errors.New("the server sent bytes before any request")

// Alive implements drivers.Prober with the look Do takes before reusing a
// kept-alive connection: nil when nothing waits on it, an error when the
// server closed or reset it, or wrote on it unasked. It never blocks and
// must not be called concurrently with Do.
func (c *conn) Alive() error {
	if c.isClosed() {
		return errClosed
	}
	nc := c.nc // Do, its only writer, is not running
	if nc == nil {
		return errClosedEarly
	}
	// An expired deadline (the last request's) would fail the look before
	// it reaches the socket; Do sets its own before every request.
	c.armed = time.Time{} // none now, and none known if this fails
	if err := nc.SetDeadline(time.Time{}); err != nil {
		return errClosedEarly
	}
	switch c.idle() {
	case idleData:
		return errUnasked
	case idleClosed:
		return errClosedEarly
	}
	return nil
}

// rawConn returns nc's RawConn, or nil when nc is not a socket or this
// system has no non-blocking recv(2).
func rawConn(nc net.Conn) syscall.RawConn {
	if !canLook {
		return nil
	}
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return rc
}

package http

import (
	"errors"
	"io"
)

// The closed model's event loop (drivers.Looper, loop_linux.go): one
// goroutine per loop waits in epoll_wait on all its connections' sockets
// at once and reads and writes them with raw system calls, where
// the engine's goroutine per connection costs a scheduler hand-off, a
// poller wake-up and a system-call entry per request (issue 18: 2.0–2.1
// µs of user CPU per request against wrk's 0.64–0.72; the loop's 0.89).
//
// The loop changes how bytes move, never what they mean: requests are
// rendered by the same code as Do's (conn.prepare), responses parsed by
// the same reader (readResponseHead, readBody) and judged by the same
// rule (conn.conclude), failures classed by conn.failed, dials made by
// Driver.dial. The reader is a blocking one: the loop keeps the bytes of
// the response received so far and runs the reader over them (replay);
// where they end it answers errMore, and the reader runs again from the
// response's start when more came. Most responses come in one read, so
// the reader runs once, as in Do. Bytes a large body carries past what
// the reader keeps (its head, the MaxRuleBody bytes a rule reads) are
// counted, not kept, and replayed as zeros: framing and the kept part
// are the same, and the memory is bounded as in Do. A chunked body's
// framing is inside its bytes: past replayAll bytes it streams to the
// reader on a goroutine of its own (stream), which takes each read as it
// comes. A connection reads at most maxReads times a turn, so a large
// response never keeps the loop from its timer, its cancellation and
// its other connections.
//
// Before a kept-alive connection is reused the loop looks at it as Do
// does (idle.go): one recv(2) that peeks. The epoll event that brings a
// response's last bytes also says whether the server's close came with
// them (the connection is then dropped at once), and an idle connection
// is watched during think time; but only the look, just before the
// write, sees a close that lands a few microseconds after the response
// as often as Do does.

// errMore is what replay returns at the end of the bytes received so far
// while the connection is still open: the reader stops there, and the
// loop runs it again when more arrived.
var errMore = errors.New("the response goes on past the bytes received so far")

// replay serves the bytes of one response received so far to the
// reader: b, then zeros standing for the bytes counted past it but not
// kept, then end (errMore, io.EOF, or the error the socket's read gave).
type replay struct {
	b     []byte
	zeros int64
	end   error
}

// Read implements io.Reader.
func (s *replay) Read(p []byte) (int, error) {
	if len(s.b) > 0 {
		n := copy(p, s.b)
		s.b = s.b[n:]
		return n, nil
	}
	if s.zeros > 0 {
		n := int(min(int64(len(p)), s.zeros))
		clear(p[:n])
		s.zeros -= int64(n)
		return n, nil
	}
	return 0, s.end
}

var _ io.Reader = (*replay)(nil)

// replayAll is how many bytes of a response the loop runs the reader
// over at every read that brings some: a head or a chunked body not
// complete yet may be malformed already, which the reader says as soon
// as it sees it (a bad status line is a bad-frame at once, not a timeout
// later). Past it, a head is read again only when a read brings an empty
// line (or the head's limit, or the end of the stream), and a chunked
// body streams to the reader (stream): the reader never runs once per
// byte.
var replayAll = 64 << 10 // a variable for the fuzz test, which lowers it

// CanLoop implements drivers.Looper: plain HTTP/1.x with keep-alive and
// one request per iteration, on Linux. HTTP/2 multiplexes on its own
// read loop, TLS needs crypto/tls's blocking reads, a flow keeps an
// iteration's steps on one goroutine, and with keep-alive off every
// request is a dial, which the loop would hand to a goroutine anyway.
func (d *Driver) CanLoop() (bool, string) {
	switch {
	case !loopOS:
		return false, "the event loop runs on Linux only"
	case d.h2:
		return false, "HTTP/2"
	case d.tls != nil:
		return false, "TLS (https://)"
	case d.flow != nil:
		return false, "flows"
	case !d.keepAlive:
		return false, "keep_alive: false"
	}
	return true, ""
}

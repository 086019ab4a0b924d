package relink

import (
	"errors"
	"net"
	"os"
	"syscall"
)

// ErrClosedEarly is Peek's answer for a connection the server closed
// (end of stream) before anything was asked on it.
var ErrClosedEarly = errors.New("the server closed the connection")

// Peek looks, without blocking and without taking anything, at what waits
// on nc's socket: nil when nothing or data waits (or nc is not a socket,
// or this system cannot look), ErrClosedEarly when the server closed it,
// and the socket's error (ECONNRESET) when it reset it. It goes around
// the read lock (syscall.RawConn.Control), so it may be called while a
// reader is blocked in Read on nc.
func Peek(nc net.Conn) error {
	sc, ok := nc.(syscall.Conn)
	if !ok || !canPeek {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	var n int
	var perr error
	if err := rc.Control(func(fd uintptr) { n, perr = peekFD(fd) }); err != nil {
		return err // closed on our side
	}
	switch {
	case perr == syscall.EAGAIN || perr == syscall.EWOULDBLOCK || perr == syscall.EINTR:
		return nil
	case perr != nil:
		return os.NewSyscallError("recvfrom", perr)
	case n == 0:
		return ErrClosedEarly
	}
	return nil
}

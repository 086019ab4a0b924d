package drivers

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Codes that Classify returns besides errno names and HTTP statuses.
const (
	// CodeTLS marks a failed TLS handshake, certificate verification
	// included. Its class is Connect.
	CodeTLS = "TLS"
	// CodeDNS marks a failed name lookup. Its class is Connect.
	CodeDNS = "DNS"
	// CodeConnectTimeout marks a dial (TCP or TLS) that did not finish
	// before its deadline. Its class is Connect: the target was never reached.
	CodeConnectTimeout = "ETIMEDOUT"
	// CodeAddrNotAvail marks a dial that found no free local address:
	// the client's ephemeral ports are exhausted. Client-side.
	CodeAddrNotAvail = "EADDRNOTAVAIL"
	// CodeFileLimit marks a dial refused by the client's descriptor limit
	// (EMFILE per process or ENFILE system-wide). Client-side.
	CodeFileLimit = "EMFILE"
	// CodeIDInUse marks a request not sent because its id (the sequence
	// number cut to the id field's width) was still in flight on the
	// connection: its reply could not have been told apart. Client-side.
	CodeIDInUse = "id-in-use"
	// CodeRequestTooLong marks a frame request not sent because its
	// rendered payload is longer than max_payload, or a part of it longer
	// than its length field holds (the frame driver). Client-side.
	CodeRequestTooLong = "request-too-long"
	// CodeCookieLimit marks a request whose virtual user's cookie jar
	// went past its bounds (the HTTP driver's MaxCookieSize,
	// MaxSetCookie, MaxCookieHeader: RFC 6265 §6.1's minimums): the
	// target set a cookie longer than the client keeps. Its class is
	// ClientError. Client-side.
	CodeCookieLimit = "cookie-limit"
	// CodePhaseEnd marks a request of class Cancelled that was still in
	// flight when its phase's drain ran out (the request timeout after the
	// phase's time was up): a left-over arrival, censored, not the
	// target's error and not an interrupt.
	CodePhaseEnd = "phase-end"
)

// Classify maps a transport error to an outcome class and a code. It is a
// pure function, safe for concurrent use, and never panics.
//
// The rules, first match wins:
//   - nil: OK, "".
//   - context.Canceled, or net.ErrClosed (the connection was closed on
//     our side, e.g. by Conn.Close): Cancelled, "".
//   - an errno anywhere in the chain (*net.OpError, *os.SyscallError,
//     syscall.Errno): EADDRNOTAVAIL → Connect "EADDRNOTAVAIL"; EMFILE and
//     ENFILE → Connect "EMFILE"; ECONNREFUSED, EHOSTUNREACH, ENETUNREACH,
//     EHOSTDOWN, ENETDOWN → Connect with the errno name; ECONNRESET, EPIPE,
//     ECONNABORTED → Reset with the errno name (Connect when dialling);
//     ETIMEDOUT → Timeout (Connect when dialling); any other errno → Reset
//     (Connect when dialling) with its name.
//   - a TLS or certificate error, or an alert from the server (a client
//     certificate refused, even after the handshake): Connect "TLS".
//   - context.DeadlineExceeded or a net.Error whose Timeout() is true:
//     Timeout, "" (Connect "ETIMEDOUT" when dialling).
//   - io.EOF, io.ErrUnexpectedEOF: EOF, "" (Connect "EOF" when dialling).
//   - *net.DNSError: Connect "DNS".
//   - any other error of a dial: Connect, "".
//   - anything else: Reset, "" (the transport broke in a way we cannot name).
//
// "When dialling" means the chain holds a *net.OpError whose Op is "dial".
func Classify(err error) (Class, string) {
	if err == nil {
		return OK, ""
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, net.ErrClosed) {
		return Cancelled, ""
	}
	var op *net.OpError
	dial := errors.As(err, &op) && op.Op == "dial"

	var errno syscall.Errno
	if errors.As(err, &errno) {
		name := ErrnoName(errno)
		switch errno {
		case syscall.EADDRNOTAVAIL:
			return Connect, CodeAddrNotAvail
		case syscall.EMFILE, syscall.ENFILE:
			return Connect, CodeFileLimit
		case syscall.ECONNREFUSED, syscall.EHOSTUNREACH, syscall.ENETUNREACH,
			syscall.EHOSTDOWN, syscall.ENETDOWN:
			return Connect, name
		case syscall.ETIMEDOUT:
			if dial {
				return Connect, name
			}
			return Timeout, name
		}
		if dial {
			return Connect, name
		}
		return Reset, name
	}
	if isTLS(err) {
		return Connect, CodeTLS
	}
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) ||
		(errors.As(err, &ne) && ne.Timeout()) {
		if dial {
			return Connect, CodeConnectTimeout
		}
		return Timeout, ""
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		if dial {
			return Connect, "EOF"
		}
		return EOF, ""
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return Connect, CodeDNS
	}
	if dial {
		return Connect, ""
	}
	return Reset, ""
}

// isTLS reports whether err comes from a TLS handshake or from
// certificate verification.
func isTLS(err error) bool {
	var (
		verify    *tls.CertificateVerificationError
		record    tls.RecordHeaderError
		alert     tls.AlertError
		unknownCA x509.UnknownAuthorityError
		hostname  x509.HostnameError
		invalid   x509.CertificateInvalidError
		echReject *tls.ECHRejectionError
	)
	if errors.As(err, &verify) || errors.As(err, &record) || errors.As(err, &alert) ||
		errors.As(err, &unknownCA) || errors.As(err, &hostname) || errors.As(err, &invalid) ||
		errors.As(err, &echReject) {
		return true
	}
	// An alert from the server ("remote error: tls: certificate
	// required"): with TLS 1.3 a server that refuses our client
	// certificate says so after our side of the handshake is done, so it
	// reaches the first read of the response.
	return remoteAlert(err)
}

// remoteAlert reports whether err's chain holds a *net.OpError of Op
// "remote error" (crypto/tls's form of an alert from the peer), however
// deep: errors.As would stop at the first *net.OpError, a dial's.
func remoteAlert(err error) bool {
	switch e := err.(type) {
	case nil:
		return false
	case *net.OpError:
		if e.Op == "remote error" {
			return true
		}
	case interface{ Unwrap() []error }:
		for _, x := range e.Unwrap() {
			if remoteAlert(x) {
				return true
			}
		}
		return false
	}
	return remoteAlert(errors.Unwrap(err))
}

// ClientSide reports whether code names a failure of the load generator's
// own machine or limits (local ports or descriptors exhausted, a request
// id in use, a cookie jar full, a frame its layout cannot declare)
// rather than of the target. Such failures are never blamed on the target (docs/design.md,
// "Client limits").
func ClientSide(code string) bool {
	return code == CodeAddrNotAvail || code == CodeFileLimit || code == CodeIDInUse || code == CodeCookieLimit || code == CodeRequestTooLong
}

// ClosedAfterBadFrame reports whether close code code (Strays.Closes)
// names a connection the client closed itself after a bad frame from the
// target (the frame driver's bad-<field>, bad-type, bad-length,
// bad-parts, too-long), rather than one the target closed or reset
// (eof, short-read, reset, a WebSocket close code, a GOAWAY).
func ClosedAfterBadFrame(code string) bool {
	return strings.HasPrefix(code, "bad-") || code == "too-long"
}

// LikelyCause returns a one-line explanation and remedy for a client-side
// code, for summaries; "" for any other code.
func LikelyCause(code string) string {
	switch code {
	case CodeAddrNotAvail:
		return "local address exhausted (ephemeral ports in TIME_WAIT): enable keep-alive or widen net.ipv4.ip_local_port_range"
	case CodeFileLimit:
		return "descriptor limit reached: raise ulimit -n"
	case CodeIDInUse:
		return "the request id field wrapped around while an older request with the same id still waited for its reply: widen the id field, or shorten the timeout"
	case CodeRequestTooLong:
		return "the scenario rendered a payload (or a part of it) longer than the layout can declare: shorten the data, or widen the field or max_payload"
	case CodeCookieLimit:
		return "the target set a cookie longer than a virtual user's jar keeps (4096 bytes of name and value, RFC 6265 §6.1): look at its Set-Cookie fields, or turn the jar off (driver.http.cookies: false)"
	}
	return ""
}

// errnoNames spells the errnos a load test meets; others fall back to
// "ERRNO_<n>".
var errnoNames = map[syscall.Errno]string{
	syscall.EADDRINUSE:    "EADDRINUSE",
	syscall.EADDRNOTAVAIL: "EADDRNOTAVAIL",
	syscall.EAGAIN:        "EAGAIN",
	syscall.EBADF:         "EBADF",
	syscall.ECONNABORTED:  "ECONNABORTED",
	syscall.ECONNREFUSED:  "ECONNREFUSED",
	syscall.ECONNRESET:    "ECONNRESET",
	syscall.EHOSTDOWN:     "EHOSTDOWN",
	syscall.EHOSTUNREACH:  "EHOSTUNREACH",
	syscall.EINVAL:        "EINVAL",
	syscall.EMFILE:        "EMFILE",
	syscall.ENETDOWN:      "ENETDOWN",
	syscall.ENETRESET:     "ENETRESET",
	syscall.ENETUNREACH:   "ENETUNREACH",
	syscall.ENFILE:        "ENFILE",
	syscall.ENOBUFS:       "ENOBUFS",
	syscall.ENOMEM:        "ENOMEM",
	syscall.ENOTCONN:      "ENOTCONN",
	syscall.EPIPE:         "EPIPE",
	syscall.EPROTO:        "EPROTO",
	syscall.ETIMEDOUT:     "ETIMEDOUT",
}

// ErrnoName returns the symbolic name of an errno ("ECONNREFUSED"), or
// "ERRNO_<n>" for one it does not know.
func ErrnoName(e syscall.Errno) string {
	if name, ok := errnoNames[e]; ok {
		return name
	}
	return "ERRNO_" + strconv.FormatUint(uint64(e), 10)
}

// CtxClass is the class of a request whose context ended first: Timeout
// when its deadline passed, Cancelled otherwise (end of phase, Ctrl-C).
func CtxClass(ctx context.Context) Class {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return Timeout
	}
	return Cancelled
}

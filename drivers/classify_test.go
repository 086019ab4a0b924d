package drivers

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

// opErr wraps an errno as the net package does: *net.OpError around
// *os.SyscallError around syscall.Errno.
func opErr(op, call string, errno syscall.Errno) error {
	return &net.OpError{Op: op, Net: "tcp", Err: os.NewSyscallError(call, errno)}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		name  string
		err   error
		class Class
		code  string
	}{
		// No error is no failure.
		{"nil", nil, OK, ""},
		// The target's port is closed.
		{"refused", opErr("dial", "connect", syscall.ECONNREFUSED), Connect, "ECONNREFUSED"},
		// No route to the target host or network.
		{"host unreachable", opErr("dial", "connect", syscall.EHOSTUNREACH), Connect, "EHOSTUNREACH"},
		{"net unreachable", opErr("dial", "connect", syscall.ENETUNREACH), Connect, "ENETUNREACH"},
		// Ephemeral ports exhausted on the client: client-side (B23 (b): the
		// client's limits are never the target's errors).
		{"addr not avail", opErr("dial", "connect", syscall.EADDRNOTAVAIL), Connect, "EADDRNOTAVAIL"},
		// Descriptor limits on the client: client-side, B23 (a); ENFILE folds into EMFILE.
		{"emfile", opErr("dial", "socket", syscall.EMFILE), Connect, "EMFILE"},
		{"enfile", opErr("dial", "socket", syscall.ENFILE), Connect, "EMFILE"},
		// The peer reset or half-closed a live connection.
		{"reset on read", opErr("read", "read", syscall.ECONNRESET), Reset, "ECONNRESET"},
		{"broken pipe on write", opErr("write", "write", syscall.EPIPE), Reset, "EPIPE"},
		{"aborted", opErr("read", "read", syscall.ECONNABORTED), Reset, "ECONNABORTED"},
		// A reset during the dial is a connect failure.
		{"reset while dialling", opErr("dial", "connect", syscall.ECONNRESET), Connect, "ECONNRESET"},
		// Kernel retransmission timeout: a timeout on a live connection, a connect failure on a dial.
		{"etimedout on read", opErr("read", "read", syscall.ETIMEDOUT), Timeout, "ETIMEDOUT"},
		{"etimedout on dial", opErr("dial", "connect", syscall.ETIMEDOUT), Connect, "ETIMEDOUT"},
		// Bare errno and errno wrapped by fmt.
		{"bare errno", syscall.ECONNRESET, Reset, "ECONNRESET"},
		{"wrapped errno", fmt.Errorf("write request: %w", opErr("write", "write", syscall.EPIPE)), Reset, "EPIPE"},
		// An errno without a name keeps its number.
		{"unnamed errno", opErr("read", "read", syscall.Errno(200)), Reset, "ERRNO_200"},
		// The peer closed the connection.
		{"eof", io.EOF, EOF, ""},
		{"unexpected eof", fmt.Errorf("read response: %w", io.ErrUnexpectedEOF), EOF, ""},
		// Deadlines: the context's or the connection's.
		{"ctx deadline", context.DeadlineExceeded, Timeout, ""},
		{"conn deadline", &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}, Timeout, ""},
		{"dial deadline", &net.OpError{Op: "dial", Net: "tcp", Err: os.ErrDeadlineExceeded}, Connect, "ETIMEDOUT"},
		// Cancellation is the client's doing, never the target's: B08.
		{"cancelled", context.Canceled, Cancelled, ""},
		{"cancelled with cause", fmt.Errorf("end of phase: %w", context.Canceled), Cancelled, ""},
		{"closed locally", &net.OpError{Op: "read", Net: "tcp", Err: net.ErrClosed}, Cancelled, ""},
		// Name resolution and certificate failures.
		{"dns", &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "x.invalid", IsNotFound: true}}, Connect, "DNS"},
		{"unknown authority", fmt.Errorf("tls: %w", x509.UnknownAuthorityError{}), Connect, "TLS"},
		// A server's alert (a client certificate refused), on a read after
		// a TLS 1.3 handshake, or inside a dial that read the first frame.
		{"alert on read", fmt.Errorf("read response: %w", &net.OpError{Op: "remote error", Err: errors.New("tls: certificate required")}), Connect, "TLS"},
		{"alert in dial", &net.OpError{Op: "dial", Net: "tcp", Err: errors.Join(fmt.Errorf("reading SETTINGS: %w", &net.OpError{Op: "remote error", Err: errors.New("tls: bad certificate")}))}, Connect, "TLS"},
		// Anything else that breaks a live connection.
		{"unknown", errors.New("something odd"), Reset, ""},
		{"unknown dial", &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("odd")}, Connect, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			class, code := Classify(tt.err)
			if class != tt.class || code != tt.code {
				t.Errorf("Classify(%v) = (%q, %q), want (%q, %q)", tt.err, class, code, tt.class, tt.code)
			}
		})
	}
}

// TestClassify_RealDial classifies errors produced by the net package
// itself, not built by hand.
func TestClassify_RealDial(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, err = net.DialTimeout("tcp", addr, 2*time.Second)
	if class, code := Classify(err); class != Connect || code != "ECONNREFUSED" {
		t.Errorf("dial closed port: Classify(%v) = (%q, %q), want (connect, ECONNREFUSED)", err, class, code)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var d net.Dialer
	_, err = d.DialContext(ctx, "tcp", addr)
	if class, _ := Classify(err); class != Cancelled {
		t.Errorf("dial with cancelled ctx: Classify(%v) = %q, want cancelled", err, class)
	}
}

func TestClientSide(t *testing.T) {
	for code, want := range map[string]bool{
		"EADDRNOTAVAIL":    true,
		"EMFILE":           true,
		"request-too-long": true,
		"ECONNREFUSED":     false,
		"503":              false,
		"":                 false,
	} {
		if got := ClientSide(code); got != want {
			t.Errorf("ClientSide(%q) = %v, want %v", code, got, want)
		}
		if cause := LikelyCause(code); (cause != "") != want {
			t.Errorf("LikelyCause(%q) = %q", code, cause)
		}
	}
	if got := LikelyCause("EADDRNOTAVAIL"); got != "local address exhausted (ephemeral ports in TIME_WAIT): enable keep-alive or widen net.ipv4.ip_local_port_range" {
		t.Errorf("LikelyCause(EADDRNOTAVAIL) = %q", got)
	}
	if got := LikelyCause("EMFILE"); got != "descriptor limit reached: raise ulimit -n" {
		t.Errorf("LikelyCause(EMFILE) = %q", got)
	}
}

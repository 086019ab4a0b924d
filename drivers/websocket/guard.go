package websocket

import (
	"encoding/binary"
	"fmt"
	"io"
	nethttp "net/http"

	"github.com/coder/websocket"
)

// What coder/websocket (v1.8) does not check on a client's connection,
// and this driver does (issue 12): its read limit counts payload bytes
// as they are read, so a frame declaring 2^31 bytes was read up to
// max_message before it was refused (and a declaration followed by
// silence waited for the timeout); it accepts a masked frame from the
// server (RFC 6455 §5.1 forbids it: the payload is read still masked);
// and it does not check that a text message is UTF-8 (§8.1). frameGuard
// refuses the first two from the frame header, before any of the payload
// reaches the library; read checks the third.

// frameError is a reply that fails the connection: the link ends with
// bad-frame Code, and we close it with Status.
type frameError struct {
	Code   string               // too-big, masked-frame, invalid-utf8
	Status websocket.StatusCode // the close code we send
	Msg    string
}

// Error returns the message.
func (e *frameError) Error() string { return e.Msg }

// guardTransport is the handshake's HTTP transport: it puts a frameGuard
// on the byte stream of every upgraded connection.
type guardTransport struct {
	base   nethttp.RoundTripper
	maxMsg int64 // max_message, bytes
}

// RoundTrip runs the handshake on base; on 101 Switching Protocols the
// response's body (the connection, as the library takes it) reads
// through a frameGuard.
func (t *guardTransport) RoundTrip(r *nethttp.Request) (*nethttp.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if err != nil || resp.StatusCode != nethttp.StatusSwitchingProtocols {
		return resp, err
	}
	if rwc, ok := resp.Body.(io.ReadWriteCloser); ok {
		resp.Body = &frameGuard{ReadWriteCloser: rwc, max: uint64(t.maxMsg)}
	}
	return resp, nil
}

// frameGuard reads every frame header of the server's byte stream as it
// passes to the library, and skips the payloads without looking at them.
// A data frame that would make its message longer than max bytes (the
// declared lengths of its frames summed), and any masked frame, are
// refused at the header: the bytes before it are handed on, the rest of
// the header and everything after are not (a header that came in pieces
// may have had its first ones handed on: the library waits for the rest),
// and every later Read returns the *frameError. Only the library's
// reader goroutine calls Read.
type frameGuard struct {
	io.ReadWriteCloser
	max  uint64
	hdr  [10]byte // the header being read (a server frame's is at most 10 bytes)
	nh   int      // bytes of hdr read
	left uint64   // payload bytes of the current frame still to pass
	msg  uint64   // payload declared so far by the current data message's frames
	err  error    // the refusal, once there is one
}

// Read reads from the connection and hands on what precedes a refused
// header.
func (g *frameGuard) Read(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	n, err := g.ReadWriteCloser.Read(p)
	if ok, ferr := g.scan(p[:n]); ferr != nil {
		g.err = ferr
		if ok > 0 {
			return ok, nil
		}
		return 0, ferr
	}
	return n, err
}

// scan follows the frames through b. On a refusal it returns how many
// bytes of b precede the refused header (0 when the header began in an
// earlier read) and the error.
func (g *frameGuard) scan(b []byte) (int, error) {
	for i := 0; i < len(b); {
		if g.left > 0 {
			step := min(g.left, uint64(len(b)-i))
			i += int(step)
			g.left -= step
			continue
		}
		start := i
		if g.nh > 0 {
			start = 0
		}
		for i < len(b) && g.nh < g.headerLen() {
			g.hdr[g.nh] = b[i]
			g.nh++
			i++
			if g.nh == 2 && g.hdr[1]&0x80 != 0 {
				return start, &frameError{Code: "masked-frame", Status: websocket.StatusProtocolError,
					Msg: "the server sent a masked frame (RFC 6455 §5.1 forbids it): the connection was closed on our side with 1002"}
			}
		}
		if g.nh < g.headerLen() {
			return len(b), nil // the rest of the header comes in a later read
		}
		if err := g.frame(); err != nil {
			return start, err
		}
	}
	return len(b), nil
}

// headerLen is the length of the header being read, as far as its
// second byte tells (2 until it is read).
func (g *frameGuard) headerLen() int {
	if g.nh < 2 {
		return 2
	}
	switch g.hdr[1] & 0x7f {
	case 126:
		return 4
	case 127:
		return 10
	}
	return 2
}

// frame takes the complete header in hdr: its payload is to be skipped,
// unless it makes its data message longer than max.
func (g *frameGuard) frame() error {
	g.nh = 0
	fin, op := g.hdr[0]&0x80 != 0, g.hdr[0]&0x0f
	var n uint64
	switch l := g.hdr[1] & 0x7f; l {
	case 126:
		n = uint64(binary.BigEndian.Uint16(g.hdr[2:4]))
	case 127:
		n = binary.BigEndian.Uint64(g.hdr[2:10])
	default:
		n = uint64(l)
	}
	if op < 8 { // a data frame (0: continuation); control frames are the library's
		if op != 0 {
			g.msg = 0
		}
		if n > g.max-g.msg {
			declared := fmt.Sprintf("its frame header declared %d bytes", n)
			if g.msg > 0 { // not its first fragment
				declared = fmt.Sprintf("its fragments so far held %d bytes and the next one's header declared %d more", g.msg, n)
			}
			return &frameError{Code: "too-big", Status: websocket.StatusMessageTooBig,
				Msg: fmt.Sprintf("a reply larger than max_message (%d bytes): %s, so it was refused before that payload was read, and the connection was closed on our side with 1009", g.max, declared)}
		}
		g.msg += n
		if fin {
			g.msg = 0
		}
	}
	g.left = n
	return nil
}

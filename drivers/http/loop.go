package http

import (
	"bytes"
	"errors"
	"io"
)

// The closed model's event loop (drivers.Looper, loop_linux.go): one
// goroutine per loop waits in epoll_wait on all its connections' sockets
// at once and reads and writes them with raw system calls, where
// the engine's goroutine per connection costs a scheduler hand-off, a
// poller wake-up and a system-call entry per request (issue 18: 2.1 µs of
// user CPU per request against wrk's 0.64).
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
// framing is followed as it comes (chunkScan): its data past what the
// reader keeps is counted, its framing kept, and the reader runs once
// the framing has ended. A connection reads at most maxReads times a
// turn, so a large response never keeps the loop from its timer, its
// cancellation and its other connections.
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
// reader: b, with runs of zeros standing for bytes that were counted but
// not kept (runs, by where in b they come), then end (errMore, io.EOF, or
// the error the socket's read gave).
type replay struct {
	b    []byte
	off  int
	runs []zeroRun
	end  error
}

// zeroRun is n bytes received but not kept, which came after the first
// at bytes kept.
type zeroRun struct {
	at int
	n  int64
}

// Read implements io.Reader.
func (s *replay) Read(p []byte) (int, error) {
	for len(s.runs) > 0 && s.runs[0].at == s.off {
		if s.runs[0].n > 0 {
			n := int(min(int64(len(p)), s.runs[0].n))
			clear(p[:n])
			s.runs[0].n -= int64(n)
			return n, nil
		}
		s.runs = s.runs[1:]
	}
	stop := len(s.b)
	if len(s.runs) > 0 {
		stop = s.runs[0].at
	}
	if s.off < stop {
		n := copy(p, s.b[s.off:stop])
		s.off += n
		return n, nil
	}
	return 0, s.end
}

var _ io.Reader = (*replay)(nil)

// replayAll is how many bytes of a response the loop runs the reader
// over at every read that brings some: a head or a chunked body not
// complete yet may be malformed already, which the reader says as soon
// as it sees it (a bad status line is a bad-frame at once, not a timeout
// later). Past it, the reader runs again only when a read brings what
// can end them (an empty line), or the end of the stream: a head or
// chunked body that trickles in runs it at most once per empty line,
// never once per byte.
var replayAll = 64 << 10 // a variable for the fuzz test, which lowers it

// chunkScan follows a chunked body's framing (RFC 9112 §7.1) as its
// bytes arrive, to say when the body has ended, so that the reader runs
// once over it then, not at every read; and which bytes are chunk data,
// so that data past what the reader keeps is counted, not held (the
// framing is kept: the reader reads it again). It checks little: a size
// line it cannot read, a chunk not followed by CRLF, a line longer than
// the reader takes, and it is bad, and the reader runs at every read
// from then on and says what is wrong.
type chunkScan struct {
	st   chunkState
	left int64  // data bytes left in the current chunk
	line []byte // the current size line so far (at most maxChunkLine)
	n    int    // bytes of the current line (trailer) or of the CRLF after data
	cr   bool   // the current trailer line so far is a lone CR
	seen int    // trailer bytes so far
	bad  bool
}

type chunkState uint8

const (
	chunkSize    chunkState = iota // in a size line
	chunkData                      // in a chunk's data
	chunkDataEnd                   // in the CRLF after a chunk's data
	chunkTrailer                   // in the trailer section, after the last chunk
	chunkDone                      // past the empty line that ends it
)

// maxChunkLine is the longest size line the reader takes
// (net/http/internal's chunked reader: 4096 bytes).
const maxChunkLine = 4096

// done reports whether the body has ended (or cannot be followed).
func (cs *chunkScan) done() bool { return cs.st == chunkDone || cs.bad }

// feed follows b, the body's next bytes. data is called with each run
// of chunk data (its offset in b and length) as it is met; every other
// byte of b is framing.
func (cs *chunkScan) feed(b []byte, data func(at, n int)) {
	for i := 0; i < len(b) && !cs.bad; {
		switch cs.st {
		case chunkSize:
			j := bytes.IndexByte(b[i:], '\n')
			end := len(b)
			if j >= 0 {
				end = i + j
			}
			if len(cs.line)+end-i > maxChunkLine {
				cs.bad = true
				return
			}
			cs.line = append(cs.line, b[i:end]...)
			if j < 0 {
				return
			}
			i = end + 1
			size, ok := chunkSizeOf(cs.line)
			cs.line = cs.line[:0]
			switch {
			case !ok:
				cs.bad = true
			case size == 0:
				cs.st, cs.n, cs.cr = chunkTrailer, 0, false
			default:
				cs.st, cs.left = chunkData, size
			}
		case chunkData:
			n := int(min(cs.left, int64(len(b)-i)))
			data(i, n)
			i += n
			if cs.left -= int64(n); cs.left == 0 {
				cs.st, cs.n = chunkDataEnd, 0
			}
		case chunkDataEnd:
			if b[i] != "\r\n"[cs.n] {
				cs.bad = true
				return
			}
			i++
			if cs.n++; cs.n == 2 {
				cs.st = chunkSize
			}
		case chunkTrailer:
			c := b[i]
			i++
			if cs.seen++; cs.seen > MaxHeaderBytes {
				cs.bad = true
				return
			}
			if c != '\n' {
				cs.cr = cs.n == 0 && c == '\r'
				cs.n++
				continue
			}
			if cs.n == 0 || cs.n == 1 && cs.cr {
				cs.st = chunkDone
			}
			cs.n, cs.cr = 0, false
		case chunkDone:
			return
		}
	}
}

// chunkSizeOf reads a size line (without its LF) as the reader does:
// it ends in CR and holds no other, blanks before it are trimmed, then
// extensions after ';', then 1 to 16 hex digits.
func chunkSizeOf(line []byte) (int64, bool) {
	if i := bytes.IndexByte(line, '\r'); i != len(line)-1 || i < 0 {
		return 0, false
	}
	line = bytes.TrimRight(line[:len(line)-1], " \t")
	if i := bytes.IndexByte(line, ';'); i >= 0 {
		line = line[:i]
	}
	if len(line) == 0 || len(line) > 16 {
		return 0, false
	}
	var n uint64
	for _, c := range line {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		n = n<<4 | uint64(c)
	}
	if n > 1<<62 {
		return 0, false // no int64 to count it in: the reader judges
	}
	return int64(n), true
}

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

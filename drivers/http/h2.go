package http

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/runner-dev/runner/drivers"
)

// HTTP/2 (version "2"): framing and HPACK are golang.org/x/net/http2's
// Framer and hpack; connection ownership, streams, flow control and the
// timing of each stream are ours (http2.Transport pools connections and
// retries on its own, which a load generator must not do).
//
// A Conn is one connection slot. Its session is one TCP (and TLS)
// connection carrying up to MaxInflight streams at once, bounded by the
// server's SETTINGS_MAX_CONCURRENT_STREAMS: a request beyond it waits
// for a stream to end, and that wait is the client's queueing (counted in
// the response time from the intended start, not in the service time:
// Outcome.Sent is stamped once the stream has its slot).
const (
	// MaxH2Inflight is the largest in-flight cap per HTTP/2 connection
	// (streams open at once); servers usually allow 100 to 250.
	MaxH2Inflight = 1 << 16
	// h2FrameSize is the largest frame we accept: the protocol's default,
	// which we do not raise (RFC 9113 §4.2), so a frame costs at most
	// 16 KiB of buffer whatever the server says.
	h2FrameSize = 16 << 10
	// h2StreamWindow and h2ConnWindow are the receive windows we grant
	// (RFC 9113 §6.9): 1 MiB per stream, 16 MiB per connection. DATA is
	// counted and dropped (MaxRuleBody kept when a rule reads the body),
	// so the windows bound bytes in flight, not memory.
	h2StreamWindow = 1 << 20
	h2ConnWindow   = 16 << 20
	// h2MaxStreamID is the last client stream id (2³¹ − 1): a session
	// that reaches it is replaced by a fresh connection.
	h2MaxStreamID = 1<<31 - 1
)

// Codes of HTTP/2 outcomes besides rst-<CODE> (a RST_STREAM from the
// server, its error code by name: rst-REFUSED_STREAM).
const (
	// CodeGoAway is a request refused by two GOAWAYs: sent on a stream
	// above the server's last-stream-id, re-sent once on a fresh
	// connection and refused again (class reset).
	CodeGoAway = "goaway"
	// CodeFlowStall is a request whose body could not be sent before its
	// timeout because the server's flow-control window stayed closed
	// (class timeout).
	CodeFlowStall = "flow-control-stall"
)

// errNotH2 is the error of a TLS handshake in which the server did not
// select h2 by ALPN.
var errNotH2 = errors.New("the server did not select h2 by ALPN")

// StreamCap implements drivers.StreamCapper: the smallest
// SETTINGS_MAX_CONCURRENT_STREAMS a server sent on this driver's HTTP/2
// connections (0 included), and whether one did (never for HTTP/1.x).
func (d *Driver) StreamCap() (int, bool) {
	c := d.streamCap.Load()
	return int(c - 1), c > 0
}

// h2conn is one HTTP/2 connection slot (drivers.Conn). Do is safe for
// concurrent use, up to MaxInflight at once: each call is one stream of
// the current session. A session the server ended, or one that received
// GOAWAY, is replaced by a fresh dial inside the next Do (Outcome.Dialed).
type h2conn struct {
	d *Driver
	// jars hold the cookies of this connection's virtual users, one per
	// in-flight lane (drivers.Request.Lane): a virtual user is an
	// iteration slot, not a connection, so concurrent flow iterations
	// on one connection never share a session. nil with cookies off.
	// Their streams run concurrently, so jarMu guards the map and the
	// jars (a lane's own requests come one at a time, but Do makes no
	// such demand of its callers).
	jarMu sync.Mutex
	jars  map[int]*jar

	mu      sync.Mutex
	sess    *session      // the session new streams go on; nil before the first dial
	dialing chan struct{} // non-nil while one Do dials; closed when it is done
	closed  bool
}

var (
	_ drivers.Conn         = (*h2conn)(nil)
	_ drivers.Prober       = (*h2conn)(nil)
	_ drivers.StrayCounter = (*Driver)(nil)
	_ drivers.StreamCapper = (*Driver)(nil)
)

func newH2Conn(d *Driver) *h2conn {
	c := &h2conn{d: d}
	if d.cookies {
		c.jars = map[int]*jar{}
	}
	return c
}

// jar returns the cookie jar of lane (made at its first request), nil
// with cookies off. A lane outside [0, MaxH2Inflight) shares lane 0's, so
// the jars stay bounded by the in-flight cap.
func (c *h2conn) jar(lane int) *jar {
	if c.jars == nil {
		return nil
	}
	if lane < 0 || lane >= MaxH2Inflight {
		lane = 0
	}
	c.jarMu.Lock()
	defer c.jarMu.Unlock()
	j := c.jars[lane]
	if j == nil {
		j = newJar()
		c.jars[lane] = j
	}
	return j
}

// Close closes the session; streams in flight end as Cancelled, and later
// Do calls return Cancelled without dialling.
func (c *h2conn) Close() error {
	c.mu.Lock()
	s := c.sess
	c.closed = true
	c.sess = nil
	c.mu.Unlock()
	if s != nil {
		s.fail(errClosed)
	}
	return nil
}

// Alive reports an error when the session has ended or the server sent
// GOAWAY (drivers.Prober); nil before the first dial.
func (c *h2conn) Alive() error {
	c.mu.Lock()
	s := c.sess
	c.mu.Unlock()
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.err != nil:
		return s.err
	case s.goAway:
		return fmt.Errorf("the server sent GOAWAY (%s)", s.goAwayCode)
	}
	return nil
}

// session returns a session new streams may go on: the current one,
// unless it is avoid or can take no new stream, else a fresh dial (one at
// a time per slot; other callers wait for it, bounded by deadline).
func (c *h2conn) session(ctx context.Context, deadline time.Time, avoid *session) (s *session, dialed int, connect time.Duration, err error) {
	for tries := 0; ; tries++ {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil, dialed, connect, errClosed
		}
		if s := c.sess; s != nil && s != avoid && s.open() {
			c.mu.Unlock()
			return s, dialed, connect, nil
		}
		if ch := c.dialing; ch != nil {
			c.mu.Unlock()
			t := time.NewTimer(time.Until(deadline))
			select {
			case <-ch:
				t.Stop()
				continue
			case <-ctx.Done():
				t.Stop()
				return nil, dialed, connect, context.Cause(ctx)
			case <-t.C:
				return nil, dialed, connect, os.ErrDeadlineExceeded
			}
		}
		if tries > 2 {
			// Three sessions came and went under us: stop here.
			c.mu.Unlock()
			return nil, dialed, connect, errors.New("http2: no usable connection after three dials")
		}
		ch := make(chan struct{})
		c.dialing = ch
		old := c.sess
		c.mu.Unlock()

		t0 := time.Now()
		dctx, cancel := context.WithDeadline(ctx, deadline)
		ns, tcp, derr := c.d.dialH2(dctx)
		cancel()
		connect += time.Since(t0)
		if tcp {
			dialed++
		}
		c.mu.Lock()
		c.dialing = nil
		close(ch)
		if derr == nil {
			if c.closed {
				c.mu.Unlock()
				ns.fail(errClosed)
				return nil, dialed, connect, errClosed
			}
			c.sess = ns
		}
		c.mu.Unlock()
		if derr != nil {
			return nil, dialed, connect, derr
		}
		if old != nil {
			old.retire()
		}
		return ns, dialed, connect, nil
	}
}

// Do sends one request on a stream of the slot's session and waits for
// its response's END_STREAM. See drivers.Conn and the package notes on
// HTTP/2.
//
// Outcome.Sent is the instant the stream had its slot (a free one under
// the server's SETTINGS_MAX_CONCURRENT_STREAMS) and its HEADERS went to
// the wire; when this Do dialled first it stays zero, so the engine's own
// stamp (the dial included) stands, as for HTTP/1.x. Outcome.FirstByte is
// the time from Do's start to the stream's first frame. BytesOut and
// BytesIn count the stream's own frames, 9-byte frame headers included;
// connection-level frames (SETTINGS, PING, WINDOW_UPDATE on stream 0)
// belong to no request.
//
// A stream above the last-stream-id of a GOAWAY was not processed (RFC
// 9113 §6.8): it is sent again once on a fresh connection, its response
// time still counting from its intended start, and counted in
// Driver.GoAwayRetries; refused again, it ends as reset with code
// "goaway".
func (c *h2conn) Do(ctx context.Context, r drivers.Request) (out drivers.Outcome) {
	start, deadline, ended := begin(ctx, r, c.d.timeout, &out)
	if ended {
		return out
	}
	timer := getTimer(time.Until(deadline))
	defer putTimer(timer)

	defer func() {
		if out.Dialed > 0 {
			// This request waited for a dial: the engine's stamp before
			// Do stands, so the dial counts in its service time.
			out.Sent = time.Time{}
		}
	}()
	q, ok := c.prepare(r, &out)
	if !ok {
		return out
	}
	var avoid *session
	retried := false
	for attempt := 0; attempt < 4; attempt++ {
		s, dialed, connect, err := c.session(ctx, deadline, avoid)
		out.Dialed += dialed
		out.Connect += connect
		if err != nil {
			return c.dialFailed(ctx, err, out)
		}
		res := s.exchange(ctx, r.QueueEnd, timer, &deadline, start, c, q, &out)
		switch res {
		case exNotSent:
			// The session ended or was told to go away before our
			// HEADERS left: nothing was sent, so no retry is counted.
			avoid = s
			continue
		case exRefused:
			if retried {
				out.Class, out.Code = drivers.Reset, CodeGoAway
				out.Err = fmt.Errorf("stream refused by GOAWAY twice: the server did not process it on two connections")
				return out
			}
			retried = true
			out.Resent = 1
			c.d.goAwayRetries.Add(1)
			avoid = s
			continue
		}
		return out
	}
	out.Class, out.Code = drivers.Reset, CodeGoAway
	out.Err = errors.New("http2: no connection took the stream")
	return out
}

// timers are reused by Do: since Go 1.23 a stopped timer's channel holds
// no stale tick, so Reset after Stop is safe.
var timers sync.Pool

func getTimer(d time.Duration) *time.Timer {
	if t, ok := timers.Get().(*time.Timer); ok {
		t.Reset(d)
		return t
	}
	return time.NewTimer(d)
}

func putTimer(t *time.Timer) {
	t.Stop()
	timers.Put(t)
}

// h2req is one request rendered for its stream: the same for a second
// send after GOAWAY.
type h2req struct {
	spec   *Driver
	r      drivers.Request
	row    []string // its data row
	jar    *jar     // its virtual user's cookie jar (h2conn.jar); nil without one
	jarURL *url.URL // what the cookie jar files it under; nil without one
	cookie string   // the Cookie value the jar gives it; "" for none
	body   []byte
}

// prepare renders r: its step's Driver, data row, cookies and body. A
// jar past its bounds ends the request before it is sent (ok false, out
// client/cookie-limit, as for HTTP/1.x).
func (c *h2conn) prepare(r drivers.Request, out *drivers.Outcome) (q h2req, ok bool) {
	q.spec, q.r = c.d.spec(r), r
	if q.spec.data != nil {
		q.row = q.spec.data.Row(r.Seq, r.Slot)
	}
	if q.jar = c.jar(r.Lane); q.jar != nil {
		q.jarURL = h2RequestURL(c.d, q.spec, r, q.row)
		c.jarMu.Lock()
		h, err := q.jar.appendHeader(nil, q.jarURL)
		c.jarMu.Unlock()
		if err != nil {
			out.Class, out.Code, out.Err = drivers.ClientError, drivers.CodeCookieLimit, err
			return q, false
		}
		// "Cookie: a=1; b=2\r\n": one field, as RFC 9113 §8.2.3 allows.
		q.cookie = strings.TrimSuffix(strings.TrimPrefix(string(h), "Cookie: "), "\r\n")
	}
	q.body = q.spec.filler
	if q.body == nil && q.spec.body.size(r.Seq, q.row, r.Vars) > 0 {
		q.body = q.spec.body.render(nil, r.Seq, q.row, r.Vars)
	}
	return q, true
}

// dialFailed ends a request whose session could not be had: as an
// HTTP/1.x re-dial (dialOutcome), with code ALPN for a server that did
// not select h2 and h2 for one that broke the connection preface.
func (c *h2conn) dialFailed(ctx context.Context, err error, out drivers.Outcome) drivers.Outcome {
	switch {
	case errors.Is(err, errClosed):
		out.Class, out.Err = drivers.Cancelled, errClosed
		return out
	case errors.Is(err, os.ErrDeadlineExceeded):
		out.Class, out.Err = drivers.Timeout, fmt.Errorf("waiting for a connection: %w", err)
		return out
	}
	out = dialOutcome(ctx, err, false, out)
	if out.Class == drivers.Connect {
		switch {
		case errors.Is(err, errNotH2):
			out.Code = "ALPN"
		case isH2Error(err):
			out.Code = "h2"
		}
	}
	return out
}

// isH2Error reports whether err is a protocol error of the framer or of
// our own checks.
func isH2Error(err error) bool {
	var ce http2.ConnectionError
	var pe *h2ProtoError
	return errors.As(err, &ce) || errors.As(err, &pe)
}

// h2ProtoError is a protocol violation by the server that we found
// (RFC 9113 error code code); it ends the session.
type h2ProtoError struct {
	code http2.ErrCode
	msg  string
}

// Error returns the message with its error code.
func (e *h2ProtoError) Error() string { return fmt.Sprintf("http2 %s: %s", e.code, e.msg) }

// dialH2 dials one session: TCP, TLS with ALPN h2 (https://) or nothing
// more (h2c with prior knowledge), the client preface and our SETTINGS,
// then the server's SETTINGS, which must come first (RFC 9113 §3.4). tcp
// reports whether the TCP connection was established (and counted).
func (d *Driver) dialH2(ctx context.Context) (s *session, tcp bool, err error) {
	nc, tcp, err := d.dial(ctx)
	if err != nil {
		if strings.Contains(err.Error(), "no application protocol") {
			// The server refused the handshake for want of a protocol
			// it speaks (the no_application_protocol alert).
			err = fmt.Errorf("%w (it refused the handshake: %w): %s does not speak HTTP/2 over TLS; use version \"1.1\"", errNotH2, err, d.addr)
		}
		return nil, tcp, err
	}
	if tc, ok := nc.(*tls.Conn); ok {
		if p := tc.ConnectionState().NegotiatedProtocol; p != "h2" {
			nc.Close()
			sel := "no protocol"
			if p != "" {
				sel = strconv.Quote(p)
			}
			// A dial error (net.OpError "dial"): drivers.Classify makes
			// it a connect failure, not a reset of a request.
			return nil, tcp, &net.OpError{Op: "dial", Net: "tcp", Addr: nc.RemoteAddr(),
				Err: fmt.Errorf("%w (it selected %s): the server does not speak HTTP/2 over TLS; use version \"1.1\"", errNotH2, sel)}
		}
	}
	s = newSession(d, nc)
	if dl, ok := ctx.Deadline(); ok {
		nc.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { nc.SetDeadline(past) })
	err = s.handshake()
	if !stop() || ctx.Err() != nil {
		err = errors.Join(err, context.Cause(ctx))
	}
	if err != nil {
		nc.Close()
		return nil, tcp, &net.OpError{Op: "dial", Net: "tcp", Addr: nc.RemoteAddr(), Err: err}
	}
	nc.SetDeadline(time.Time{})
	go s.readLoop()
	return s, tcp, nil
}

// session is one HTTP/2 connection.
type session struct {
	d  *Driver
	nc net.Conn

	// wmu serialises writes: the framer's write side, the HPACK encoder
	// (whose dynamic table needs header blocks on the wire in the order
	// they were encoded) and bw. Its holder lets go with unlockW, which
	// writes the control frames queued meanwhile (pending, under cmu).
	wmu     sync.Mutex
	cmu     sync.Mutex
	pending []func() error
	bw      *bufio.Writer
	fr      *http2.Framer
	henc    *hpack.Encoder
	hbuf    bytes.Buffer
	head    []byte // the request head rendered, reused
	// strs interns the strings of header fields (names in lower case,
	// and values) that repeat from one request to the next, so that a
	// constant header costs no allocation; at most maxInterned.
	strs, lowers map[string]string

	mu         sync.Mutex
	streams    map[uint32]*stream
	nextID     uint32
	active     int           // streams holding a slot (opening or open)
	maxStreams uint32        // the server's SETTINGS_MAX_CONCURRENT_STREAMS
	maxFrame   uint32        // the server's SETTINGS_MAX_FRAME_SIZE
	initWin    int64         // the server's SETTINGS_INITIAL_WINDOW_SIZE
	sendWin    int64         // connection-level send window
	changed    chan struct{} // closed by broadcast; nil: nobody waits
	goAway     bool
	goAwayCode http2.ErrCode
	lastID     uint32
	retired    bool            // replaced by a fresh session: closed once idle
	err        error           // why the session ended; nil while it lives
	recvUnack  int64           // connection-level DATA bytes not yet granted back
	late       map[uint32]bool // streams that timed out, whose response would be late
	// tableSize is the server's SETTINGS_HEADER_TABLE_SIZE + 1 not yet
	// applied to the encoder (0: nothing new); the encoder is wmu's.
	tableSize atomic.Int64
}

func newSession(d *Driver, nc net.Conn) *session {
	s := &session{
		d: d, nc: nc,
		streams:    map[uint32]*stream{},
		nextID:     1,
		maxStreams: MaxH2Inflight, // unlimited until the server says (RFC 9113 §6.5.2)
		maxFrame:   h2FrameSize,
		initWin:    65535,
		sendWin:    65535,
	}
	s.bw = bufio.NewWriterSize(nc, 16<<10)
	s.fr = http2.NewFramer(s.bw, bufio.NewReaderSize(nc, 16<<10))
	s.fr.SetMaxReadFrameSize(h2FrameSize)
	s.fr.MaxHeaderListSize = MaxHeaderBytes
	s.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	s.fr.SetReuseFrames() // no frame is kept past its handling
	s.henc = hpack.NewEncoder(&s.hbuf)
	return s
}

// handshake writes the preface and our settings and reads the server's
// SETTINGS (acknowledged by the read loop's first write).
func (s *session) handshake() error {
	if _, err := s.bw.WriteString(http2.ClientPreface); err != nil {
		return err
	}
	err := s.fr.WriteSettings(
		http2.Setting{ID: http2.SettingEnablePush, Val: 0},
		http2.Setting{ID: http2.SettingInitialWindowSize, Val: h2StreamWindow},
		http2.Setting{ID: http2.SettingMaxHeaderListSize, Val: MaxHeaderBytes},
	)
	if err == nil {
		err = s.fr.WriteWindowUpdate(0, h2ConnWindow-65535)
	}
	if err == nil {
		err = s.bw.Flush()
	}
	if err != nil {
		return err
	}
	f, err := s.fr.ReadFrame()
	if err != nil {
		return fmt.Errorf("http2: reading the server's SETTINGS: %w", err)
	}
	sf, ok := f.(*http2.SettingsFrame)
	if !ok || sf.IsAck() {
		return &h2ProtoError{http2.ErrCodeProtocol, fmt.Sprintf("the server's first frame is %s, not SETTINGS", f.Header().Type)}
	}
	if err := s.applySettings(sf); err != nil {
		return err
	}
	s.wmu.Lock()
	defer s.wmu.Unlock() // before the read loop: nothing is queued
	if err := s.fr.WriteSettingsAck(); err != nil {
		return err
	}
	return s.bw.Flush()
}

// MaxStreams is the server's SETTINGS_MAX_CONCURRENT_STREAMS as last
// received (MaxH2Inflight when it sent none).
func (s *session) MaxStreams() uint32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxStreams
}

// applySettings takes the server's settings.
func (s *session) applySettings(sf *http2.SettingsFrame) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := sf.ForeachSetting(func(st http2.Setting) error {
		if err := st.Valid(); err != nil {
			return err
		}
		switch st.ID {
		case http2.SettingMaxConcurrentStreams:
			s.maxStreams = min(st.Val, MaxH2Inflight)
			// streamCap holds the cap + 1 (0: none announced), so that
			// a cap of 0 is told apart from none.
			for v := int64(s.maxStreams) + 1; ; {
				c := s.d.streamCap.Load()
				if c != 0 && c <= v || s.d.streamCap.CompareAndSwap(c, v) {
					break
				}
			}
		case http2.SettingMaxFrameSize:
			s.maxFrame = st.Val
		case http2.SettingInitialWindowSize:
			// RFC 9113 §6.9.2: the change applies to every open stream.
			delta := int64(st.Val) - s.initWin
			s.initWin = int64(st.Val)
			for _, st := range s.streams {
				st.sendWin += delta
			}
		case http2.SettingHeaderTableSize:
			// The encoder's table is bounded by the server's; taken
			// under wmu by the next HEADERS write.
			s.tableSize.Store(int64(st.Val) + 1)
		}
		return nil
	})
	s.broadcast()
	return err
}

// broadcast wakes every stream waiting for a slot or a window; s.mu held.
// The channel is made only when someone waits (waitCh), so a stream's end
// costs no allocation when nobody does.
func (s *session) broadcast() {
	if s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
}

// waitCh returns the channel the next broadcast closes; s.mu held.
func (s *session) waitCh() chan struct{} {
	if s.changed == nil {
		s.changed = make(chan struct{})
	}
	return s.changed
}

// open reports whether the session takes new streams.
func (s *session) open() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err == nil && !s.goAway && !s.retired && s.nextID < h2MaxStreamID
}

// retire marks a replaced session: it takes no new stream and is closed
// once its last stream ends.
func (s *session) retire() {
	s.mu.Lock()
	s.retired = true
	idle := s.active == 0
	s.mu.Unlock()
	if idle {
		s.fail(errors.New("http2: connection replaced"))
	}
}

// fail ends the session with err and closes its connection: every
// stream in flight ends with it (a connection-level error fails the
// streams on it; errClosed, our Close, cancels them). The first call
// wins.
func (s *session) fail(err error) {
	s.mu.Lock()
	if s.err != nil {
		s.mu.Unlock()
		return
	}
	s.err = err
	streams := s.streams
	s.streams = map[uint32]*stream{}
	s.broadcast()
	s.mu.Unlock()
	for _, st := range streams {
		st.end(endConn, err)
	}
	s.nc.Close()
}

// endKind says how a stream ended.
type endKind uint8

const (
	endNone     endKind = iota
	endOK               // END_STREAM of a complete response
	endReset            // RST_STREAM from the server
	endConn             // the connection ended
	endRefused          // above a GOAWAY's last-stream-id: not processed
	endProtocol         // a stream-level protocol error
)

// stream is one request in flight. Its fields after id are written by
// the read loop until done is closed, then read by the Do that owns it.
type stream struct {
	id      uint32
	sendWin int64 // guarded by session.mu
	closed  bool  // guarded by session.mu: no more DATA may be sent
	sentAll bool  // guarded by session.mu: our END_STREAM was written

	done     chan struct{}
	once     sync.Once
	kind     endKind
	err      error
	code     string
	first    time.Time
	bytesIn  int64
	recvWin  int64 // receive window left
	recvUn   int64 // bytes to grant back
	gotFinal bool
	wantLen  int64 // the final head's content-length; −1: none
	head     bool  // HEAD: a response has no body
	// j holds the response for judging: status, headers, cookies, body
	// (conn.judge and conn.capture read it).
	j conn
}

// end ends the stream once: the first end wins.
func (st *stream) end(k endKind, err error) {
	st.once.Do(func() {
		st.kind, st.err = k, err
		close(st.done)
	})
}

// exchange results.
const (
	exDone    = iota // out is the outcome
	exNotSent        // nothing was sent: try another session
	exRefused        // refused by GOAWAY: not processed, may be sent again
)

// exchange sends r on a new stream of s and waits for its end; out
// receives the outcome (exDone) or only byte counts (the others).
//
// The wait for a stream under the server's SETTINGS_MAX_CONCURRENT_STREAMS
// is the client's queue, as the open model's wait for a free in-flight
// slot is with HTTP/1.x: for a request never written it has no timeout
// (its response time runs from its intended start all the same), the
// request's timeout starts once it has its stream (*deadline moves by
// the wait and timer with it), and a request still waiting when
// queueEnd closes or ctx ends was never sent (Outcome.Unsent): the
// engine books it left over or cancelled before sending, not as a
// request of the target. A request sent again after GOAWAY was sent
// once: its wait stays under its timeout.
func (s *session) exchange(ctx context.Context, queueEnd <-chan struct{}, timer *time.Timer, deadline *time.Time, start time.Time, c *h2conn, q h2req, out *drivers.Outcome) int {
	spec, body := q.spec, q.body
	expired := timer.C
	queued := out.Sent.IsZero()
	var waited time.Time // when the wait for a stream began; zero: none
	// A slot under the server's limit.
	s.mu.Lock()
	for s.err == nil && !s.goAway && !s.retired && s.active >= int(s.maxStreams) {
		ch := s.waitCh()
		limit := s.maxStreams
		s.mu.Unlock()
		if waited.IsZero() {
			waited = time.Now()
		}
		timeout := expired
		if queued {
			timeout = nil
		}
		select {
		case <-ch:
		case <-queueEnd:
			out.Class, out.Code, out.Unsent = drivers.Cancelled, drivers.CodePhaseEnd, true
			out.Err = fmt.Errorf("still waiting for a stream under the server's limit of %d concurrent streams when the phase's drain ran out: never sent", limit)
			return exDone
		case <-ctx.Done():
			out.Class, out.Unsent = drivers.CtxClass(ctx), queued
			out.Err = fmt.Errorf("waiting for a stream under the server's limit of %d concurrent streams: %w", limit, context.Cause(ctx))
			return exDone
		case <-timeout:
			out.Class, out.Err = drivers.Timeout, fmt.Errorf("waiting for a stream under the server's limit of %d (sent again after GOAWAY): %w", limit, os.ErrDeadlineExceeded)
			return exDone
		}
		s.mu.Lock()
	}
	if queued && !waited.IsZero() {
		// The request's timeout starts with its stream.
		*deadline = deadline.Add(time.Since(waited))
		timer.Reset(time.Until(*deadline))
	}
	dl := *deadline
	if s.err != nil || s.goAway || s.retired || s.nextID >= h2MaxStreamID {
		s.mu.Unlock()
		return exNotSent
	}
	s.active++
	s.mu.Unlock()

	st := &stream{done: make(chan struct{}), recvWin: h2StreamWindow, head: spec.method == "HEAD"}
	st.j.spec, st.j.jar = spec, q.jar

	// HEADERS: id, encoding and write in one critical section, so ids
	// and header blocks reach the wire in order.
	s.wmu.Lock()
	sent := time.Now()
	s.mu.Lock()
	if s.err != nil || s.goAway || s.retired {
		// Ended, or told to go away, since the slot was taken: the
		// stream would be above the last-stream-id. Nothing was sent.
		s.active--
		idle := s.active == 0 && s.err == nil
		s.broadcast()
		s.mu.Unlock()
		s.unlockW()
		if idle {
			s.fail(errors.New("http2: connection closed after its last stream"))
		}
		return exNotSent
	}
	if out.Sent.IsZero() {
		// A request sent again after GOAWAY keeps its first send.
		out.Sent = sent
	}
	st.id = s.nextID
	s.nextID += 2
	st.sendWin = s.initWin
	st.sentAll = len(body) == 0 // END_STREAM on the HEADERS
	s.streams[st.id] = st
	s.mu.Unlock()
	n, err := s.writeHeaders(st.id, q, len(body) == 0, dl)
	s.unlockW()
	out.BytesOut += n
	if err != nil {
		s.fail(fmt.Errorf("write request: %w", err))
		return s.finish(ctx, st, out, c, q)
	}
	if len(body) > 0 {
		if res, done := s.writeBody(ctx, expired, st, body, dl, out); done {
			return res
		}
	}
	select {
	case <-st.done:
	case <-ctx.Done():
		out.Class, out.Err = drivers.CtxClass(ctx), fmt.Errorf("read response: %w", context.Cause(ctx))
		if s.cancel(st, http2.ErrCodeCancel) && out.Class == drivers.Timeout {
			s.timedOut(st.id)
		}
		return exDone
	case <-expired:
		if s.cancel(st, http2.ErrCodeCancel) {
			s.timedOut(st.id)
		}
		out.Class, out.Err = drivers.Timeout, fmt.Errorf("read response: %w", os.ErrDeadlineExceeded)
		s.account(st, start, out)
		return exDone
	}
	s.account(st, start, out)
	return s.finish(ctx, st, out, c, q)
}

// account books a stream's bytes in and first byte.
func (s *session) account(st *stream, start time.Time, out *drivers.Outcome) {
	s.mu.Lock()
	out.BytesIn += st.bytesIn
	first := st.first
	s.mu.Unlock()
	if !first.IsZero() && out.FirstByte == 0 {
		out.FirstByte = first.Sub(start)
	}
}

// finish turns an ended stream into the outcome.
func (s *session) finish(ctx context.Context, st *stream, out *drivers.Outcome, c *h2conn, q h2req) int {
	<-st.done
	switch st.kind {
	case endRefused:
		return exRefused
	case endOK:
		out.Responded = true
		out.Class, out.Code, out.Err = st.j.judge()
		if out.Class == drivers.OK && len(q.spec.captures) > 0 {
			out.Class, out.Code, out.Err = st.j.capture(q.spec, q.r.Seq, q.row, q.r.Vars)
		}
		if q.jar != nil && len(st.j.resp.cookies) > 0 {
			// As for HTTP/1.x: a jar that overflowed outweighs the
			// response's own outcome.
			c.jarMu.Lock()
			err := q.jar.store(q.jarURL, st.j.resp.cookies, time.Now())
			c.jarMu.Unlock()
			if err != nil {
				out.Class, out.Code, out.Err = drivers.ClientError, drivers.CodeCookieLimit, fmt.Errorf("status %d: %w", st.j.resp.status, err)
			}
		}
		return exDone
	case endReset:
		out.Class, out.Code, out.Err = drivers.Reset, st.code, st.err
		return exDone
	case endProtocol:
		out.Class, out.Code, out.Err = drivers.BadFrame, st.code, st.err
		return exDone
	}
	// endConn: the connection ended under the stream.
	err := st.err
	out.Err = fmt.Errorf("read response: %w", err)
	s.mu.Lock()
	goAway, code, last := s.goAway, s.goAwayCode, s.lastID
	s.mu.Unlock()
	if goAway && st.id > last && !errors.Is(err, errClosed) {
		// Above the last-stream-id: not processed, whatever ended it.
		return exRefused
	}
	switch {
	case errors.Is(err, errClosed):
		out.Class = drivers.Cancelled
	case ctx.Err() != nil:
		out.Class = drivers.CtxClass(ctx)
	case goAway:
		// At or below the GOAWAY's last-stream-id, so perhaps processed,
		// and never completed: an error, never retried.
		out.Class, out.Code = drivers.Reset, "goaway-"+code.String()
	case isH2Error(err):
		out.Class, out.Code = drivers.BadFrame, h2Code(err)
	default:
		out.Class, out.Code = drivers.Classify(err)
		if out.Class == drivers.Reset && !isNetError(err) {
			out.Class = drivers.BadFrame
		}
	}
	return exDone
}

// h2Code names a protocol error by its error code: h2-PROTOCOL_ERROR.
func h2Code(err error) string {
	var ce http2.ConnectionError
	var pe *h2ProtoError
	switch {
	case errors.As(err, &pe):
		return "h2-" + pe.code.String()
	case errors.As(err, &ce):
		return "h2-" + http2.ErrCode(ce).String()
	}
	return "h2"
}

// cancel ends a stream we give up on: RST_STREAM to the server, and its
// slot freed. Frames that still come for it are dropped.
// It reports whether the stream was still open.
func (s *session) cancel(st *stream, code http2.ErrCode) bool {
	if !s.forget(st) {
		return false
	}
	st.end(endConn, errClosed)
	s.writeControl(func() error { return s.fr.WriteRSTStream(st.id, code) })
	return true
}

// maxTimedOut bounds the ids of timed-out streams a session remembers
// to count their late responses: past it, the set starts again.
const maxTimedOut = 4096

// timedOut remembers a stream that timed out, whose response may still
// come (and is then counted late, drivers.Strays).
func (s *session) timedOut(id uint32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.late == nil || len(s.late) >= maxTimedOut {
		s.late = map[uint32]bool{}
	}
	s.late[id] = true
}

// lateResponse counts a response's head on a stream that timed out.
func (s *session) lateResponse(id uint32) {
	s.mu.Lock()
	late := s.late[id]
	delete(s.late, id)
	s.mu.Unlock()
	if late {
		s.d.late.Add(1)
	}
}

// forget removes a stream and frees its slot; false when it was already
// gone. A retired session is closed with its last stream.
func (s *session) forget(st *stream) bool {
	s.mu.Lock()
	if s.streams[st.id] != st {
		s.mu.Unlock()
		return false
	}
	delete(s.streams, st.id)
	st.closed = true
	s.active--
	idle := s.active == 0 && (s.retired || s.goAway)
	s.broadcast()
	s.mu.Unlock()
	if idle {
		s.fail(errors.New("http2: connection closed after its last stream"))
	}
	return true
}

// writeControl writes one connection-level frame (a SETTINGS or PING
// ack, a WINDOW_UPDATE, a RST_STREAM) and flushes; a failed write ends
// the session.
//
// It never waits for wmu: the frame is queued, and written now if wmu is
// free, else by its holder as it lets go (unlockW). The read loop calls
// it, and a read loop waiting for a writer stuck on a server that does
// not read while it cannot write would stop reading, and the two would
// wait on each other until the write's deadline.
func (s *session) writeControl(write func() error) {
	s.cmu.Lock()
	s.pending = append(s.pending, write)
	s.cmu.Unlock()
	if s.wmu.TryLock() {
		s.unlockW()
	}
}

// unlockW writes the control frames queued (writeControl), then releases
// wmu; it takes wmu again for frames queued meanwhile that found it held.
// A failed write ends the session.
func (s *session) unlockW() {
	for {
		s.cmu.Lock()
		q := s.pending
		s.pending = nil
		s.cmu.Unlock()
		var err error
		if len(q) > 0 {
			s.nc.SetWriteDeadline(time.Now().Add(s.d.timeout))
			for _, w := range q {
				if err == nil {
					err = w()
				}
			}
			if err == nil {
				err = s.bw.Flush()
			}
		}
		s.wmu.Unlock()
		if err != nil {
			s.fail(fmt.Errorf("write: %w", err))
			return
		}
		s.cmu.Lock()
		more := len(s.pending) > 0
		s.cmu.Unlock()
		if !more || !s.wmu.TryLock() {
			return
		}
	}
}

// writeHeaders encodes and writes a request's header block (HEADERS, then
// CONTINUATION frames past the server's frame size); s.wmu held. It
// returns the bytes written.
func (s *session) writeHeaders(id uint32, q h2req, endStream bool, deadline time.Time) (int64, error) {
	if v := s.tableSize.Swap(0); v > 0 {
		s.henc.SetMaxDynamicTableSizeLimit(uint32(min(v-1, 4096)))
	}
	s.hbuf.Reset()
	s.head = q.spec.head.render(s.head[:0], q.r.Seq, q.row, q.r.Vars)
	if err := s.encodeRequest(s.head); err != nil {
		return 0, err
	}
	if q.cookie != "" {
		s.henc.WriteField(hpack.HeaderField{Name: "cookie", Value: q.cookie})
	}
	if q.spec.sendLen {
		s.henc.WriteField(hpack.HeaderField{Name: "content-length", Value: strconv.Itoa(len(q.body))})
	}
	s.nc.SetWriteDeadline(deadline)
	block := s.hbuf.Bytes()
	s.mu.Lock()
	max := int(s.maxFrame)
	s.mu.Unlock()
	var n int64
	first := true
	for first || len(block) > 0 {
		chunk := block[:min(len(block), max)]
		block = block[len(chunk):]
		var err error
		if first {
			err = s.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: chunk, EndStream: endStream, EndHeaders: len(block) == 0})
		} else {
			err = s.fr.WriteContinuation(id, len(block) == 0, chunk)
		}
		if err != nil {
			return n, err
		}
		n += 9 + int64(len(chunk))
		first = false
	}
	return n, s.bw.Flush()
}

// encodeRequest encodes the request head the templates rendered, in
// HTTP/1.x form ("GET /p HTTP/2\r\nHost: h\r\nName: v\r\n"), as HTTP/2
// fields: :method, :scheme, :authority (from Host), :path, then every
// other field with its name in lower case (RFC 9113 §8.2.1, §8.3.1);
// s.wmu held.
func (s *session) encodeRequest(head []byte) error {
	line, rest, _ := bytes.Cut(head, []byte("\r\n"))
	method, target, ok := bytes.Cut(line, []byte(" "))
	if i := bytes.LastIndexByte(target, ' '); ok && i >= 0 {
		target = target[:i]
	} else {
		return fmt.Errorf("http2: malformed request line %q", clip(line))
	}
	var authority []byte
	for fields := rest; len(fields) > 0; {
		var f []byte
		f, fields, _ = bytes.Cut(fields, []byte("\r\n"))
		name, value, _ := bytes.Cut(f, []byte(":"))
		if asciiEqualFold(name, "Host") {
			authority = bytes.TrimSpace(value)
		}
	}
	enc := s.henc
	enc.WriteField(hpack.HeaderField{Name: ":method", Value: s.intern(method, false)})
	enc.WriteField(hpack.HeaderField{Name: ":scheme", Value: s.d.scheme})
	enc.WriteField(hpack.HeaderField{Name: ":authority", Value: s.intern(authority, false)})
	enc.WriteField(hpack.HeaderField{Name: ":path", Value: s.intern(target, false)})
	for len(rest) > 0 {
		var f []byte
		f, rest, _ = bytes.Cut(rest, []byte("\r\n"))
		name, value, _ := bytes.Cut(f, []byte(":"))
		if len(name) == 0 || asciiEqualFold(name, "Host") {
			continue
		}
		enc.WriteField(hpack.HeaderField{Name: s.intern(name, true), Value: s.intern(bytes.TrimSpace(value), false)})
	}
	return nil
}

// maxInterned bounds session.strs: values that change with every request
// ({{seq}} in a path) fill it, and it starts again.
const maxInterned = 256

// intern returns b as a string (in lower case when lower), the same
// string for the same bytes while it is in s.strs (keyed by b as given,
// so that a name in mixed case is lowered once); s.wmu held.
func (s *session) intern(b []byte, lower bool) string {
	m := &s.strs
	if lower {
		m = &s.lowers
	}
	if v, ok := (*m)[string(b)]; ok {
		return v
	}
	if *m == nil || len(*m) >= maxInterned {
		*m = make(map[string]string, maxInterned)
	}
	v := string(b)
	if lower {
		v = strings.ToLower(v)
	}
	(*m)[string(b)] = v
	return v
}

// writeBody sends a request body in DATA frames within the server's
// windows. done is true when the request ended here (the outcome is in
// out): the windows stayed closed past the deadline (class timeout, code
// flow-control-stall), ctx ended, the stream ended first (the response
// came early: then it is awaited as usual), or the session failed.
func (s *session) writeBody(ctx context.Context, expired <-chan time.Time, st *stream, body []byte, deadline time.Time, out *drivers.Outcome) (int, bool) {
	for len(body) > 0 {
		s.mu.Lock()
		for s.err == nil && !st.closed && (s.sendWin <= 0 || st.sendWin <= 0) {
			ch := s.waitCh()
			s.mu.Unlock()
			select {
			case <-ch:
			case <-st.done:
			case <-ctx.Done():
				s.cancel(st, http2.ErrCodeCancel)
				out.Class, out.Err = drivers.CtxClass(ctx), fmt.Errorf("write request body: %w", context.Cause(ctx))
				return exDone, true
			case <-expired:
				s.cancel(st, http2.ErrCodeCancel)
				out.Class, out.Code = drivers.Timeout, CodeFlowStall
				out.Err = fmt.Errorf("write request body: the server's flow-control window stayed closed with %d bytes unsent until the timeout", len(body))
				return exDone, true
			}
			s.mu.Lock()
		}
		if s.err != nil || st.closed {
			s.mu.Unlock()
			return exDone, false // finish reads how the stream ended
		}
		n := min(int64(len(body)), s.sendWin, st.sendWin, int64(s.maxFrame))
		s.sendWin -= n
		st.sendWin -= n
		s.mu.Unlock()
		chunk := body[:n]
		body = body[n:]
		s.wmu.Lock()
		s.nc.SetWriteDeadline(deadline)
		err := s.fr.WriteData(st.id, len(body) == 0, chunk)
		if err == nil {
			err = s.bw.Flush()
		}
		s.unlockW()
		if len(body) == 0 {
			s.mu.Lock()
			st.sentAll = true
			s.mu.Unlock()
		}
		out.BytesOut += 9 + n
		if err != nil {
			s.fail(fmt.Errorf("write request body: %w", err))
			return exDone, false
		}
	}
	return exDone, false
}

// h2RequestURL is the URL the cookie jar files a request under (as
// conn.requestURL, without the conn's buffer: streams run concurrently).
func h2RequestURL(d, spec *Driver, r drivers.Request, row []string) *url.URL {
	u, err := url.ParseRequestURI(string(spec.target.render(nil, r.Seq, row, r.Vars)))
	if err != nil {
		u = &url.URL{Path: "/"}
	}
	u.Scheme, u.Host = d.scheme, d.jarHost
	return u
}

// goAwayCounts are the driver's running totals of HTTP/2 events no
// request outcome shows.
type goAwayCounts struct {
	goAwayRetries atomic.Int64
	goAways       atomic.Int64
	streamCap     atomic.Int64 // StreamCap + 1; 0: none announced
	late          atomic.Int64 // responses to streams that had timed out
	closeMu       sync.Mutex
	closes        map[string]int64 // GOAWAYs by code, "goaway-NO_ERROR"
}

// Strays implements drivers.StrayCounter. Late counts HTTP/2 responses
// whose stream had timed out (and was reset) before they came; Closes
// counts the HTTP/2 connections the server ended with GOAWAY, by its
// code ("goaway-NO_ERROR"). HTTP/1.x has none of either: zeros. Safe
// for concurrent use.
func (d *Driver) Strays() drivers.Strays {
	d.closeMu.Lock()
	defer d.closeMu.Unlock()
	return drivers.Strays{Late: d.late.Load(), Closes: maps.Clone(d.closes)}
}

// GoAwayRetries is the number of requests sent again on a fresh
// connection because a GOAWAY said the server had not processed them
// (HTTP/2 only; 0 otherwise). Safe for concurrent use.
func (d *Driver) GoAwayRetries() int64 { return d.goAwayRetries.Load() }

// GoAways is the number of HTTP/2 connections on which the server sent
// GOAWAY. Safe for concurrent use.
func (d *Driver) GoAways() int64 { return d.goAways.Load() }

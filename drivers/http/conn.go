package http

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	nethttp "net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/expr-lang/expr/vm"

	"github.com/runner-dev/runner/drivers"
	"github.com/runner-dev/runner/drivers/internal/capture"
)

// errClosed is the error of a Do on a connection after Close.
var errClosed = errors.New("connection closed by the client")

// past is a deadline that has already expired: setting it makes blocked
// reads and writes return at once.
var past = time.Unix(1, 0)

// conn is one HTTP/1.x connection. It carries one request at a time. When
// the server (or keep-alive off) ends the connection, the next Do dials a
// new one and reports it in Outcome.Dialed.
type conn struct {
	d *Driver
	// spec is the request Do is sending: d itself, or the Driver of the
	// flow step it sends (Driver.spec).
	spec *Driver

	// mu guards nc, closed and gen against Close and the cancellation
	// callback; Do itself is the only writer of nc.
	mu     sync.Mutex
	nc     net.Conn // nil between a close and the next re-dial
	closed bool

	// watched is the context whose cancellation interrupts this
	// connection's I/O, registered once (context.AfterFunc) and kept
	// while Do is called with the same context: the engine passes its
	// phase's context to every request (drivers.DeadlineKeeper), so a
	// request costs no registration. stopWatch retires the callback;
	// watchGen (guarded by mu) makes a retired callback that already
	// started a no-op.
	watched   context.Context
	stopWatch func() bool
	watchGen  uint64

	peek    peeker   // plain TCP: looks at the idle connection
	tlsBase *tlsBase // TLS: the socket under it, which can look too

	// armed is the deadline set on nc, zero when none is known (a new
	// connection, or Alive cleared it); due is the deadline of the
	// request in Do. See arm. lazy: an I/O that armed cut short can be
	// resumed (resume), so armed may come before due.
	armed, due time.Time
	lazy       bool

	cr   countingReader
	br   *bufio.Reader
	wbuf []byte
	vec  [2][]byte
	resp response     // the head of the current response
	body bytes.Buffer // response body, kept only when the rule reads it
	vm   vm.VM        // runs the success rule (one response at a time)
	env  ruleEnv      // the success rule's variables

	// jar holds this virtual user's cookies (nil with cookies off); it
	// lives as long as the conn, through re-dials. tbuf renders the
	// request target for its URL.
	jar  *jar
	tbuf []byte

	// exprs caches the captures of templated expressions as rendered
	// (namedCapture.expr), by kind and text, so that a virtual user that
	// keeps its row compiles its regex once; at most maxExprs, then
	// emptied. xbuf renders them.
	exprs map[string]*capture.Capture
	xbuf  []byte
}

var (
	_ drivers.Conn   = (*conn)(nil)
	_ drivers.Prober = (*conn)(nil)
)

func newConn(d *Driver) *conn {
	c := &conn{
		d:    d,
		spec: d,
		wbuf: make([]byte, 0, 512),
	}
	c.br = bufio.NewReaderSize(&c.cr, 16<<10)
	if d.cookies {
		c.jar = newJar()
	}
	return c
}

// attach makes nc the live connection; false when Close came first.
func (c *conn) attach(nc net.Conn) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.nc = nc
	c.cr.r = nc
	c.cr.resume = nil
	c.br.Reset(&c.cr)
	c.tlsBase = nil
	c.armed, c.lazy = time.Time{}, true
	if tc, ok := nc.(*tls.Conn); ok {
		// A TLS write cut short by a deadline breaks the connection for
		// good: I/O is resumed under tls.Conn, on the socket, or not at
		// all.
		c.tlsBase, _ = tc.NetConn().(*tlsBase)
		c.lazy = c.tlsBase != nil
		if c.lazy {
			c.tlsBase.resume = c.resume
		}
		c.peek.reset(nil)
	} else {
		c.cr.resume = c.resume
		c.peek.reset(nc)
	}
	return true
}

// drop closes the live connection; the next Do re-dials.
func (c *conn) drop() {
	c.mu.Lock()
	if c.nc != nil {
		c.nc.Close()
		c.nc = nil
	}
	c.mu.Unlock()
}

// Close closes the connection and makes a concurrent Do return promptly
// with Class Cancelled. Later Do calls return Cancelled without dialling.
// Safe to call more than once and concurrently with Do.
func (c *conn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	if c.nc != nil {
		return c.nc.Close()
	}
	return nil
}

// Do sends one request and reads its whole response. See drivers.Conn.
//
// The deadline of every read and write is ctx's deadline (or Do's start
// plus the request timeout when ctx has none). Cancelling ctx sets a past
// deadline on the socket, so Do returns promptly even mid-read.
// Any failure closes the connection, since it may be out of sync; so does
// a response that asks to close, and every response when keep-alive is
// off. A non-2xx status or a failed rule keeps it.
//
// Before a kept-alive connection is reused, a non-blocking look (see
// idle.go) checks that the server has not written on it or closed it
// while it was idle; if it has, the request is sent on a new connection
// (Outcome.Dialed) instead, without an error: nothing was sent on the old
// one. A close that comes after the request was written is an eof or
// reset outcome and is never retried.
func (c *conn) Do(ctx context.Context, r drivers.Request) (out drivers.Outcome) {
	start, deadline, ended := begin(ctx, r, c.d.timeout, &out)
	if ended {
		return out
	}
	c.watch(ctx)

	if c.nc != nil {
		// Reused: the deadline first, since the look fails at once on an
		// expired one (the previous request's).
		if err := c.arm(deadline, start); err != nil {
			return c.failed(ctx, "set deadline", err, out)
		}
		if c.idle() != idleEmpty {
			c.drop()
		}
	}
	if c.nc == nil {
		if c.isClosed() {
			out.Class, out.Err = drivers.Cancelled, errClosed
			return out
		}
		dctx, cancel := context.WithDeadline(ctx, deadline)
		nc, tcp, err := c.d.dial(dctx)
		cancel()
		out.Connect = time.Since(start)
		if tcp {
			out.Dialed = 1
		}
		if err != nil {
			return c.dialFailed(ctx, err, out)
		}
		if !c.attach(nc) {
			nc.Close()
			out.Class, out.Err = drivers.Cancelled, errClosed
			return out
		}
		if err := c.arm(deadline, start); err != nil {
			return c.failed(ctx, "set deadline", err, out)
		}
	}
	nc := c.nc
	// A cancellation between the first look at ctx and the deadline just
	// set would have had its past deadline overwritten: look again. Any
	// later one finds the deadline set and interrupts the I/O.
	if err := ctx.Err(); err != nil {
		out.Class, out.Err = drivers.CtxClass(ctx), fmt.Errorf("before send: %w", context.Cause(ctx))
		return out
	}

	w, filler, ex, ok := c.prepare(r, &out)
	if !ok {
		return out
	}
	var err error
	out.BytesOut, err = c.write(nc, w, filler)
	if err != nil {
		return c.failed(ctx, "write request", err, out)
	}

	// Read the response. BytesIn counts what this response consumed from
	// the socket: bytes read minus those still buffered, before and after.
	in0 := c.cr.n - int64(c.br.Buffered())
	c.cr.first, c.cr.eof = time.Time{}, false
	c.cr.limit = in0 + MaxHeaderBytes // the buffer is empty: in0 == c.cr.n
	err = c.readResponse()
	c.cr.limit = 0
	if !c.cr.first.IsZero() {
		out.FirstByte = c.cr.first.Sub(start)
	}
	if err != nil {
		out.BytesIn = c.cr.n - int64(c.br.Buffered()) - in0
		return c.failed(ctx, "read response", err, out)
	}
	err = c.readBody()
	out.BytesIn = c.cr.n - int64(c.br.Buffered()) - in0
	if err != nil {
		return c.failed(ctx, "read response body", err, out)
	}
	if !c.conclude(ex, &out, c.br.Buffered() > 0) {
		c.drop()
	}
	return out
}

// exchange is what a request's response is judged against: the request's
// spec (its flow step's Driver, or the driver's own), sequence number,
// data row and captured values, and the URL its cookies are filed under
// (nil with cookies off).
type exchange struct {
	d      *Driver
	seq    uint64
	row    []string
	vars   drivers.Vars
	jarURL *url.URL
}

// prepare renders request r into c.wbuf: the head (+ Content-Length and
// the jar's Cookie), then the body, which is filler instead when not nil
// (sent after w as is). ok is false, with out filled, when the request
// cannot be sent (its cookies go past the jar's bounds): nothing was
// written, the connection stays in sync.
func (c *conn) prepare(r drivers.Request, out *drivers.Outcome) (w, filler []byte, ex exchange, ok bool) {
	// The whole request: head (+ Content-Length) + body, as the
	// request's flow step says (the driver's own request without flows).
	seq := r.Seq
	d := c.d.spec(r)
	c.spec = d
	ex = exchange{d: d, seq: seq, vars: r.Vars}
	if d.data != nil {
		ex.row = d.data.Row(seq, r.Slot)
	}
	w = d.head.render(c.wbuf[:0], seq, ex.row, r.Vars)
	if c.jar != nil {
		ex.jarURL = c.requestURL(d, seq, ex.row, r.Vars)
		var err error
		if w, err = c.jar.appendHeader(w, ex.jarURL); err != nil {
			c.wbuf = w
			out.Class, out.Code, out.Err = drivers.ClientError, drivers.CodeCookieLimit, err
			return nil, nil, ex, false
		}
	}
	bodyLen := len(d.filler)
	if d.filler == nil {
		bodyLen = d.body.size(seq, ex.row, r.Vars)
	}
	if d.sendLen {
		w = append(w, "Content-Length: "...)
		w = strconv.AppendInt(w, int64(bodyLen), 10)
		w = append(w, '\r', '\n')
	}
	w = append(w, '\r', '\n')
	if d.filler == nil {
		w = d.body.render(w, seq, ex.row, r.Vars)
	}
	c.wbuf = w
	return w, d.filler, ex, true
}

// conclude judges the complete response in c.resp (and c.body) into out
// and reports whether the connection may carry the next request; past
// says bytes came after the response. The exchange is complete: the
// connection is in sync, and the response's cookies count whatever the
// status and the rule say.
func (c *conn) conclude(ex exchange, out *drivers.Outcome, past bool) (keep bool) {
	out.Responded = true
	out.Class, out.Code, out.Err = c.judge()
	if out.Class == drivers.OK && len(ex.d.captures) > 0 {
		out.Class, out.Code, out.Err = c.capture(ex.d, ex.seq, ex.row, ex.vars)
	}
	if c.jar != nil && len(c.resp.cookies) > 0 {
		// A jar that overflowed outweighs the response's own outcome:
		// the virtual user now lacks cookies the target set, and the
		// requests after it would be blamed on the target.
		if err := c.jar.store(ex.jarURL, c.resp.cookies, time.Now()); err != nil {
			out.Class, out.Code, out.Err = drivers.ClientError, drivers.CodeCookieLimit, fmt.Errorf("status %d: %w", c.resp.status, err)
		}
	}
	// Keep the connection only if both sides want it and nothing came
	// past the response (bytes past it mean we lost the framing).
	return ex.d.keepAlive && !c.resp.close && c.resp.status != nethttp.StatusSwitchingProtocols && !past
}

// write writes head and then body (nil: none) on nc, and returns how
// many bytes it wrote. A write the socket's earlier deadline cut short
// goes on with the request's own (resume); under TLS the socket resumes
// it itself.
func (c *conn) write(nc net.Conn, head, body []byte) (int64, error) {
	if body == nil {
		n, err := nc.Write(head)
		if err != nil && c.cr.resume != nil && c.resume(err) {
			var m int
			m, err = nc.Write(head[n:])
			n += m
		}
		return int64(n), err
	}
	c.vec[0], c.vec[1] = head, body
	defer func() { c.vec[0], c.vec[1] = nil, nil }()
	bufs := net.Buffers(c.vec[:])
	n, err := bufs.WriteTo(nc) // consumes what it wrote from bufs
	if err != nil && c.cr.resume != nil && c.resume(err) {
		var m int64
		m, err = bufs.WriteTo(nc)
		n += m
	}
	return n, err
}

// arm makes sure no read or write of the request outlives deadline, its
// deadline, now being its start. Setting the socket's deadline for every
// request cost 6 % of a closed-model request's user CPU (a runtime timer
// moved, two clock readings; issue 18), so a socket whose deadline is
// still well ahead keeps it: at most deadline, and at least half the
// request's time from now, so that the look at the idle connection and
// the write of a request that is not slow never reach it. An I/O it cuts
// short is resumed with the request's own deadline (resume), once. A
// connection whose I/O cannot be resumed (lazy false) gets every
// request's deadline.
func (c *conn) arm(deadline, now time.Time) error {
	c.due = deadline
	if c.lazy && !c.armed.IsZero() && !c.armed.After(deadline) && c.armed.Sub(now) >= deadline.Sub(now)/2 {
		return nil
	}
	if err := c.nc.SetDeadline(deadline); err != nil {
		c.armed = time.Time{}
		return err
	}
	c.armed = deadline
	return nil
}

// resume reports whether an I/O of the request that failed with err can
// be tried again, after setting the request's own deadline on the
// socket: the socket's earlier deadline (arm) cut it short, not the
// request's deadline, a cancellation (whose past deadline stands) or a
// Close. It is called by Do's goroutine only, from inside its I/O.
func (c *conn) resume(err error) bool {
	if !c.armed.Before(c.due) || !errors.Is(err, os.ErrDeadlineExceeded) {
		return false
	}
	if c.watched != nil && c.watched.Err() != nil {
		return false
	}
	if c.nc.SetDeadline(c.due) != nil {
		return false
	}
	c.armed = c.due
	// A cancellation between the look at ctx and the deadline just set
	// had its past deadline overwritten: look again (as Do does).
	return c.watched == nil || c.watched.Err() == nil
}

// readResponse reads the head of the final response into c.resp,
// skipping 1xx interim responses (100 Continue, 103 Early Hints), which
// have no body.
func (c *conn) readResponse() error {
	var want keep
	if c.spec.rule != nil && c.spec.rule.needHeaders || c.spec.captureHeaders {
		want |= keepHeaders
	}
	if c.jar != nil {
		want |= keepCookies
	}
	for {
		if err := readResponseHead(c.br, &c.resp, want); err != nil {
			return err
		}
		if s := c.resp.status; s >= 100 && s < 200 && s != nethttp.StatusSwitchingProtocols {
			continue
		}
		return nil
	}
}

// requestURL is the URL the cookie jar files request seq under: the
// target's scheme and host, and the request target rendered for seq and
// row (its query included; a target that is not a URL path, as "*",
// counts as "/").
func (c *conn) requestURL(d *Driver, seq uint64, row []string, vars drivers.Vars) *url.URL {
	c.tbuf = d.target.render(c.tbuf[:0], seq, row, vars)
	u, err := url.ParseRequestURI(string(c.tbuf))
	if err != nil {
		u = &url.URL{Path: "/"}
	}
	u.Scheme, u.Host = c.d.scheme, c.d.jarHost
	return u
}

// readBody reads the body to its end (HEAD, 1xx, 204 and 304 have none,
// RFC 9112 §6.3). It keeps up to MaxRuleBody bytes only when the rule
// reads body.
func (c *conn) readBody() error {
	var keep *bytes.Buffer
	if c.spec.rule != nil && c.spec.rule.needBody || c.spec.captureBody {
		c.body.Reset()
		keep = &c.body
	}
	return readBody(c.br, &c.resp, c.spec.method == nethttp.MethodHead, keep)
}

// judge classes a complete response: the success rule if there is one,
// else defaultSuccess. Failures carry the status as their code.
func (c *conn) judge() (drivers.Class, string, error) {
	status := c.resp.status
	r := c.spec.rule
	if r == nil {
		if defaultSuccess(status) {
			return drivers.OK, "", nil
		}
		return drivers.Status, strconv.Itoa(status), fmt.Errorf("status %d", status)
	}
	env := &c.env
	*env = ruleEnv{Status: status}
	if r.needHeaders {
		env.Headers = c.resp.headers
	}
	if r.needBody {
		if c.resp.bodyLen > int64(c.body.Len()) {
			// What the rule would say of the whole body is not known
			// (a `not contains` may pass on the part kept), as with a
			// capture: the response cannot be judged ok.
			return drivers.RuleFailed, strconv.Itoa(status), fmt.Errorf("status %d: success rule `%s` not evaluated: the body of %d bytes was cut at %d bytes (1 MiB), the most the client keeps", status, r.src, c.resp.bodyLen, c.body.Len())
		}
		env.Body = c.body.String()
	}
	ok, err := r.eval(&c.vm, env)
	if err != nil {
		return drivers.RuleFailed, strconv.Itoa(status), err
	}
	if !ok {
		return drivers.RuleFailed, strconv.Itoa(status), fmt.Errorf("status %d: success rule `%s` is false", status, r.src)
	}
	return drivers.OK, "", nil
}

// capture takes the values a flow step captures from its complete, ok
// response into vars. A capture that does not match fails the step: class
// capture, code drivers.CaptureCode of its name (docs/design.md,
// "Flows"). So does a json or regex capture of a body longer than the
// MaxRuleBody bytes kept: what it would find in the whole body is not
// known (a cut JSON document does not parse; a regex may match
// differently, or only, past the cut), so it is not evaluated.
//
// A templated expression is rendered for seq, the data row row and vars
// first; a regex that does not compile as rendered fails the capture too.
func (c *conn) capture(d *Driver, seq uint64, row []string, vars drivers.Vars) (drivers.Class, string, error) {
	body := c.body.Bytes()
	for _, nc := range d.captures {
		if nc.c.NeedsBody() && c.resp.bodyLen > int64(len(body)) {
			return drivers.Capture, nc.code, fmt.Errorf("status %d: capture %s (%s) not evaluated: the body of %d bytes was cut at %d bytes (1 MiB), the most the client keeps", c.resp.status, nc.name, nc.c, c.resp.bodyLen, len(body))
		}
		cp := nc.c
		if nc.expr != nil {
			var err error
			if cp, err = c.rendered(nc, seq, row, vars); err != nil {
				// The scenario's expression, not the target: the client's.
				return drivers.ClientError, nc.code, fmt.Errorf("status %d: capture %s not evaluated: %w", c.resp.status, nc.name, err)
			}
		}
		v, ok := cp.Extract(c.resp.headers, body)
		if !ok {
			return drivers.Capture, nc.code, fmt.Errorf("status %d: capture %s (%s) found nothing in the response", c.resp.status, nc.name, cp)
		}
		// A captured value goes into later requests as it is: a line
		// break in it would add headers or a whole request of the
		// target's making (request smuggling), and a huge one would
		// grow every request after it. Such a value fails the capture.
		if len(v) > MaxCaptured {
			return drivers.Capture, nc.code, fmt.Errorf("status %d: capture %s is %d bytes, more than the %d a captured value may hold", c.resp.status, nc.name, len(v), MaxCaptured)
		}
		if i := strings.IndexFunc(v, func(r rune) bool { return r < 0x20 && r != '\t' || r == 0x7f }); i >= 0 {
			return drivers.Capture, nc.code, fmt.Errorf("status %d: capture %s holds control character %q at byte %d: it would break the requests it goes into", c.resp.status, nc.name, v[i], i)
		}
		if nc.inPath {
			if err := checkPath(v); err != nil {
				return drivers.Capture, nc.code, fmt.Errorf("status %d: capture %s goes into a path, and %w: it would reshape the request line", c.resp.status, nc.name, err)
			}
		}
		if vars != nil {
			vars[nc.name] = v
		}
	}
	return drivers.OK, "", nil
}

// maxExprs bounds a conn's cache of rendered capture expressions.
const maxExprs = 64

// rendered is the capture nc evaluates for seq, row and vars: its
// expression rendered, values escaped, and compiled (cached).
func (c *conn) rendered(nc namedCapture, seq uint64, row []string, vars drivers.Vars) (*capture.Capture, error) {
	c.xbuf = append(c.xbuf[:0], nc.c.String()[0]) // j(son) or r(egex)
	c.xbuf = nc.expr.render(c.xbuf, seq, row, vars)
	if cp, ok := c.exprs[string(c.xbuf)]; ok {
		return cp, nil
	}
	cp, err := nc.c.With(string(c.xbuf[1:]))
	if err != nil {
		return nil, err
	}
	if c.exprs == nil || len(c.exprs) >= maxExprs {
		c.exprs = make(map[string]*capture.Capture, maxExprs)
	}
	c.exprs[string(c.xbuf)] = cp
	return cp, nil
}

// defaultSuccess is the success rule when the scenario sets none: any 2xx,
// and 304 Not Modified, which answers a conditional request the scenario
// chose to send and says the client's copy is current (RFC 9110 §15.4.5).
func defaultSuccess(status int) bool {
	return status >= 200 && status <= 299 || status == nethttp.StatusNotModified
}

// failed ends a request that broke after the connection was up: the
// connection is closed (it may be out of sync) and the error classed.
func (c *conn) failed(ctx context.Context, stage string, err error, out drivers.Outcome) drivers.Outcome {
	c.drop()
	out.Err = fmt.Errorf("%s: %w", stage, err)
	switch {
	case ctx.Err() != nil:
		// Our own cancellation callback or deadline cut the I/O short.
		out.Class = drivers.CtxClass(ctx)
		if out.Class == drivers.Cancelled {
			out.Err = fmt.Errorf("%s: %w", stage, context.Cause(ctx))
		}
		return out
	case c.isClosed():
		out.Class = drivers.Cancelled
		return out
	}
	out.Class, out.Code = drivers.Classify(err)
	switch {
	case errors.Is(err, errHeaderTooLarge):
		out.Class, out.Code = drivers.BadFrame, ""
	case errors.Is(err, io.ErrUnexpectedEOF):
		// Some bytes of the response came, then the connection ended:
		// truncated headers or a body shorter than declared.
		out.Class, out.Code = drivers.ShortRead, ""
	case out.Class == drivers.Reset && out.Code == "" && !isNetError(err):
		// Not a transport error: the response is malformed, or it was cut
		// mid-line and the parser saw the stump (then it is short).
		out.Class = drivers.BadFrame
		if c.cr.eof {
			out.Class = drivers.ShortRead
		}
	}
	return out
}

// begin starts a Do: its start, and its deadline, the earlier of
// r.Deadline and ctx's, or start plus timeout when neither has one. ended
// is true, with out filled, when ctx had already ended.
func begin(ctx context.Context, r drivers.Request, timeout time.Duration, out *drivers.Outcome) (start, deadline time.Time, ended bool) {
	start = monoNow()
	if err := ctx.Err(); err != nil {
		out.Class, out.Err = drivers.CtxClass(ctx), fmt.Errorf("before send: %w", context.Cause(ctx))
		return start, deadline, true
	}
	deadline = r.Deadline
	if d, ok := ctx.Deadline(); ok && (deadline.IsZero() || d.Before(deadline)) {
		deadline = d
	}
	if deadline.IsZero() {
		deadline = start.Add(timeout)
	}
	return start, deadline, false
}

// epoch is the instant monoNow counts from.
var epoch = time.Now()

// monoNow is the current instant for a Do's own stamps (its start, a
// response's first byte), which are only subtracted from one another,
// compared, or made deadlines: one reading of the monotonic clock where
// time.Now takes two, the wall clock's too (each time.Now cost 1 to 2 %
// of a closed-model request's user CPU, issue 18). Its wall-clock
// reading is epoch's plus the monotonic time since, which a wall-clock
// change does not follow: it is not for dates (a cookie's expiry).
func monoNow() time.Time { return epoch.Add(time.Since(epoch)) }

// dialFailed ends a request whose re-dial failed: class Connect with the
// code of drivers.Classify, or Cancelled.
func (c *conn) dialFailed(ctx context.Context, err error, out drivers.Outcome) drivers.Outcome {
	return dialOutcome(ctx, err, c.isClosed(), out)
}

// dialOutcome is the outcome of a request whose dial failed with err:
// Cancelled when ctx was cancelled or the Conn closed, else class Connect
// with the code of drivers.Classify (ETIMEDOUT for a timeout, EOF for a
// connection ended during the handshake).
func dialOutcome(ctx context.Context, err error, closed bool, out drivers.Outcome) drivers.Outcome {
	out.Err = fmt.Errorf("connect: %w", err)
	if errors.Is(ctx.Err(), context.Canceled) || closed {
		out.Class = drivers.Cancelled
		return out
	}
	class, code := drivers.Classify(err)
	switch class {
	case drivers.Cancelled:
		out.Class = drivers.Cancelled
		return out
	case drivers.Timeout:
		if code == "" {
			code = drivers.CodeConnectTimeout
		}
	case drivers.EOF:
		code = "EOF"
	}
	out.Class, out.Code = drivers.Connect, code
	return out
}

// watch makes ctx's cancellation interrupt this connection's I/O. The
// registration is kept across requests with the same ctx; another ctx
// replaces it. A ctx that cannot be cancelled needs none.
func (c *conn) watch(ctx context.Context) {
	if ctx == c.watched {
		return
	}
	c.unwatch()
	c.watched = ctx
	// The previous context's cancellation may have left a past deadline
	// on the socket: the next request sets its own (arm).
	c.armed = time.Time{}
	if ctx.Done() == nil {
		return
	}
	c.mu.Lock()
	gen := c.watchGen
	c.mu.Unlock()
	c.stopWatch = context.AfterFunc(ctx, func() { c.interrupt(gen) })
}

// unwatch retires the current cancellation callback, if any.
func (c *conn) unwatch() {
	if c.stopWatch != nil {
		c.stopWatch()
		c.stopWatch = nil
	}
	c.watched = nil
	c.mu.Lock()
	c.watchGen++
	c.mu.Unlock()
}

// interrupt is the cancellation callback of registration gen: it
// unblocks the socket, unless the registration was retired meanwhile.
// Between requests it is harmless: the next Do sets its own deadline
// after it has seen ctx still live.
func (c *conn) interrupt(gen uint64) {
	c.mu.Lock()
	if c.watchGen == gen && c.nc != nil {
		c.nc.SetDeadline(past)
	}
	c.mu.Unlock()
}

func (c *conn) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// isNetError reports whether err came from the socket rather than from
// parsing.
func isNetError(err error) bool {
	var ne net.Error
	return errors.As(err, &ne)
}

// errHeaderTooLarge ends a response whose header block is larger than
// MaxHeaderBytes.
var errHeaderTooLarge = fmt.Errorf("response header block exceeds the limit of %d bytes (1 MiB)", MaxHeaderBytes)

// countingReader counts the bytes read from the socket, notes when the
// first byte of the current response arrived and whether the peer ended
// the stream. While limit is set it reads no byte past the limit-th:
// there it returns errHeaderTooLarge.
type countingReader struct {
	r     io.Reader
	n     int64
	limit int64 // 0: none
	first time.Time
	eof   bool
	// resume, when not nil, says whether a read that failed with its
	// error can be tried again (conn.resume).
	resume func(error) bool
}

// Read implements io.Reader.
func (cr *countingReader) Read(p []byte) (int, error) {
	if cr.limit > 0 {
		rest := cr.limit - cr.n
		if rest <= 0 {
			return 0, errHeaderTooLarge
		}
		if int64(len(p)) > rest {
			p = p[:rest]
		}
	}
	n, err := cr.r.Read(p)
	if n == 0 && err != nil && cr.resume != nil && cr.resume(err) {
		n, err = cr.r.Read(p)
	}
	if n > 0 {
		if cr.first.IsZero() {
			cr.first = monoNow()
		}
		cr.n += int64(n)
	}
	if err == io.EOF {
		cr.eof = true
	}
	return n, err
}

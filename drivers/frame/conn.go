package frame

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runner-dev/runner/drivers"
	"github.com/runner-dev/runner/drivers/internal/correlate"
	"github.com/runner-dev/runner/drivers/internal/relink"
)

// link is one TCP connection of a conn; when it ends (the server closed
// it, or sent a bad frame) the next Do opens another.
type link struct {
	nc net.Conn
	// wsem admits one writer at a time, so a frame goes out whole; a
	// wait for it ends with the request's deadline.
	wsem relink.Gate
	// gone is closed when the reader ends; end is then how it ended.
	gone chan struct{}
	end  drivers.Outcome
	ours atomic.Bool // we closed it: not counted as a server-side end
	// failed, when set, is how the link ended, known before its reader
	// saw it (a write that failed): its end instead of the reader's.
	failed atomic.Pointer[drivers.Outcome]
	// blamed is set once one request has carried a bad frame's code (or
	// a cut frame's short-read): the others in flight on the link end as
	// link-closed.
	blamed atomic.Bool
	// cutID is the id of the reply the link ended in the middle of, when
	// its header came whole (cutKnown); the reader sets both before it
	// closes gone.
	cutID    uint64
	cutKnown bool
	// watch cuts a write under way when its request is cancelled (the
	// writer's, under wsem).
	watch relink.Watch
	// midSince is when the reader's frame under way began (its first
	// byte; 0 between frames), and lastByte when the link last received
	// bytes, both as clock() values: a request that times out while a
	// frame stands still in its middle closes the link (stalled).
	midSince, lastByte atomic.Int64
}

// epoch is clock()'s origin.
var epoch = time.Now()

// clock is monotonic nanoseconds since epoch: a time an atomic holds.
func clock() int64 { return int64(time.Since(epoch)) }

// progress is a link's socket as its reader reads it: each read that
// returns bytes records when in lastByte.
type progress struct {
	net.Conn
	last *atomic.Int64
}

func (p progress) Read(b []byte) (int, error) {
	n, err := p.Conn.Read(b)
	if n > 0 {
		p.last.Store(clock())
	}
	return n, err
}

// reply is a received frame handed to the request it answers.
type reply struct {
	n  int64 // header and payload bytes
	at time.Time
	// code and err, when code is set, say that the reply's status is not
	// a success value: its request ends as a Status error with them.
	code string
	err  error
}

// conn is one drivers.Conn: a link, re-opened when it ends, and the table
// of frames in flight on it.
type conn struct {
	d     *Driver
	table correlate.Table[uint64, reply]
	slot  relink.Slot[link]
}

var errReleased = relink.ErrReleased

// open dials a link and starts its reader; the caller installs it.
func (c *conn) open(ctx context.Context) (*link, error) {
	nc, err := c.d.dialer.DialContext(ctx, "tcp", c.d.addr)
	if err != nil {
		return nil, err
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetNoDelay(true) // a frame leaves at once (Go's default; said here)
	}
	l := &link{nc: nc, gone: make(chan struct{}), wsem: relink.NewGate()}
	l.watch.OnCancel = func() { nc.SetWriteDeadline(time.Now()) } // unblock the write
	go c.read(l)
	return l, nil
}

// Alive implements drivers.Prober: an error when the link ended (its
// reader saw the end) or its socket says the server closed or reset it
// (relink.Peek, which a reader blocked in Read does not hinder). Data
// waiting counts as alive: the reader books it as it comes. It never
// blocks.
func (c *conn) Alive() error {
	return c.slot.Alive(func(l *link) error {
		if err := relink.Ended(l.gone, &l.end); err != nil {
			return err
		}
		return relink.Peek(l.nc)
	})
}

// discard closes a link opened for a connection released meanwhile.
func (c *conn) discard(l *link) {
	l.ours.Store(true)
	l.nc.Close()
}

// Do sends one frame and waits for its reply (see drivers.Conn).
// Outcomes: OK; Timeout when ctx's deadline passes first (a reply after it
// counts as late), with code write-stalled when the frame could not even
// be written in time (the target does not read); Cancelled when ctx is
// cancelled or the connection released; when the link ends first, the
// link's end: BadFrame with the bad frame's code (bad-magic, too-long, …)
// for one request and link-closed for the others then in flight;
// ShortRead for the request whose reply was cut short (the one its header
// named, or any one when the header itself was cut) and EOF link-closed
// for the others then in flight; EOF (a close between frames) or Reset for
// every request in flight; Connect when re-opening the link failed; Reset when
// the write failed; ClientError id-in-use when the id (seq cut to the id
// field) is still in flight on the connection (nothing is sent).
//
// A frame is a request once it is on the wire: when the link turns out to
// have ended as the frame is written (nothing of it sent), it is sent once
// on a new link.
//
// A request that times out while the link's reader is stuck in the
// middle of a frame closes the link (stalled), so the next one re-dials.
//
// r.Deadline, when set, is kept like ctx's deadline (drivers.DeadlineKeeper).
func (c *conn) Do(ctx context.Context, r drivers.Request) drivers.Outcome {
	var out drivers.Outcome
	start := time.Now()
	dl := relink.StartDeadline(ctx, r.Deadline)
	defer dl.Stop()
	id := r.Seq & c.d.layout.IDMask()
	bp, err := c.render(r.Seq, r.Slot, id)
	defer release(bp)
	if err != nil {
		out.Class, out.Code, out.Err = drivers.ClientError, drivers.CodeRequestTooLong, err
		return out
	}
	buf := *bp
	var l *link
	var ch chan reply
	for attempt := 0; ; attempt++ {
		var err error
		if l, err = c.ensure(ctx, dl, &out); err != nil {
			return out
		}
		if ch = c.table.Add(id); ch == nil {
			out.Class, out.Code = drivers.ClientError, drivers.CodeIDInUse
			out.Err = fmt.Errorf("request id %d (seq %d) is still in flight on this connection: %s", id, r.Seq, drivers.LikelyCause(drivers.CodeIDInUse))
			return out
		}
		n, err := c.write(ctx, dl, l, buf)
		if err == nil {
			break
		}
		c.table.Forget(id, ch, false) // never sent: no reply can come
		c.table.Release(ch)
		switch {
		case errors.Is(ctx.Err(), context.Canceled):
			if n > 0 {
				c.drop(l) // half a frame on the wire: the link is unusable
			}
			out.Class, out.Err = drivers.Cancelled, fmt.Errorf("send: %w", context.Cause(ctx))
			return out
		case n == 0 && errors.Is(err, context.DeadlineExceeded):
			// Its time ran out waiting for the connection's writer.
			out.Class, out.Code = drivers.Timeout, "write-stalled"
			out.Err = errors.New("send: the frame could not be written before its timeout: the target does not read")
			return out
		case c.ending(l):
			if n == 0 && attempt == 0 && ctx.Err() == nil && !dl.Passed() {
				continue // the link had ended: nothing was sent; send on a new one
			}
			return c.endOf(l, id, out)
		}
		// The write itself failed: the target reset the connection, or
		// stopped reading for the whole timeout.
		out.Class, out.Code = drivers.Classify(err)
		ours := false
		if out.Class == drivers.Timeout {
			out.Class, out.Code, ours = drivers.Reset, "write-stalled", true
		}
		out.Err = fmt.Errorf("send: %w", err)
		c.fail(l, out, ours)
		return out
	}
	out.BytesOut = int64(len(buf))
	// Every way out returns ch to the table (Release) once nothing can
	// be delivered to it any more.
	defer c.table.Release(ch)
	select {
	case rep := <-ch:
		return judge(rep, start, out)
	case <-ctx.Done():
		select {
		case rep := <-ch:
			return judge(rep, start, out)
		default:
		}
		out.Class, out.Err = drivers.CtxClass(ctx), fmt.Errorf("waiting for the reply: %w", context.Cause(ctx))
		return c.stalled(l, c.gaveUp(id, ch, out))
	case <-dl.C():
		select {
		case rep := <-ch:
			return judge(rep, start, out)
		default:
		}
		out.Class, out.Err = drivers.Timeout, errWaitDeadline
		return c.stalled(l, c.gaveUp(id, ch, out))
	case <-l.gone:
		select {
		case rep := <-ch:
			return judge(rep, start, out)
		default:
		}
		if !c.table.Forget(id, ch, false) {
			return judge(<-ch, start, out) // delivered just before the link's end
		}
		return c.endOf(l, id, out)
	}
}

// errWaitDeadline is the error of a request whose own deadline
// (Request.Deadline) passed while it waited for its reply.
var errWaitDeadline = fmt.Errorf("waiting for the reply: %w", context.DeadlineExceeded)

// gaveUp forgets a request that was sent and then timed out or was
// cancelled (out says which), remembering its id so that its reply
// counts as late.
func (c *conn) gaveUp(id uint64, ch chan reply, out drivers.Outcome) drivers.Outcome {
	if !c.table.Forget(id, ch, true) {
		c.d.counts.Count(correlate.Late) // the reply came between the two looks: after the deadline
	}
	return out
}

// stalled closes l when a request timed out (out) while l's reader is
// in the middle of a frame that has stood still (no byte) for
// stallQuiet(timeout): the rest may never come, and every reply behind
// it waits for it, so every later request on the link would wait out
// its own timeout; its framing is unknown. The link is closed on our
// side, the requests then in flight on it end as eof link-closed, and
// the next request re-dials (Outcome.Dialed, the phase's reconnects). A
// reply still arriving (a large payload at the deadline) keeps the link.
// It returns out, its error saying so when it closed.
func (c *conn) stalled(l *link, out drivers.Outcome) drivers.Outcome {
	if out.Class != drivers.Timeout {
		return out
	}
	since, now := l.midSince.Load(), clock()
	quiet := time.Duration(now - l.lastByte.Load())
	if since == 0 || quiet < stallQuiet(c.d.timeout) {
		return out
	}
	out.Err = fmt.Errorf("%w; a reply stood still in the middle of its frame for %s, so the client closed the connection (its framing is lost) and re-dials", out.Err, quiet.Round(time.Millisecond))
	c.fail(l, drivers.Outcome{Class: drivers.EOF, Code: codeLinkClosed,
		Err: errors.New("the client closed the connection: a reply stood still in the middle of its frame past a request's timeout")}, true)
	return out
}

// stallQuiet is how long a frame under way must have received nothing
// for a timed-out request to close its link: a quarter of the timeout,
// at most 250 ms (a reply that stops for that long in the middle of a
// frame is stuck, not slow: its bytes were sent together).
func stallQuiet(timeout time.Duration) time.Duration {
	return min(timeout/4, 250*time.Millisecond)
}

// write sends buf on l, whole, one frame at a time per link. It gives
// up without writing when ctx or dl ends while it waits for the link's
// writer (returning context.Canceled, or context.DeadlineExceeded at the
// request's deadline); the write itself is bounded by the request's
// deadline (or the timeout from now, whichever comes first: a frame
// that got the writer late does not get a fresh timeout), and cut at
// once when ctx is cancelled (Ctrl-C): l.watch sets a past write
// deadline then (a write that returns within relink.WatchGrace, as one
// with room in the socket's buffer does, is watched without allocating).
func (c *conn) write(ctx context.Context, dl relink.Deadline, l *link, buf []byte) (int, error) {
	if err := l.wsem.Enter(ctx, dl); err != nil {
		return 0, err
	}
	defer l.wsem.Leave()
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if dl.Passed() {
		return 0, context.DeadlineExceeded
	}
	wd := time.Now().Add(c.d.timeout)
	if at := dl.At(); !at.IsZero() && at.Before(wd) {
		wd = at
	}
	if d, ok := ctx.Deadline(); ok && d.Before(wd) {
		wd = d
	}
	// The deadline is set before the watch begins: a cancellation then
	// overrides it, never the other way round.
	l.nc.SetWriteDeadline(wd)
	l.watch.Begin(ctx)
	n, err := l.nc.Write(buf)
	l.watch.End()
	return n, err
}

// ending reports whether l has ended or ends within a moment (its reader
// records how): a write that failed because the link was already going,
// not a failed write.
func (c *conn) ending(l *link) bool {
	select {
	case <-l.gone:
		return true
	case <-time.After(100 * time.Millisecond):
		return false
	}
}

// fail ends l with out as its end (for the requests in flight on it) and
// closes it. ours: we ended it (our write deadline), so it is not the
// target's close.
func (c *conn) fail(l *link, out drivers.Outcome, ours bool) {
	o := out
	o.Err = fmt.Errorf("the connection failed under another request: %w", out.Err)
	l.failed.CompareAndSwap(nil, &o)
	if ours {
		l.ours.Store(true)
	}
	c.slot.Clear(l)
	l.nc.Close()
}

// frameBufs recycles request frames: a frame is rendered into a pooled
// buffer and written in one call, so a request allocates no frame.
var frameBufs = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// render builds the whole request frame, header and payload, in a pooled
// buffer; put it back with release once written (also after an error).
// slot is the request's connection slot (data_order: connection). With
// layout.parts each part is rendered in turn and its length recorded for
// its length_of field; column fields take the request's data row. Error:
// a part longer than its length field holds, a payload longer than
// max_payload.
func (c *conn) render(seq uint64, slot int, id uint64) (*[]byte, error) {
	d := c.d
	bp := frameBufs.Get().(*[]byte)
	h := d.layout.HeaderLen()
	b := append((*bp)[:0], make([]byte, h)...)
	rq := Request{ID: id}
	var err error
	switch {
	case d.parts != nil:
		for j, t := range d.parts {
			start := len(b)
			b = t.Render(b, seq, slot)
			rq.Parts[j] = len(b) - start
			if uint64(rq.Parts[j]) > d.layout.PartMax(j) && err == nil {
				names, _ := d.layout.Parts()
				err = fmt.Errorf("part %s of request %d is %d bytes; its length field %s holds at most %d", names[j], seq, rq.Parts[j], d.layout.PartField(j), d.layout.PartMax(j))
			}
		}
	case d.payload != nil:
		b = d.payload.Render(b, seq, slot)
	default:
		b = append(b, d.fixed...)
	}
	if len(d.cols) > 0 {
		row := d.data.Row(seq, slot)
		for k, col := range d.cols {
			rq.Columns[k], _ = parseNumber(row[col]) // every row checked by New
		}
	}
	rq.Length = len(b) - h
	if int64(rq.Length) > d.layout.MaxPayload() && err == nil {
		err = fmt.Errorf("the payload of request %d is %d bytes; the layout allows at most %d (max_payload)", seq, rq.Length, d.layout.MaxPayload())
	}
	d.layout.PutRequest(b[:h], &rq)
	*bp = b
	return bp, err
}

// release returns a rendered frame's buffer to the pool, unless it grew
// past 1 MiB (a huge payload is not kept).
func release(bp *[]byte) {
	if cap(*bp) <= 1<<20 {
		frameBufs.Put(bp)
	}
}

func judge(rep reply, start time.Time, out drivers.Outcome) drivers.Outcome {
	out.Class, out.Responded = drivers.OK, true
	if rep.code != "" {
		out.Class, out.Code, out.Err = drivers.Status, rep.code, rep.err
	}
	out.BytesIn = rep.n
	out.FirstByte = rep.at.Sub(start)
	return out
}

// ensure returns the open link, re-opening it (once, for every Do that
// finds it closed) when it ended, bounded by ctx and dl. A re-dial that
// failed opened nothing: Connect (ETIMEDOUT when it timed out), or
// Cancelled.
func (c *conn) ensure(ctx context.Context, dl relink.Deadline, out *drivers.Outcome) (*link, error) {
	return c.slot.Ensure(ctx, dl, c.open, c.discard, out)
}

// drop closes a link on our side.
func (c *conn) drop(l *link) {
	l.ours.Store(true)
	c.slot.Clear(l)
	l.nc.Close()
}

// endOf is the outcome of request id, whose link ended before its reply.
// A bad frame or a cut frame was one request's reply: that request
// carries its code, and the others then in flight lost theirs because
// the connection ended under them (link-closed; bad-frame after a bad
// frame, eof after a cut). A close between frames or a reset is every
// request's.
func (c *conn) endOf(l *link, id uint64, out drivers.Outcome) drivers.Outcome {
	<-l.gone
	if c.slot.Released() {
		out.Class, out.Err = drivers.Cancelled, errReleased
		return out
	}
	e := l.end
	out.Class, out.Code, out.Err = e.Class, e.Code, e.Err
	switch e.Class {
	case drivers.BadFrame:
		if !l.blamed.CompareAndSwap(false, true) {
			out.Code = codeLinkClosed
			out.Err = fmt.Errorf("the connection was closed after a bad frame from the target (%s)", e.Err)
		}
	case drivers.ShortRead:
		mine := l.cutKnown && id == l.cutID
		if !l.cutKnown {
			mine = l.blamed.CompareAndSwap(false, true)
		}
		if !mine {
			out.Class, out.Code = drivers.EOF, codeLinkClosed
			out.Err = fmt.Errorf("the target closed the connection in the middle of another request's reply (%s)", e.Err)
		}
	}
	return out
}

// codeLinkClosed is the code of a request that lost its reply because
// its connection ended in the middle of another request's reply.
const codeLinkClosed = "link-closed"

// read is a link's reader: frame by frame, it checks the header before
// reading anything else, pairs the reply with its request and skips its
// payload (never buffering more than the read buffer); the first bad
// frame or read error ends the link.
func (c *conn) read(l *link) {
	d := c.d
	br := bufio.NewReaderSize(progress{l.nc, &l.lastByte}, readBuffer)
	hdr := make([]byte, d.layout.HeaderLen())
	for {
		if _, err := br.Peek(1); err != nil {
			c.ended(l, readEnd(err, "header"))
			return
		}
		at := time.Now() // the reply's first byte
		l.midSince.Store(clock())
		if _, err := io.ReadFull(br, hdr); err != nil {
			c.ended(l, readEnd(err, "header"))
			return
		}
		h, err := d.layout.Parse(hdr)
		if err != nil {
			var bf *BadFrame
			errors.As(err, &bf)
			c.ended(l, drivers.Outcome{Class: drivers.BadFrame, Code: bf.Code, Err: fmt.Errorf("bad frame from the target: %s", bf.Msg)})
			return
		}
		rep := reply{n: int64(len(hdr)) + h.Length, at: at}
		if h.Failed {
			var msg string
			msg, err = c.failure(br, &h)
			rep.code, rep.err = d.layout.StatusCode(h.Status), errors.New(msg)
		} else {
			err = skip(br, h.Length)
		}
		if err != nil {
			o := readEnd(err, "payload")
			if errors.Is(err, io.EOF) {
				// The header came whole: an end before the payload's last
				// byte is in the middle of a frame.
				o = drivers.Outcome{Class: drivers.ShortRead, Code: "short-read", Err: errors.New("the target closed the connection in the middle of a frame's payload")}
			}
			if o.Class == drivers.ShortRead {
				l.cutID, l.cutKnown = h.ID, true // the cut reply is h.ID's
			}
			c.ended(l, o)
			return
		}
		l.midSince.Store(0)
		if s, delivered := c.table.Deliver(h.ID, rep); !delivered {
			d.counts.Count(s)
		}
	}
}

// quoteMax bounds what a failed reply's error quotes of its payload.
const quoteMax = 64

// failure reads past the payload of a reply whose status failed (h),
// and returns its request's error message: the status, the success values, and
// up to quoteMax bytes of the payload's text (the part without a length
// field when the layout has parts: memcached's "Not found"), quoted. The
// payload's bytes beyond those are skipped, never buffered. A read error
// is returned as skip's.
func (c *conn) failure(br *bufio.Reader, h *Header) (string, error) {
	l := c.d.layout
	off, n := int64(0), h.Length
	if l.rest >= 0 {
		for j := range l.rest {
			off += h.Parts[j]
		}
		n = h.Parts[l.rest]
	}
	var quote [quoteMax]byte
	q := quote[:min(n, quoteMax)]
	if err := skip(br, off); err != nil {
		return "", err
	}
	if _, err := io.ReadFull(br, q); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			err = io.EOF // the header came whole: a cut payload, as skip says it
		}
		return "", err
	}
	if err := skip(br, h.Length-off-int64(len(q))); err != nil {
		return "", err
	}
	var ok []string
	for _, v := range l.success {
		ok = append(ok, fmt.Sprintf("0x%0*X", 2*l.fields[l.status].size, v))
	}
	msg := fmt.Sprintf("%s %s, not a success value (%s)", l.fields[l.status].name, strings.TrimPrefix(l.StatusCode(h.Status), "status-"), strings.Join(ok, ", "))
	if len(q) > 0 {
		more := ""
		if n > int64(len(q)) {
			more = "…"
		}
		msg += fmt.Sprintf(": %q%s", q, more)
	}
	return msg, nil
}

// skipBufs recycles the buffers skip reads large payloads into.
var skipBufs = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

// skip reads past n bytes of br: from its buffer when they are there,
// else through a pooled 64 KiB buffer, which bufio fills straight from
// the socket once its own buffer is empty (a 1 MiB payload takes 16
// reads, not 256 of the connection's 4 KiB). A stream that ends first
// gives io.EOF or io.ErrUnexpectedEOF.
func skip(br *bufio.Reader, n int64) error {
	if n <= int64(br.Buffered()) {
		_, err := br.Discard(int(n))
		return err
	}
	bp := skipBufs.Get().(*[]byte)
	defer skipBufs.Put(bp)
	buf := *bp
	for n > 0 {
		m, err := br.Read(buf[:min(n, int64(len(buf)))])
		n -= int64(m)
		if err != nil {
			if n > 0 && err == io.EOF {
				return io.EOF
			}
			return err
		}
	}
	return nil
}

// readEnd classifies a read error that ended a link while reading part.
func readEnd(err error, part string) drivers.Outcome {
	switch {
	case errors.Is(err, io.EOF):
		return drivers.Outcome{Class: drivers.EOF, Code: "eof", Err: errors.New("the target closed the connection")}
	case errors.Is(err, io.ErrUnexpectedEOF):
		return drivers.Outcome{Class: drivers.ShortRead, Code: "short-read", Err: fmt.Errorf("the target closed the connection in the middle of a frame's %s", part)}
	}
	class, code := drivers.Classify(err)
	if class == drivers.OK || class == drivers.Timeout {
		class = drivers.Reset
	}
	if code == "" {
		code = string(class)
	}
	return drivers.Outcome{Class: class, Code: code, Err: fmt.Errorf("reading a frame's %s: %w", part, err)}
}

// ended records how a link ended, counts it unless we ended it, and
// wakes the requests waiting on it.
func (c *conn) ended(l *link, end drivers.Outcome) {
	c.slot.Clear(l)
	l.nc.Close()
	failed := l.failed.Load()
	if failed != nil {
		end = *failed
	}
	switch {
	case c.slot.Released():
		end = drivers.Outcome{Class: drivers.Cancelled, Err: errReleased}
	case failed != nil:
		if !l.ours.Load() {
			c.d.counts.CountClose(end.Code)
		}
	case l.ours.Load():
		end = drivers.Outcome{Class: drivers.Cancelled, Err: errReleased}
	default:
		c.d.counts.CountClose(end.Code)
	}
	l.end = end
	close(l.gone)
}

// Close releases the connection; requests still waiting end as Cancelled.
func (c *conn) Close() error {
	if l := c.slot.Release(); l != nil {
		l.ours.Store(true)
		return l.nc.Close()
	}
	return nil
}

package websocket

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"
	"github.com/expr-lang/expr/vm"

	"github.com/runner-dev/runner/drivers"
	"github.com/runner-dev/runner/drivers/internal/correlate"
	"github.com/runner-dev/runner/drivers/internal/relink"
)

// link is one WebSocket connection of a conn; a server close ends it and
// the next Do opens another.
type link struct {
	ws *websocket.Conn
	// gone is closed when the reader ends; end is then how it ended.
	gone chan struct{}
	end  drivers.Outcome
	// ours is set when we closed it (release, or a FIFO timeout), so its
	// end is not counted as a server close.
	ours atomic.Bool
	// stalled is set when a write could not finish in time and the
	// library closed the connection: ours too.
	stalled atomic.Bool
	// failed, when set, is how the link ended, known before its reader
	// saw it (a write the network refused): the target dropped it.
	failed atomic.Pointer[drivers.Outcome]
	// wsem admits one writer at a time (a wait for
	// it can end with the request's context); watch bounds that write.
	wsem  relink.Gate
	watch relink.Watch
}

// reply is one received message handed to the request it answers.
type reply struct {
	v      any   // decoded JSON; nil when not decoded
	decErr error // why it did not decode, when it had to
	n      int   // its size in bytes
	at     time.Time
}

// conn is one drivers.Conn: a link, re-opened after a server close, and
// the table of messages in flight on it.
type conn struct {
	d *Driver
	// table holds the messages in flight by id with correlate. A message's
	// id is its sequence number (checkCorrelate): a reply pairs by the
	// number its id field's text spells in canonical decimal (idKey).
	table correlate.Table[uint64, reply]
	slot  relink.Slot[link]

	mu   sync.Mutex
	fifo []chan reply // no correlate: in flight in send order
}

// open dials a link and starts its reader; the caller installs it.
func (c *conn) open(ctx context.Context) (*link, error) {
	ws, err := c.d.dial(ctx)
	if err != nil {
		return nil, err
	}
	l := &link{ws: ws, gone: make(chan struct{}), wsem: relink.NewGate()}
	// Like the library on a write whose context ends: close the
	// connection (on a goroutine of its own: the watch's lock is held).
	l.watch.Timeout = c.d.timeout
	l.watch.OnStall = func() {
		l.stalled.Store(true) // the connection is closed on our side
		go ws.CloseNow()
	}
	l.watch.OnCancel = func() { go ws.CloseNow() }
	go c.read(l)
	return l, nil
}

// Alive implements drivers.Prober: an error when the link ended (its
// reader saw a close frame or the connection drop). The handshake proved
// a round-trip, so only an end after it is looked for; one that its
// reader has not read yet is missed. It never blocks.
func (c *conn) Alive() error {
	return c.slot.Alive(func(l *link) error { return relink.Ended(l.gone, &l.end) })
}

// discard closes a link opened for a connection released meanwhile.
func (c *conn) discard(l *link) {
	l.ours.Store(true)
	l.ws.CloseNow()
}

// errReleased is the error of a Do on a released connection.
var errReleased = relink.ErrReleased

// Do sends one message and waits for its reply (see drivers.Conn).
// Outcomes: OK; RuleFailed with the error_code's value as Code when the
// success rule fails (or the reply is not JSON when a rule needs it);
// Timeout when ctx's deadline passes first (the id is remembered, so a
// reply after it counts as late), with code write-stalled when the
// message could not even be written in time (the target stopped reading:
// the connection is closed on our side); Cancelled when ctx is cancelled
// or the connection released; EOF with code "close-NNNN" when the server
// closed the connection first (1006 when it dropped it without a close
// frame); BadFrame when a reply failed the connection (we close it):
// "too-big" when it exceeded max_message (refused from its frame header,
// 1009), "masked-frame" when the server masked a frame (1002),
// "invalid-utf8" when a text reply is not UTF-8 (1007); Connect when
// re-opening the link failed; Reset when a write failed otherwise.
//
// A message is a request once it is on the wire: when the link turns
// out to be closing as it is written (the server's close frame arrived
// first), the message was not sent, and it is sent once on a new link.
//
// r.Deadline, when set, is kept like ctx's deadline (drivers.DeadlineKeeper).
func (c *conn) Do(ctx context.Context, r drivers.Request) drivers.Outcome {
	var out drivers.Outcome
	start := time.Now()
	dl := relink.StartDeadline(ctx, r.Deadline)
	defer dl.Stop()
	id := r.Seq
	bp := msgBufs.Get().(*[]byte)
	msg := c.d.msg.Render((*bp)[:0], r.Seq, r.Slot)
	*bp = msg
	defer releaseMsg(bp)
	var l *link
	var ch chan reply
	for attempt := 0; ; attempt++ {
		var err error
		if l, err = c.ensure(ctx, dl, &out); err != nil {
			return out
		}
		ch = c.register(id)
		werr := c.write(ctx, dl, l, msg)
		if werr == nil {
			break
		}
		c.forget(id, ch, false) // never on the wire
		c.release(ch)
		switch {
		case errors.Is(ctx.Err(), context.Canceled):
			out.Class, out.Err = drivers.Cancelled, fmt.Errorf("send: %w", context.Cause(ctx))
		case c.closing(l):
			if attempt == 0 && ctx.Err() == nil && !dl.Passed() {
				continue // the link ended under us: send on a new one
			}
			return c.endOf(l, out)
		case errors.Is(werr, errWaitWriter):
			// Nothing of it was written, and the link is not ours to
			// close: the stuck write ends it (and books the requests on
			// it) at its own timeout.
			out.Class, out.Code = drivers.Timeout, "write-stalled"
			out.Err = fmt.Errorf("send: the request's deadline passed while an earlier message was still being written: the target stopped reading")
			return out
		case errors.Is(werr, context.DeadlineExceeded):
			out.Class, out.Code = drivers.Timeout, "write-stalled"
			out.Err = fmt.Errorf("send: the message could not be written within %s: the target stopped reading (the connection is closed on our side)", c.d.timeout)
		default:
			// The network refused the write (a reset): the target dropped
			// the connection; the requests in flight on it end so too.
			out.Class, out.Code = drivers.Classify(werr)
			if out.Class != drivers.Reset {
				out.Class = drivers.Reset
			}
			out.Err = fmt.Errorf("send: %w", werr)
			o := drivers.Outcome{Class: drivers.EOF, Code: "close-1006", Err: fmt.Errorf("the target dropped the connection: %w", werr)}
			l.failed.CompareAndSwap(nil, &o)
			c.slot.Clear(l)
			l.ws.CloseNow()
			return out
		}
		c.drop(l)
		return out
	}
	out.BytesOut = int64(len(msg))
	defer c.release(ch) // once nothing can be delivered to ch any more

	select {
	case rep := <-ch:
		return c.judge(rep, start, out)
	case <-ctx.Done():
		select {
		case rep := <-ch: // answered just in time
			return c.judge(rep, start, out)
		default:
		}
		out.Class, out.Err = drivers.CtxClass(ctx), fmt.Errorf("waiting for the reply: %w", context.Cause(ctx))
		return c.gaveUp(l, id, ch, out)
	case <-dl.C():
		select {
		case rep := <-ch: // answered just in time
			return c.judge(rep, start, out)
		default:
		}
		out.Class, out.Err = drivers.Timeout, errWaitDeadline
		return c.gaveUp(l, id, ch, out)
	case <-l.gone:
		select {
		case rep := <-ch:
			return c.judge(rep, start, out)
		default:
		}
		if !c.forget(id, ch, false) {
			return c.judge(<-ch, start, out) // delivered just before the link's end
		}
		return c.endOf(l, out)
	}
}

// errWaitDeadline is the error of a request whose own deadline
// (Request.Deadline) passed while it waited for its reply.
var errWaitDeadline = fmt.Errorf("waiting for the reply: %w", context.DeadlineExceeded)

// gaveUp forgets a request that was sent on l and then timed out or was
// cancelled (out says which), remembering its id so that its reply
// counts as late.
func (c *conn) gaveUp(l *link, id uint64, ch chan reply, out drivers.Outcome) drivers.Outcome {
	if !c.forget(id, ch, true) {
		// The reply came between the two looks: after the deadline.
		c.d.counts.Count(correlate.Late)
	}
	if c.d.correlate == nil {
		// A late reply could not be told from the next message's:
		// close this link; the next Do opens another.
		c.drop(l)
	}
	return out
}

// msgBufs recycles rendered messages: a request allocates none. The
// library has copied a message (or written it) when Write returns.
var msgBufs = sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}

// releaseMsg returns a message's buffer to msgBufs, unless it grew past
// 1 MiB (a huge message is not kept).
func releaseMsg(bp *[]byte) {
	if cap(*bp) <= 1<<20 {
		msgBufs.Put(bp)
	}
}

// register puts id in flight and returns where its reply will come.
func (c *conn) register(id uint64) chan reply {
	if c.d.correlate != nil {
		// Never nil: ids are whole sequence numbers, unique in the run.
		return c.table.Add(id)
	}
	ch := make(chan reply, 1)
	c.mu.Lock()
	c.fifo = append(c.fifo, ch)
	c.mu.Unlock()
	return ch
}

// errWaitWriter ends a request whose deadline passed while it waited for
// its link's writer: an earlier message's write is stuck (the target
// stopped reading). The link is left to that write's own stall handling.
var errWaitWriter = fmt.Errorf("waiting for the connection's writer: %w", context.DeadlineExceeded)

// write sends msg on l, one message at a time per link. A wait for the
// link's writer ends with ctx or dl (returning context.Canceled, or
// errWaitWriter at the request's deadline); a write under way
// is bounded by the driver's timeout on its own clock: the request's
// deadline ends the wait for the reply, not the write. When the write
// lasts the timeout, or its request is cancelled (Ctrl-C, end of phase),
// l.watch closes the connection, as coder/websocket does when a write's
// context ends.
//
// The library is given a context that never ends: with one that can, it
// sets up a context.AfterFunc (and its own allocations) for every
// message, while l.watch sets up nothing for a write that returns within
// relink.WatchGrace.
func (c *conn) write(ctx context.Context, dl relink.Deadline, l *link, msg []byte) error {
	if err := l.wsem.Enter(ctx, dl); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return errWaitWriter
		}
		return err
	}
	defer l.wsem.Leave()
	if errors.Is(ctx.Err(), context.Canceled) {
		return ctx.Err()
	}
	l.watch.Begin(ctx)
	err := l.ws.Write(context.Background(), c.d.typ, msg)
	if l.watch.End() == relink.Stalled && err != nil {
		return fmt.Errorf("%w", context.DeadlineExceeded)
	}
	return err
}

// closing reports whether l has ended or ends within a moment (its
// reader records how): a write that failed because the link was already
// closing, not a failed write.
func (c *conn) closing(l *link) bool {
	select {
	case <-l.gone:
		return true
	case <-time.After(100 * time.Millisecond):
		return false
	}
}

// ensure returns the open link, re-opening it (once, for every Do that
// finds it closed) when the server closed it. A re-dial that failed
// opened nothing (Dialed stays 0). The re-dial is bounded by ctx and dl.
func (c *conn) ensure(ctx context.Context, dl relink.Deadline, out *drivers.Outcome) (*link, error) {
	l, err := c.slot.Ensure(ctx, dl, c.open, c.discard, out)
	if errors.Is(err, errHandshake) {
		out.Class, out.Code = drivers.Connect, "HANDSHAKE"
	}
	return l, err
}

// release returns a correlate-mode reply channel to the table for reuse
// (FIFO channels are not pooled).
func (c *conn) release(ch chan reply) {
	if c.d.correlate != nil {
		c.table.Release(ch)
	}
}

// forget removes a request that will not take its reply; gaveUp (it
// was sent, then timed out or was cancelled) remembers its id so that a
// reply after it counts as late. It reports false when the reply was
// delivered meanwhile (it is in ch, unread).
func (c *conn) forget(id uint64, ch chan reply, gaveUp bool) bool {
	if c.d.correlate != nil {
		return c.table.Forget(id, ch, gaveUp)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, f := range c.fifo {
		if f == ch {
			c.fifo = append(c.fifo[:i], c.fifo[i+1:]...)
			return true
		}
	}
	return false
}

// drop closes a link on our side: not a server close.
func (c *conn) drop(l *link) {
	l.ours.Store(true)
	c.slot.Clear(l)
	l.ws.CloseNow()
}

// endOf is the outcome of a request whose link ended before its reply.
func (c *conn) endOf(l *link, out drivers.Outcome) drivers.Outcome {
	<-l.gone
	if c.slot.Released() {
		out.Class, out.Err = drivers.Cancelled, errReleased
		return out
	}
	e := l.end
	out.Class, out.Code, out.Err = e.Class, e.Code, e.Err
	return out
}

// judge turns a reply into an outcome.
func (c *conn) judge(rep reply, start time.Time, out drivers.Outcome) drivers.Outcome {
	out.Responded = true
	out.BytesIn = int64(rep.n)
	out.FirstByte = rep.at.Sub(start)
	d := c.d
	if d.success == nil && d.errorCode == nil {
		out.Class = drivers.OK
		return out
	}
	if rep.decErr != nil {
		out.Class, out.Err = drivers.RuleFailed, fmt.Errorf("the reply is not JSON: %w", rep.decErr)
		return out
	}
	r := rules.Get().(*ruleRun)
	defer r.done()
	r.env.Resp = rep.v
	ok := true
	if d.success != nil {
		res, err := r.vm.Run(d.success, &r.env)
		if err != nil {
			out.Class, out.Err = drivers.RuleFailed, fmt.Errorf("success rule: %w", err)
			return out
		}
		ok, _ = res.(bool)
	}
	if ok {
		out.Class = drivers.OK
		return out
	}
	out.Class, out.Err = drivers.RuleFailed, errors.New("the success rule is false")
	if d.errorCode != nil {
		if v, err := r.vm.Run(d.errorCode, &r.env); err == nil {
			out.Code = codeText(v)
		}
	}
	return out
}

// ruleRun is what judging a reply by its rules needs: a VM (reused: it
// keeps its stack) and the rules' environment, passed by pointer so that
// it is not boxed anew for every reply.
type ruleRun struct {
	vm  vm.VM
	env ruleEnv
}

// rules recycles ruleRuns: judging a reply allocates no VM.
var rules = sync.Pool{New: func() any { return new(ruleRun) }}

// done drops the reply and returns r to rules.
func (r *ruleRun) done() {
	r.env.Resp = nil
	rules.Put(r)
}

// read is a link's reader: it pairs every reply with its request, counts
// the ones no request waits for, and records how the link ended. Each
// message is read into one buffer, reused (Conn.Read would allocate one
// per message); a reply is decoded from JSON only when a rule reads it,
// or when its id cannot be read without (replyID).
func (c *conn) read(l *link) {
	d := c.d
	var buf []byte
	for {
		typ, b, err := readMessage(l.ws, buf)
		if err == nil && typ == websocket.MessageText && !utf8.Valid(b) {
			err = errNotUTF8
		}
		if err != nil {
			c.ended(l, err)
			return
		}
		if cap(b) <= maxKeptBuffer {
			buf = b[:0]
		} else {
			buf = nil
		}
		rep := reply{n: len(b), at: time.Now()}
		var id uint64
		known, ok := false, false
		if d.correlate != nil && d.success == nil && d.errorCode == nil {
			id, ok, known = replyID(b, d.correlate)
		}
		if d.needJSON && !known {
			rep.v, rep.decErr = decode(b)
		}
		if d.correlate == nil {
			c.mu.Lock()
			if len(c.fifo) > 0 {
				ch := c.fifo[0]
				c.fifo = c.fifo[1:]
				c.mu.Unlock()
				ch <- rep
				continue
			}
			c.mu.Unlock()
			d.counts.Count(correlate.Unknown) // nothing in flight: a message nobody asked for
			continue
		}
		if !known && rep.decErr == nil {
			var text string
			if text, ok = field(rep.v, d.correlate); ok {
				id, ok = idKey(text)
			}
		}
		if !ok {
			d.counts.Count(correlate.Unknown) // no id to pair it by
			continue
		}
		if stray, delivered := c.table.Deliver(id, rep); !delivered {
			d.counts.Count(stray)
		}
	}
}

// errNotUTF8 fails a link whose server sent a text message that is not
// UTF-8 (RFC 6455 §8.1).
var errNotUTF8 = &frameError{Code: "invalid-utf8", Status: websocket.StatusInvalidFramePayloadData,
	Msg: "a text reply that is not valid UTF-8 (RFC 6455 §8.1): the connection was closed on our side with 1007"}

// decode decodes a reply from JSON (objects map[string]any, arrays
// []any, numbers float64). It is apart from read so that only a reply
// decoded costs the allocation of its value's box.
func decode(b []byte) (any, error) {
	var v any
	err := json.Unmarshal(b, &v)
	return v, err
}

// ended records how a link ended and wakes the requests waiting on it.
func (c *conn) ended(l *link, err error) {
	c.slot.Clear(l)
	ours := l.ours.Load() || c.slot.Released()
	if f := l.failed.Load(); f != nil && !ours {
		l.end = *f
		c.d.counts.CountClose("1006")
		close(l.gone)
		return
	}
	var refused *frameError
	switch s := websocket.CloseStatus(err); {
	case s != -1:
		code := strconv.Itoa(int(s))
		l.end = drivers.Outcome{Class: drivers.EOF, Code: "close-" + code, Err: fmt.Errorf("the server closed the connection: %w", err)}
		if !ours {
			c.d.counts.CountClose(code)
		}
	case errors.As(err, &refused):
		// A reply that fails the connection (frameGuard, or not UTF-8):
		// we close it, with the code that says why.
		l.end = drivers.Outcome{Class: drivers.BadFrame, Code: refused.Code, Err: refused}
		closeBounded(l.ws, refused.Status, refused.Code)
	case errors.Is(err, websocket.ErrMessageTooBig):
		// Our read limit: the library closed the connection with 1009.
		l.end = drivers.Outcome{Class: drivers.BadFrame, Code: "too-big", Err: fmt.Errorf("a reply larger than max_message (%d bytes): the connection was closed on our side with 1009", c.d.maxMsg)}
	case l.stalled.Load():
		l.end = drivers.Outcome{Class: drivers.Reset, Code: "write-stalled", Err: errors.New("a write stalled (the target stopped reading): the connection was closed on our side")}
	case ours || errors.Is(err, net.ErrClosed):
		l.end = drivers.Outcome{Class: drivers.Cancelled, Err: errReleased}
	default:
		// Closed without a close frame: abnormal closure.
		l.end = drivers.Outcome{Class: drivers.EOF, Code: "close-1006", Err: fmt.Errorf("the server dropped the connection without a close frame: %w", err)}
		c.d.counts.CountClose("1006")
	}
	close(l.gone)
}

// Close releases the connection: a close handshake (1000) bounded by
// closeWait, in the background, so that Close returns at once. Requests
// still waiting end as Cancelled.
func (c *conn) Close() error {
	l := c.slot.Release()
	if l == nil {
		return nil
	}
	l.ours.Store(true)
	closeBounded(l.ws, websocket.StatusNormalClosure, "")
	return nil
}

// closeBounded starts a close handshake with code and reason on ws, in
// the background, and returns at once; after closeWait the socket is
// closed regardless.
func closeBounded(ws *websocket.Conn, code websocket.StatusCode, reason string) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		ws.Close(code, reason)
	}()
	go func() {
		select {
		case <-done:
		case <-time.After(closeWait):
			ws.CloseNow()
		}
	}()
}

package websocket

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/expr-lang/expr"

	"github.com/runner-dev/runner/drivers"
	"github.com/runner-dev/runner/drivers/correlate"
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
	ours bool
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

	table correlate.Table[string, reply] // correlate: in flight by id

	mu       sync.Mutex
	link     *link         // nil: closed, opened by the next Do
	dialing  chan struct{} // non-nil while a Do re-opens the link
	fifo     []chan reply  // no correlate: in flight in send order
	released bool
}

// open dials a link and starts its reader.
func (c *conn) open(ctx context.Context) error {
	ws, err := c.d.dial(ctx)
	if err != nil {
		return err
	}
	l := &link{ws: ws, gone: make(chan struct{})}
	c.mu.Lock()
	if c.released {
		c.mu.Unlock()
		ws.CloseNow()
		return errReleased
	}
	c.link = l
	c.mu.Unlock()
	go c.read(l)
	return nil
}

// errReleased is the error of a Do or dial on a released connection.
var errReleased = errors.New("connection released")

// Do sends one message and waits for its reply (see drivers.Conn).
// Outcomes: OK; RuleFailed with the error_code's value as Code when the
// success rule fails (or the reply is not JSON when a rule needs it);
// Timeout when ctx's deadline passes first (the id is remembered, so a
// reply after it counts as late); Cancelled when ctx is cancelled or the
// connection released; EOF with code "close-NNNN" when the server closed
// the connection first (1006 when it dropped it without a close frame);
// Connect when re-opening the link failed; Reset when a write failed.
func (c *conn) Do(ctx context.Context, r drivers.Request) drivers.Outcome {
	var out drivers.Outcome
	start := time.Now()
	l, err := c.ensure(ctx, &out)
	if err != nil {
		return out
	}
	id := strconv.FormatUint(r.Seq, 10)
	var ch chan reply
	if c.d.correlate != nil {
		ch = c.table.Add(id)
	} else {
		ch = make(chan reply, 1)
		c.mu.Lock()
		c.fifo = append(c.fifo, ch)
		c.mu.Unlock()
	}

	msg := c.d.msg.Render(make([]byte, 0, 64), r.Seq)
	if err := l.ws.Write(ctx, c.d.typ, msg); err != nil {
		c.forget(id, ch, false)
		select {
		case <-l.gone:
			return c.endOf(l, out)
		default:
		}
		if ctx.Err() != nil {
			out.Class, out.Err = ctxClass(ctx), fmt.Errorf("send: %w", context.Cause(ctx))
			return out
		}
		out.Class, out.Err = drivers.Reset, fmt.Errorf("send: %w", err)
		return out
	}
	out.BytesOut = int64(len(msg))

	select {
	case rep := <-ch:
		return c.judge(rep, start, out)
	case <-ctx.Done():
		select {
		case rep := <-ch: // answered just in time
			return c.judge(rep, start, out)
		default:
		}
		out.Class, out.Err = ctxClass(ctx), fmt.Errorf("waiting for the reply: %w", context.Cause(ctx))
		c.forget(id, ch, out.Class == drivers.Timeout)
		if out.Class == drivers.Timeout && c.d.correlate == nil {
			// A late reply could not be told from the next message's:
			// close this link; the next Do opens another.
			c.drop(l)
		}
		return out
	case <-l.gone:
		select {
		case rep := <-ch:
			return c.judge(rep, start, out)
		default:
		}
		c.forget(id, ch, false)
		return c.endOf(l, out)
	}
}

// ensure returns the open link, re-opening it (once, for every Do that
// finds it closed) when the server closed it.
func (c *conn) ensure(ctx context.Context, out *drivers.Outcome) (*link, error) {
	c.mu.Lock()
	for {
		switch {
		case c.released:
			c.mu.Unlock()
			out.Class, out.Err = drivers.Cancelled, errReleased
			return nil, errReleased
		case c.link != nil:
			l := c.link
			c.mu.Unlock()
			return l, nil
		case c.dialing != nil:
			wait := c.dialing
			c.mu.Unlock()
			select {
			case <-wait:
			case <-ctx.Done():
				out.Class, out.Err = ctxClass(ctx), fmt.Errorf("waiting for a re-dial: %w", context.Cause(ctx))
				return nil, out.Err
			}
			c.mu.Lock()
			continue
		}
		c.dialing = make(chan struct{})
		c.mu.Unlock()
		t0 := time.Now()
		err := c.open(ctx)
		out.Dialed++
		out.Connect = time.Since(t0)
		c.mu.Lock()
		close(c.dialing)
		c.dialing = nil
		if err != nil {
			c.mu.Unlock()
			out.Class, out.Code = drivers.Classify(err)
			if errors.Is(err, errHandshake) {
				out.Class, out.Code = drivers.Connect, "HANDSHAKE"
			} else if out.Class != drivers.Cancelled && out.Class != drivers.Timeout {
				out.Class = drivers.Connect
			}
			out.Err = fmt.Errorf("re-dial: %w", err)
			return nil, err
		}
	}
}

// forget removes a request that will not take its reply; timedOut
// remembers its id so that a reply after it counts as late.
func (c *conn) forget(id string, ch chan reply, timedOut bool) {
	if c.d.correlate != nil {
		c.table.Forget(id, ch, timedOut)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, f := range c.fifo {
		if f == ch {
			c.fifo = append(c.fifo[:i], c.fifo[i+1:]...)
			return
		}
	}
}

// drop closes a link on our side: not a server close.
func (c *conn) drop(l *link) {
	c.mu.Lock()
	l.ours = true
	if c.link == l {
		c.link = nil
	}
	c.mu.Unlock()
	l.ws.CloseNow()
}

// endOf is the outcome of a request whose link ended before its reply.
func (c *conn) endOf(l *link, out drivers.Outcome) drivers.Outcome {
	<-l.gone
	c.mu.Lock()
	released := c.released
	c.mu.Unlock()
	if released {
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
	env := ruleEnv{Resp: rep.v}
	ok := true
	if d.success != nil {
		res, err := expr.Run(d.success, env)
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
		if v, err := expr.Run(d.errorCode, env); err == nil {
			out.Code = codeText(v)
		}
	}
	return out
}

// read is a link's reader: it pairs every reply with its request, counts
// the ones no request waits for, and records how the link ended.
func (c *conn) read(l *link) {
	d := c.d
	for {
		_, b, err := l.ws.Read(context.Background())
		if err != nil {
			c.ended(l, err)
			return
		}
		rep := reply{n: len(b), at: time.Now()}
		if d.needJSON {
			rep.decErr = json.Unmarshal(b, &rep.v)
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
			d.unknown.Add(1) // nothing in flight: a message nobody asked for
			continue
		}
		id, ok := "", false
		if rep.decErr == nil {
			id, ok = field(rep.v, d.correlate)
		}
		if !ok {
			d.unknown.Add(1) // no id to pair it by
			continue
		}
		if stray, delivered := c.table.Deliver(id, rep); !delivered {
			d.count(stray)
		}
	}
}

// ended records how a link ended and wakes the requests waiting on it.
func (c *conn) ended(l *link, err error) {
	c.mu.Lock()
	if c.link == l {
		c.link = nil
	}
	ours := l.ours || c.released
	c.mu.Unlock()
	code := "1006" // closed without a close frame: abnormal closure
	if s := websocket.CloseStatus(err); s != -1 {
		code = strconv.Itoa(int(s))
	}
	l.end = drivers.Outcome{Class: drivers.EOF, Code: "close-" + code, Err: fmt.Errorf("the server closed the connection: %w", err)}
	if !ours {
		c.d.countClose(code)
	}
	close(l.gone)
}

// Close releases the connection: a close handshake (1000) bounded by
// closeWait, in the background, so that Close returns at once. Requests
// still waiting end as Cancelled.
func (c *conn) Close() error {
	c.mu.Lock()
	if c.released {
		c.mu.Unlock()
		return nil
	}
	c.released = true
	l := c.link
	c.link = nil
	c.mu.Unlock()
	if l == nil {
		return nil
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.ws.Close(websocket.StatusNormalClosure, "")
	}()
	go func() {
		select {
		case <-done:
		case <-time.After(closeWait):
			l.ws.CloseNow()
		}
	}()
	return nil
}

func ctxClass(ctx context.Context) drivers.Class {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return drivers.Timeout
	}
	return drivers.Cancelled
}

package wsgateway

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/runner-dev/runner/internal/clock"
)

// conn is one WebSocket connection: its reader (run), the goroutines
// serving its messages, and its serialized sends.
//
// Writes: coder/websocket allows concurrent Write calls, but the order of
// the frames of concurrent calls is not defined; every frame leaves under
// sendMu so that a reply, its duplicate and its unknown-id extra stay
// together and Reorder's batches leave as made.
type conn struct {
	g      *gateway
	ws     *websocket.Conn
	nc     net.Conn // the TCP connection under ws; nil if unknown
	serial bool

	// ctx ends when the connection is cut or its reader is done: it aborts
	// the service waits (a message whose wait is aborted is not answered,
	// and counts in dropped_replies).
	ctx    context.Context
	cancel context.CancelFunc

	// Reader-only state.
	rng        *rand.Rand
	tokens     float64   // the token bucket's content
	refilled   time.Time // when tokens was last brought up to date
	seen       int64     // frames read, of any kind
	control    bool      // counted in control_connections
	counted    int       // messages with an id processed (CloseAfter)
	serialFree time.Time // when the serial worker is next free

	// pending counts messages in service; stopped: no more are taken.
	pmu          sync.Mutex
	idle         *sync.Cond
	pending      int
	stopped      bool
	closeStarted bool
	closeDone    chan struct{}

	// readErr is why the reader stopped, set before readerDone closes;
	// cutDone: the socket was cut. Together they tell a clean close.
	readErr    error
	readerDone chan struct{}
	cutDone    atomic.Bool

	sendMu sync.Mutex
	batch  []outgoing  // Reorder's held replies
	gen    int         // Reorder batch generation, for its flush timer
	flushT *time.Timer // flushes a partial batch

	qmu     sync.Mutex
	queue   []job         // serial mode's FIFO
	qnotify chan struct{} // a job was queued
}

// job is a /serial message waiting for the worker.
type job struct {
	id   json.RawMessage
	typ  websocket.MessageType
	done time.Time // when its service ends
}

// frame kinds, for the counters.
const (
	kindReply = iota
	kindDuplicate
	kindUnknown
	kindControl
)

type frame struct {
	b    []byte
	kind int
}

// outgoing is a reply with its extras (a duplicate, an unknown id).
type outgoing struct {
	typ    websocket.MessageType
	frames []frame
}

func (g *gateway) newConn(ws *websocket.Conn, nc net.Conn, serial bool) *conn {
	num := g.connSeq.Add(1)
	ctx, cancel := context.WithCancel(context.Background())
	c := &conn{
		g:          g,
		ws:         ws,
		nc:         nc,
		serial:     serial,
		ctx:        ctx,
		cancel:     cancel,
		rng:        rand.New(rand.NewPCG(g.cfg.Seed, num)),
		tokens:     float64(g.cfg.Bucket),
		refilled:   time.Now(),
		closeDone:  make(chan struct{}),
		readerDone: make(chan struct{}),
		qnotify:    make(chan struct{}, 1),
	}
	c.idle = sync.NewCond(&c.pmu)
	return c
}

// run reads the connection's messages until it ends, then waits for the
// messages in service and releases everything.
func (c *conn) run() {
	c.g.connections.Add(1)
	var worker chan struct{}
	if c.serial {
		worker = make(chan struct{})
		go func() { defer close(worker); c.serialWorker() }()
	}
	for {
		typ, data, err := c.ws.Read(context.Background())
		if err != nil {
			c.readErr = err
			break
		}
		c.handle(typ, data, time.Now())
	}
	close(c.readerDone)
	c.pmu.Lock()
	c.stopped = true
	closing := c.closeStarted
	c.closeStarted = true
	c.pmu.Unlock()
	c.cancel()
	if closing {
		<-c.closeDone
	}
	c.waitIdle()
	if worker != nil {
		<-worker
	}
	c.sendMu.Lock()
	if c.flushT != nil {
		c.flushT.Stop()
	}
	c.batch = nil
	c.sendMu.Unlock()
	c.ws.CloseNow()
}

var badRequest = []byte(`{"ok":false,"code":"BAD_REQUEST"}`)

// isStats reports whether a "cmd" member's value is the string "stats".
func isStats(v json.RawMessage) bool {
	var s string
	return json.Unmarshal(v, &s) == nil && s == "stats"
}

// handle processes one frame read at arrival.
func (c *conn) handle(typ websocket.MessageType, data []byte, arrival time.Time) {
	c.pmu.Lock()
	stopped := c.stopped
	c.pmu.Unlock()
	if stopped {
		return // closing: the message is not processed
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(data, &m) != nil {
		m = nil
	}
	cmd, isCmd := m["cmd"]
	control := isCmd && isStats(cmd)
	id, hasID := m["id"]
	c.seen++
	g := c.g
	switch {
	case control && c.seen == 1:
		// Decided before the stats snapshot below, so a fetch never
		// counts its own connection as load.
		c.control = true
		g.connections.Add(-1)
		g.controlConnections.Add(1)
	case !control && c.control:
		// A control connection that now carries load counts after all.
		c.control = false
		g.connections.Add(1)
		g.controlConnections.Add(-1)
	}
	if control {
		g.controlMessages.Add(1)
		b := append([]byte(`{"cmd":"stats","stats":`), g.stats()...)
		c.sendNow(typ, frame{append(b, '}'), kindControl})
		return
	}
	if !hasID {
		g.badMessages.Add(1)
		c.sendNow(typ, frame{badRequest, kindReply})
		return
	}
	if !c.begin() {
		return
	}
	cfg := &g.cfg
	n := g.messages.Add(1)
	c.counted++
	var extra time.Duration
	if cfg.SlowEvery > 0 && n%int64(cfg.SlowEvery) == 0 {
		extra = cfg.SlowDelay
	}
	switch {
	case c.serial:
		g.serialMessages.Add(1)
		if cfg.NeverAnswer {
			g.droppedReplies.Add(1)
			c.end()
			break
		}
		start := arrival
		if c.serialFree.After(start) {
			start = c.serialFree
		}
		c.serialFree = start.Add(cfg.SerialService + extra)
		c.push(job{id: id, typ: typ, done: c.serialFree})
	case cfg.NeverAnswer:
		g.droppedReplies.Add(1)
		c.end()
	default:
		ok := c.take(arrival)
		d := extra
		if ok {
			d += c.serviceTime()
		}
		if d <= 0 {
			c.reply(typ, id, ok)
			c.end()
			break
		}
		due := arrival.Add(d)
		go func() {
			defer c.end()
			if clock.Sleep(c.ctx, time.Until(due)) {
				c.reply(typ, id, ok)
			} else {
				g.droppedReplies.Add(1) // the connection ended first
			}
		}()
	}
	if cfg.CloseAfter > 0 && c.counted == cfg.CloseAfter {
		c.pmu.Lock()
		c.stopped = true // read no more: decided before the next read
		c.pmu.Unlock()
		go c.startClose(websocket.StatusNormalClosure, "bye", true)
	}
}

// take takes a token from the bucket, refilled up to now, and reports
// whether there was one. Without a bucket there always is.
func (c *conn) take(now time.Time) bool {
	cfg := &c.g.cfg
	if cfg.Bucket < 0 {
		return true
	}
	if dt := now.Sub(c.refilled); dt > 0 {
		c.tokens += dt.Seconds() * cfg.Refill
		c.refilled = now
	}
	if limit := float64(cfg.Bucket); c.tokens > limit {
		c.tokens = limit
	}
	if c.tokens >= 1 {
		c.tokens--
		return true
	}
	return false
}

// serviceTime is a normal message's service time: Service plus an
// exponential jitter of mean Jitter from the connection's source.
func (c *conn) serviceTime() time.Duration {
	cfg := &c.g.cfg
	var d time.Duration
	if cfg.Service > 0 {
		d = cfg.Service
	}
	if cfg.Jitter > 0 {
		d += time.Duration(c.rng.ExpFloat64() * float64(cfg.Jitter))
	}
	return d
}

// begin books a message in service, unless the connection has stopped
// taking them.
func (c *conn) begin() bool {
	c.pmu.Lock()
	defer c.pmu.Unlock()
	if c.stopped {
		return false
	}
	c.pending++
	return true
}

// end marks a message of begin done (answered, or given up).
func (c *conn) end() {
	c.pmu.Lock()
	c.pending--
	if c.pending == 0 {
		c.idle.Broadcast()
	}
	c.pmu.Unlock()
}

// waitIdle waits until no message is in service. Service waits end at
// their instant or when ctx ends, so this ends too.
func (c *conn) waitIdle() {
	c.pmu.Lock()
	for c.pending > 0 {
		c.idle.Wait()
	}
	c.pmu.Unlock()
}

// startClose closes the connection from our side, once: it stops taking
// messages, waits for those in service and their held replies to leave,
// then sends Close code reason and waits up to closeWait for the client's
// Close before cutting the socket. counted: a CloseAfter close, which is
// counted and which CloseAbrupt turns into a cut without a Close frame.
func (c *conn) startClose(code websocket.StatusCode, reason string, counted bool) {
	c.pmu.Lock()
	if c.closeStarted {
		c.pmu.Unlock()
		return
	}
	c.closeStarted = true
	c.stopped = true
	c.pmu.Unlock()
	defer close(c.closeDone)
	c.waitIdle()
	c.flush(-1)
	g := c.g
	if counted && g.cfg.CloseAbrupt {
		g.closesAbrupt.Add(1)
		c.cut()
		return
	}
	if counted {
		g.closesSent.Add(1)
	}
	t := time.AfterFunc(closeWait, c.cut)
	err := c.ws.Close(code, reason)
	t.Stop()
	if counted && c.answeredClose(err) {
		g.closesClean.Add(1)
	}
}

// answeredClose reports whether the client answered our Close frame, once
// ws.Close has returned err. Close reports nil also when the connection
// was closed under it, so the reader's end (which comes promptly: the
// connection is closed now) decides: it saw the client's Close frame; or
// it found the connection closed by Close itself, which read the client's
// Close frame (err nil) in time (not cut).
func (c *conn) answeredClose(err error) bool {
	<-c.readerDone
	if websocket.CloseStatus(c.readErr) != -1 {
		return true
	}
	return err == nil && !c.cutDone.Load() && errors.Is(c.readErr, net.ErrClosed)
}

// cut drops the connection at once: no Close frame, service waits aborted.
func (c *conn) cut() {
	c.cutDone.Store(true)
	c.cancel()
	if c.nc != nil {
		c.nc.Close()
		return
	}
	c.ws.CloseNow()
}

// reply makes the reply to a message with id: ok, or RATE_LIMITED; with
// its duplicate and unknown-id extra when due.
func (c *conn) reply(typ websocket.MessageType, id json.RawMessage, ok bool) {
	g := c.g
	b := make([]byte, 0, len(id)+48)
	b = append(b, `{"id":`...)
	b = append(b, id...)
	if ok {
		g.ok.Add(1)
		b = append(b, `,"ok":true}`...)
	} else {
		g.limited.Add(1)
		b = append(b, `,"ok":false,"code":"RATE_LIMITED"}`...)
	}
	n := g.replySeq.Add(1)
	out := outgoing{typ: typ, frames: []frame{{b, kindReply}}}
	if e := int64(g.cfg.DuplicateEvery); e > 0 && n%e == 0 {
		out.frames = append(out.frames, frame{b, kindDuplicate})
	}
	if e := int64(g.cfg.UnknownIDEvery); e > 0 && n%e == 0 {
		u := `{"id":"unknown-` + strconv.FormatInt(n, 10) + `","ok":true}`
		out.frames = append(out.frames, frame{[]byte(u), kindUnknown})
	}
	c.send(out)
}

// send sends a reply, or holds it for Reorder.
func (c *conn) send(out outgoing) {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	k := c.g.cfg.Reorder
	if k < 2 {
		c.write(out)
		return
	}
	c.batch = append(c.batch, out)
	switch len(c.batch) {
	case k:
		c.flushLocked()
	case 1:
		gen := c.gen
		c.flushT = time.AfterFunc(reorderFlush, func() { c.flush(gen) })
	}
}

// sendNow sends one frame at once, never held.
func (c *conn) sendNow(typ websocket.MessageType, f frame) {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	c.write(outgoing{typ: typ, frames: []frame{f}})
}

// flush sends the held batch if it is still generation gen (-1: any).
func (c *conn) flush(gen int) {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	if gen < 0 || gen == c.gen {
		c.flushLocked()
	}
}

// flushLocked sends the held batch in reverse order; sendMu is held.
func (c *conn) flushLocked() {
	if c.flushT != nil {
		c.flushT.Stop()
		c.flushT = nil
	}
	for i := len(c.batch) - 1; i >= 0; i-- {
		c.write(c.batch[i])
	}
	c.batch = c.batch[:0]
	c.gen++
}

// write writes out's frames in order and counts those written; sendMu is
// held. A frame is counted before its write, and uncounted if the write
// fails: a client that has read a reply and then asks for the counters
// must find it counted. A failed write ends the connection (coder/websocket
// closes it), so the rest are not tried.
func (c *conn) write(out outgoing) {
	for _, f := range out.frames {
		count := c.counters(f.kind)
		for _, n := range count {
			n.Add(1)
		}
		ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
		err := c.ws.Write(ctx, out.typ, f.b)
		cancel()
		if err != nil {
			for _, n := range count {
				n.Add(-1)
			}
			return
		}
	}
}

// counters are the counters a written frame of kind adds one to.
func (c *conn) counters(kind int) []*atomic.Int64 {
	g := c.g
	switch kind {
	case kindControl:
		return nil
	case kindDuplicate:
		return []*atomic.Int64{&g.duplicatesSent, &g.replies}
	case kindUnknown:
		return []*atomic.Int64{&g.unknownSent, &g.replies}
	}
	return []*atomic.Int64{&g.replies}
}

// push queues a serial job.
func (c *conn) push(j job) {
	c.qmu.Lock()
	c.queue = append(c.queue, j)
	c.qmu.Unlock()
	select {
	case c.qnotify <- struct{}{}:
	default:
	}
}

// pop takes the next serial job, waiting for one; false once ctx has
// ended and the queue is empty.
func (c *conn) pop() (job, bool) {
	for {
		c.qmu.Lock()
		if len(c.queue) > 0 {
			j := c.queue[0]
			c.queue[0] = job{}
			c.queue = c.queue[1:]
			c.qmu.Unlock()
			return j, true
		}
		c.qmu.Unlock()
		if c.ctx.Err() != nil {
			return job{}, false
		}
		select {
		case <-c.qnotify:
		case <-c.ctx.Done():
		}
	}
}

// serialWorker serves /serial jobs one at a time, in order, each replied
// to at its absolute end instant.
func (c *conn) serialWorker() {
	for {
		j, ok := c.pop()
		if !ok {
			return
		}
		if clock.Sleep(c.ctx, time.Until(j.done)) {
			c.reply(j.typ, j.id, true)
		} else {
			c.g.droppedReplies.Add(1) // the connection ended first
		}
		c.end()
	}
}

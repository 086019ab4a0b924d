package frametarget

import (
	"bufio"
	"crypto/sha256"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// The states of a frame connection.
const (
	stateLive     int32 = iota // replies are written
	stateSilenced              // a silencing fault was sent: nothing more is written
	stateClosing               // CloseAfter: FIN sent, reading until the client's
	stateDead                  // closed
)

// conn is one frame connection: its reader (readLoop) decodes request
// frames and queues them on its worker, which runs the handler and
// writes the reply (send), or leaves it to a Delay timer.
//
// Writes: every frame leaves under mu through bw, flushed once per send
// (a reply with its unknown-id extra, or a Reorder batch), so frames are
// never interleaved and a reply leaves as soon as it is made.
type conn struct {
	s  *server
	nc net.Conn
	r  *bufio.Reader
	w  *worker

	state   atomic.Int32
	pending atomic.Int64 // frames read whose reply is neither written nor dropped
	eof     atomic.Bool  // the reader is done: close once nothing is pending
	kill1   sync.Once

	dmu sync.Mutex // taken before mu
	dq  []delayed  // Delay's queue, in due order

	mu      sync.Mutex
	bw      *bufio.Writer
	replies int     // replies written (CloseAfter)
	batch   []reply // Reorder's held replies
	gen     int     // Reorder batch generation, for its flush timer
}

// job is a request frame on its way to the worker.
type job struct {
	c       *conn
	flags   uint16
	id      uint32
	payload []byte
}

// reply is a response on its way to the wire.
type reply struct {
	flags   uint16
	id      uint32
	payload []byte
	fault   string // a Malformed kind, or "" for the plain reply
}

func newConn(s *server, nc net.Conn, r *bufio.Reader, w *worker) *conn {
	return &conn{s: s, nc: nc, r: r, w: w, bw: bufio.NewWriterSize(nc, writeBufSize)}
}

// readLoop decodes request frames until the connection ends. A bad header
// closes the connection before any payload is read or allocated.
func (c *conn) readLoop() {
	s := c.s
	hdr := make([]byte, HeaderSize)
	for {
		if _, err := io.ReadFull(c.r, hdr); err != nil {
			c.readDone(err)
			return
		}
		h := parseHeader(hdr)
		if checkRequest(h) != nil {
			s.badFrames.Add(1)
			c.kill()
			return
		}
		payload := make([]byte, h.length) // ≤ MaxPayload, checked above
		if _, err := io.ReadFull(c.r, payload); err != nil {
			c.readDone(err)
			return
		}
		s.requests.Add(1)
		s.bytesIn.Add(int64(h.length))
		c.pending.Add(1)
		s.pending.Add(1)
		select {
		case c.w.jobs <- job{c: c, flags: h.flags, id: h.id, payload: payload}:
		case <-s.done:
			c.settle(1)
			c.kill()
			return
		}
	}
}

// readDone ends the reader: at the client's EOF, or when the target is
// shutting down, the replies due still leave and the connection closes
// after them; on any other error it closes at once.
func (c *conn) readDone(err error) {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || c.s.stopping.Load() {
		c.eof.Store(true)
		if c.pending.Load() == 0 {
			c.kill()
		}
		return
	}
	c.kill()
}

// settle marks n frames' replies written or dropped.
func (c *conn) settle(n int) {
	c.s.pending.Add(-int64(n))
	if c.pending.Add(-int64(n)) == 0 && c.eof.Load() {
		c.kill()
	}
}

// kill closes the connection; later replies are dropped.
func (c *conn) kill() {
	c.kill1.Do(func() {
		c.state.Store(stateDead)
		c.nc.Close()
		c.s.forget(c.nc)
	})
}

// worker is an event loop: it runs the handler of its connections' frames
// one at a time, in the order their readers queued them.
type worker struct {
	s    *server
	jobs chan job
}

// run is the worker's loop. It is a goroutine, not a locked OS thread:
// Go runs it on whichever thread is free, so a saturated single worker
// shows as one core of target CPU (target.cpu ≈ 1/cores), not always as
// one busy thread (target.cpu_max_thread). Locking it to a thread was
// tried: on 2 cores the thread hand-offs cost more than they showed.
func (w *worker) run() {
	defer w.s.workerWG.Done()
	for {
		select {
		case j := <-w.jobs:
			w.handle(j)
		case <-w.s.done:
			return
		}
	}
}

// handle runs j's handler, numbers its reply, and sends it now or after
// Delay.
func (w *worker) handle(j job) {
	s, c := w.s, j.c
	if c.state.Load() != stateLive {
		c.settle(1) // no reply will be written: skip the work
		return
	}
	r := reply{flags: j.flags, id: j.id, payload: j.payload}
	if s.cfg.Handler == HandlerDigest {
		r.payload = digest(j.payload, s.cfg.Rounds)
	}
	if n := s.replySeq.Add(1); s.cfg.MalformedEvery > 0 && n%int64(s.cfg.MalformedEvery) == 0 {
		r.fault = s.cfg.Malformed
	}
	if d := s.cfg.Delay; d > 0 {
		c.sendAt(r, time.Now().Add(d))
		return
	}
	c.send(r)
}

// delayed is a reply waiting for its Delay.
type delayed struct {
	due time.Time
	r   reply
}

// sendAt sends r at due, after the replies queued before it. The
// worker's frames of a connection finish in order and all wait the same
// Delay, so the queue is in due order: one timer per connection serves
// it, and the replies keep their order.
func (c *conn) sendAt(r reply, due time.Time) {
	c.dmu.Lock()
	defer c.dmu.Unlock()
	c.dq = append(c.dq, delayed{due: due, r: r})
	if len(c.dq) == 1 {
		time.AfterFunc(time.Until(due), c.sendDue)
	}
}

// sendDue sends the queued replies that are due and arms the timer for
// the next one; a timer is armed exactly when the queue is not empty.
func (c *conn) sendDue() {
	c.dmu.Lock()
	defer c.dmu.Unlock()
	now := time.Now()
	i := 0
	for ; i < len(c.dq) && !c.dq[i].due.After(now); i++ {
		c.send(c.dq[i].r)
	}
	n := copy(c.dq, c.dq[i:])
	clear(c.dq[n:])
	c.dq = c.dq[:n]
	if n > 0 {
		time.AfterFunc(time.Until(c.dq[0].due), c.sendDue)
	}
}

// digest is the digest handler of seed 003: SHA-256 over the whole
// payload, rounds times (the CPU work grows with the payload: 16 rounds
// over 8 KiB hash 128 KiB); the reply is the 32-byte digest.
func digest(p []byte, rounds int) []byte {
	var h [sha256.Size]byte
	for range rounds {
		h = sha256.Sum256(p)
	}
	return h[:]
}

// send writes r, or holds it for Reorder.
func (c *conn) send(r reply) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state.Load() != stateLive {
		c.settle(1)
		return
	}
	k := c.s.cfg.Reorder
	if k < 2 {
		c.writeLocked([]reply{r})
		return
	}
	c.batch = append(c.batch, r)
	switch len(c.batch) {
	case k:
		c.flushBatchLocked()
	case 1:
		gen := c.gen
		time.AfterFunc(reorderFlush, func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			if gen == c.gen {
				c.flushBatchLocked()
			}
		})
	}
}

// flushBatchLocked writes the held batch in reverse order; mu is held.
func (c *conn) flushBatchLocked() {
	b := c.batch
	c.batch = nil
	c.gen++
	for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
	c.writeLocked(b)
}

// tally is the counters a write adds once it has left.
type tally struct {
	responses, malformed, unknown, bytesOut int64
}

// writeLocked writes rs in order and flushes them, applies CloseAfter
// and CutAfter, and settles them; mu is held. Replies after a silencing
// fault, after the CloseAfter-th, or after the one CutAfter cut, are
// dropped. A write error closes the connection.
func (c *conn) writeLocked(rs []reply) {
	s := c.s
	defer c.settle(len(rs))
	s.writing.RLock() // counters waits for this write to be counted
	defer s.writing.RUnlock()
	if c.state.Load() != stateLive {
		return
	}
	c.nc.SetWriteDeadline(time.Now().Add(writeTimeout))
	var t tally
	var err error
	closeNow, cut := false, false
	for _, r := range rs {
		if n := s.cfg.CutAfter; n > 0 && c.replies == n {
			err = c.writeCut(r)
			closeNow, cut = true, true
			break
		}
		if err = c.writeReply(r, &t); err != nil {
			break
		}
		if silences(r.fault) {
			c.state.Store(stateSilenced)
			break
		}
		c.replies++
		if n := s.cfg.CloseAfter; n > 0 && c.replies == n {
			closeNow = true
			break
		}
	}
	if err == nil {
		err = c.bw.Flush()
	}
	if err != nil {
		c.kill()
		return
	}
	s.responses.Add(t.responses)
	s.malformedSent.Add(t.malformed)
	s.unknownSent.Add(t.unknown)
	s.bytesOut.Add(t.bytesOut)
	if cut {
		s.cutSent.Add(1)
	}
	if closeNow && c.state.CompareAndSwap(stateLive, stateClosing) {
		s.closedByServer.Add(1)
		if tc, ok := c.nc.(*net.TCPConn); ok {
			tc.CloseWrite()
		}
		c.nc.SetReadDeadline(time.Now().Add(closeLinger))
	}
}

// writeReply writes r, or the fault that replaces it, into bw.
func (c *conn) writeReply(r reply, t *tally) error {
	h := header{magic: Magic, version: Version, typ: TypeResponse, flags: r.flags, id: r.id, length: uint32(len(r.payload))}
	switch r.fault {
	case MalformedHugeLength:
		t.malformed++
		h.length = 0x80000000
		return c.writeFrame(h, make([]byte, 10))
	case MalformedMaxLength:
		t.malformed++
		h.length = 0xFFFFFFFF
		return c.writeFrame(h, nil)
	case MalformedBadMagic:
		t.malformed++
		h.magic = 0x47455420 // "GET "
		return c.writeFrame(h, nil)
	case MalformedZeroLength:
		t.malformed++
		t.responses++
		h.length = 0
		return c.writeFrame(h, nil)
	case MalformedUnknownID:
		t.malformed++
		t.unknown++
		t.responses++
		x := h
		x.id ^= 0x80000000
		x.length = 0
		if err := c.writeFrame(x, nil); err != nil {
			return err
		}
	}
	t.responses++
	t.bytesOut += int64(len(r.payload))
	return c.writeFrame(h, r.payload)
}

// writeCut writes the first half of r's plain frame into bw (CutAfter).
func (c *conn) writeCut(r reply) error {
	var hb [HeaderSize]byte
	putHeader(hb[:], header{magic: Magic, version: Version, typ: TypeResponse, flags: r.flags, id: r.id, length: uint32(len(r.payload))})
	half := (HeaderSize + len(r.payload)) / 2
	if half <= HeaderSize {
		_, err := c.bw.Write(hb[:half])
		return err
	}
	c.bw.Write(hb[:])
	_, err := c.bw.Write(r.payload[:half-HeaderSize])
	return err
}

// writeFrame writes the header h and then p: into bw when they fit, else
// bw's content then both in one vectored write.
func (c *conn) writeFrame(h header, p []byte) error {
	var hb [HeaderSize]byte
	putHeader(hb[:], h)
	if HeaderSize+len(p) > c.bw.Available() {
		if err := c.bw.Flush(); err != nil {
			return err
		}
	}
	if HeaderSize+len(p) <= c.bw.Available() {
		c.bw.Write(hb[:])
		c.bw.Write(p)
		return nil
	}
	bufs := net.Buffers{hb[:], p}
	_, err := bufs.WriteTo(c.nc)
	return err
}

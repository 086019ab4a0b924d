//go:build linux

package http

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/runner-dev/runner/drivers"
	"github.com/runner-dev/runner/internal/procs"
)

// loopOS: the event loop runs here.
const loopOS = true

var _ drivers.Looper = (*Driver)(nil)

// RunClosed implements drivers.Looper (loop.go says how): slot k runs in
// loop k mod loops. A connection is taken off Go's poller for the loop
// (its socket duplicated, the net.Conn closed) and put back on it at the
// end, so the pool's conns work with Do again between phases.
func (d *Driver) RunClosed(ctx context.Context, stop <-chan struct{}, conns []drivers.Conn, loops int, h drivers.LoopHooks) ([]drivers.Conn, error) {
	if ok, why := d.CanLoop(); !ok {
		return conns, fmt.Errorf("no event loop: %s", why)
	}
	loops = max(1, min(loops, len(conns)))
	ls := make([]*loop, loops)
	for i := range ls {
		l, err := newLoop(i, d, ctx, stop, h, h.Think())
		if err != nil {
			for _, l := range ls[:i] {
				l.release()
			}
			return conns, fmt.Errorf("no event loop: %w", err)
		}
		l.next = h.Next
		ls[i] = l
	}
	return carry(ls, conns, h.Start)
}

// RunOpen implements drivers.Looper (loop.go says how): one loop carries
// every connection and the timetable.
func (d *Driver) RunOpen(ctx context.Context, drained <-chan struct{}, conns []drivers.Conn, h drivers.OpenHooks) ([]drivers.Conn, error) {
	if ok, why := d.CanLoop(); !ok {
		return conns, fmt.Errorf("no event loop: %s", why)
	}
	l, err := newLoop(0, d, ctx, drained, h, 0)
	if err != nil {
		return conns, fmt.Errorf("no event loop: %w", err)
	}
	l.open = &openState{h: h, drops: h.Drops()}
	return carry([]*loop{l}, conns, h.Start)
}

// carry gives slot k of conns to loop k mod len(ls), then asks start for
// the instant the loops' times count from (the hooks' Start, which waits
// for the phase's start: taking the connections over is not in its
// time), runs the loops, and returns the connections to keep per slot.
func carry(ls []*loop, conns []drivers.Conn, start func() time.Time) ([]drivers.Conn, error) {
	loops := len(ls)
	out := make([]drivers.Conn, len(conns))
	for k, dc := range conns {
		c, _ := dc.(*conn)
		if dc != nil && c == nil {
			for _, l := range ls {
				l.release()
			}
			return conns, fmt.Errorf("no event loop: slot %d holds a %T", k, dc)
		}
		fresh := c == nil
		if fresh {
			c = newConn(ls[0].d)
		}
		ls[k%loops].add(k, c, fresh)
	}
	defer procs.Spare(loops)()
	base := start()
	var wg sync.WaitGroup
	for _, l := range ls {
		l.base = base
		wg.Add(1)
		go func() { defer wg.Done(); l.run() }()
	}
	wg.Wait()
	for _, l := range ls {
		for _, lc := range l.conns {
			out[lc.k] = lc.handBack()
		}
		l.release()
	}
	return out, nil
}

// lcState is where a loop's connection is in its request.
type lcState uint8

const (
	lcIdle     lcState = iota // between requests (its next one is due)
	lcDialing                 // its request waits for a dial
	lcWriting                 // its request is being written
	lcReading                 // its response is being read
	lcThinking                // its think time runs
	lcFinished                // it sends no more
)

// loopConn is one slot of a loop: the pool's conn (request rendering,
// response state, rule, cookie jar) and the socket the loop owns.
type loopConn struct {
	c     *conn
	k     int  // the slot
	i     int  // its index in loop.conns, the epoll tag
	fresh bool // the slot was empty at the start: no conn to hand back unless dialled
	fd    int  // -1: none (never dialled, dropped, or dialling)
	state lcState
	// watched is the events registered for fd (0: not registered).
	watched uint32
	// gen numbers the slot's sockets; its events carry it (epoll's Pad).
	gen int32

	r        drivers.Request
	out      drivers.Outcome
	ex       exchange
	start    time.Duration // from Start: the request's send
	deadline time.Duration // from Start
	wake     time.Duration // from Start: the end of its think time
	w        []byte        // the rest of the request's head and body to write
	filler   []byte        // the rest of its filler body to write after w

	// The response so far: in holds its first bytes, skip counts those
	// past what is kept (replayed as zeros), head is the length of its
	// head once read (-1 before), keepTo how many bytes in may hold
	// once the head is known, first the instant its first byte came.
	in     []byte
	skip   int64
	head   int64
	keepTo int
	first  time.Duration
	// stream, when not nil, carries the rest of a large chunked body to
	// the reader running on a goroutine (stream).
	stream *streamSrc
	// at is the instant the read that ended the response returned, for
	// done (0: done reads the clock).
	at time.Duration
	// closing: the last event on the socket said the server closed or
	// reset its side: the connection is not used again.
	closing bool
}

// loop is one event loop: one goroutine, which waits in epoll_wait on
// its thread, and one epoll instance.
type loop struct {
	id    int
	d     *Driver
	ctx   context.Context
	stop  <-chan struct{} // the open model: the drain's end
	h     booker
	next  func(k int) (drivers.Request, time.Duration, bool) // the closed model's LoopHooks.Next
	open  *openState                                         // the open model's timetable and queue
	think time.Duration
	// sa is the address the phase's connections were dialled at (of
	// the first the loop took over), family its address family: the
	// loop's own dials connect there (connect); nil: Driver.dial.
	sa     unix.Sockaddr
	family int
	// base is the instant the loop's times count from (the hooks'
	// Start), timeout each request's (the hooks' Timeout).
	base    time.Time
	timeout time.Duration

	epfd, efd, tfd int // epoll, the wake-up eventfd, the timerfd
	conns          []*loopConn
	live           int // slots not finished
	dialing        int // dials under way
	timerAt        time.Duration
	// connAt is the earliest deadline or end of think time set for a
	// connection since expire last looked at them all (0: none): a
	// timer that fires before it is the open model's next arrival only.
	connAt time.Duration
	// yielded is when the loop last let Go's scheduler run (yieldEvery).
	yielded time.Duration
	// skipPoll: the last look for events without blocking found none;
	// the next wait blocks at once (wait).
	skipPoll  bool
	stopped   bool // stop was closed: no think time runs to its end
	cancelled bool // ctx ended: everything in flight is cancelled
	quit      chan struct{}
	// helpers counts the loop's goroutines (signals, dials), which may
	// write to its eventfd: the loop's end waits for them before the
	// descriptor is closed (and its number given to another file).
	helpers sync.WaitGroup

	mu       sync.Mutex
	inbox    []dialed   // dials done, for the loop to take
	streamed []streamed // streamed responses read, for the loop to book
	ready    []*loopConn
	// again holds connections whose reading stopped at maxReads with
	// bytes perhaps left: no edge will come for them, the next turn
	// reads on.
	again  []*loopConn
	events []unix.EpollEvent
	buf    []byte
	src    replay
	tick   [8]byte
}

// booker books a request's outcome: LoopHooks.Done, OpenHooks.Done.
type booker interface {
	Done(loop, k int, r drivers.Request, out drivers.Outcome, done time.Duration)
}

// openState is an open-model loop's side of the timetable (RunOpen): the
// next arrival, the arrivals waiting for a connection, the connections
// waiting for an arrival. Arrivals wait only while every connection is
// busy, so one of the two lists is always empty.
type openState struct {
	h     drivers.OpenHooks
	drops bool
	// at and due are the timetable's next arrival (OpenHooks.Arrival);
	// ended: there is none, or the timetable was stopped.
	at, due time.Duration
	ended   bool
	// queue holds the intended starts of the arrivals waiting for a
	// connection; free the connections waiting for an arrival, the one
	// idle longest first (as the pacer's channel hands an arrival to the
	// worker that has waited longest: a stack sent every arrival to the
	// last connection freed, one that a server had just reset again and
	// again, while the others idled until their server closed them).
	queue fifo[time.Duration]
	free  fifo[*loopConn]
	sends []pendingSend // the arrivals a turn gave to free connections (arrivals)
}

// dialed is a dial's result, handed from its goroutine to the loop.
type dialed struct {
	lc  *loopConn
	nc  net.Conn
	tcp bool
	err error
}

// Epoll tags of the loop's own descriptors (a connection's is its index).
const (
	tagWake  = -1
	tagTimer = -2
)

// newLoop makes loop id, which books with h; stop and think are the
// closed model's (RunClosed) or the open model's drain (RunOpen). Its
// base is set when it runs (carry).
func newLoop(id int, d *Driver, ctx context.Context, stop <-chan struct{}, h interface {
	booker
	Timeout() time.Duration
}, think time.Duration) (*loop, error) {
	l := &loop{id: id, d: d, ctx: ctx, stop: stop, h: h, think: think, timeout: h.Timeout(), epfd: -1, efd: -1, tfd: -1,
		quit: make(chan struct{}), buf: make([]byte, 64<<10), events: make([]unix.EpollEvent, 128)}
	var err error
	if l.epfd, err = unix.EpollCreate1(unix.EPOLL_CLOEXEC); err != nil {
		return nil, fmt.Errorf("epoll_create1: %w", err)
	}
	if l.efd, err = unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC); err != nil {
		l.release()
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	if l.tfd, err = unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC); err != nil {
		l.release()
		return nil, fmt.Errorf("timerfd_create: %w", err)
	}
	for fd, tag := range map[int]int32{l.efd: tagWake, l.tfd: tagTimer} {
		if err := unix.EpollCtl(l.epfd, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLET, Fd: tag}); err != nil {
			l.release()
			return nil, fmt.Errorf("epoll_ctl: %w", err)
		}
	}
	return l, nil
}

// release closes the loop's own descriptors.
func (l *loop) release() {
	for _, fd := range []int{l.tfd, l.efd, l.epfd} {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
	l.tfd, l.efd, l.epfd = -1, -1, -1
}

// add gives slot k, on conn c, to the loop. A live connection leaves Go's
// poller: its socket is duplicated for the loop and the net.Conn closed
// (the poller forgets it). One that cannot is dropped: the slot's first
// request re-dials, as Do would after a drop.
func (l *loop) add(k int, c *conn, fresh bool) {
	lc := &loopConn{c: c, k: k, i: len(l.conns), fresh: fresh, fd: -1, head: -1}
	l.conns = append(l.conns, lc)
	l.live++
	c.unwatch()
	c.mu.Lock()
	nc := c.nc
	c.nc = nil
	c.mu.Unlock()
	if nc == nil {
		return
	}
	if l.sa == nil {
		if ta, ok := nc.RemoteAddr().(*net.TCPAddr); ok {
			l.sa, l.family = sockaddrOf(ta)
		}
	}
	fd, err := takeFD(nc)
	if err != nil {
		return
	}
	lc.fd = fd
	if !l.watch(lc, unix.EPOLLIN|unix.EPOLLRDHUP) {
		unix.Close(fd)
		lc.fd = -1
	}
}

// sockaddrOf is a's address for connect(2), with its family; nil for an
// address with a zone (the loop leaves those to Driver.dial).
func sockaddrOf(a *net.TCPAddr) (unix.Sockaddr, int) {
	if ip := a.IP.To4(); ip != nil {
		sa := &unix.SockaddrInet4{Port: a.Port}
		copy(sa.Addr[:], ip)
		return sa, unix.AF_INET
	}
	if ip := a.IP.To16(); ip != nil && a.Zone == "" {
		sa := &unix.SockaddrInet6{Port: a.Port}
		copy(sa.Addr[:], ip)
		return sa, unix.AF_INET6
	}
	return nil, 0
}

// takeFD takes nc's socket off Go's poller: a duplicate of it, nc closed.
func takeFD(nc net.Conn) (int, error) {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		nc.Close()
		return -1, fmt.Errorf("%T is not a socket", nc)
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		nc.Close()
		return -1, err
	}
	fd, derr := -1, error(nil)
	err = rc.Control(func(s uintptr) { fd, derr = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0) })
	nc.Close()
	if err == nil {
		err = derr
	}
	return fd, err
}

// handBack puts the slot's socket back on Go's poller under its conn and
// returns the conn to keep for the slot: nil for a slot that was empty
// at the start and holds no connection now.
func (lc *loopConn) handBack() drivers.Conn {
	if lc.fd >= 0 {
		f := os.NewFile(uintptr(lc.fd), "loop")
		nc, err := net.FileConn(f)
		f.Close()
		lc.fd = -1
		if err == nil && !lc.c.attach(nc) {
			nc.Close()
		}
	}
	if lc.fresh && lc.c.nc == nil {
		return nil
	}
	return lc.c
}

// watch sets the events epoll reports for lc's socket (0: none), edge
// triggered: an event says something changed, and the loop reads (or
// writes) until the socket says it is drained (or full). A
// level-triggered socket goes back on the kernel's ready list after each
// wait that reports it, to be looked at again at the next.
func (l *loop) watch(lc *loopConn, events uint32) bool {
	if lc.watched == events {
		return true
	}
	op := unix.EPOLL_CTL_MOD
	switch {
	case lc.watched == 0:
		op = unix.EPOLL_CTL_ADD
	case events == 0:
		op = unix.EPOLL_CTL_DEL
	}
	if err := unix.EpollCtl(l.epfd, op, lc.fd, &unix.EpollEvent{Events: events | unix.EPOLLET, Fd: int32(lc.i), Pad: lc.gen}); err != nil {
		return false
	}
	lc.watched = events
	return true
}

// closeFD closes lc's socket: its next request dials.
func (l *loop) closeFD(lc *loopConn) {
	if lc.fd < 0 {
		return
	}
	if lc.watched != 0 {
		unix.EpollCtl(l.epfd, unix.EPOLL_CTL_DEL, lc.fd, nil)
		lc.watched = 0
	}
	unix.Close(lc.fd)
	lc.fd = -1
	lc.gen++
}

// now is the loop's clock: the time since the hooks' Start.
func (l *loop) now() time.Duration { return time.Since(l.base) }

// run is the loop: it starts every slot's first request, then serves
// its sockets, its timer and its wake-ups until every slot has finished
// and no dial is under way.
func (l *loop) run() {
	l.helpers.Add(1)
	go func() { defer l.helpers.Done(); l.signals() }()
	defer func() {
		close(l.quit)
		l.helpers.Wait()
	}()
	if o := l.open; o != nil {
		for _, lc := range l.conns {
			o.free.push(lc)
		}
		l.arrival()
	} else {
		l.ready = append(l.ready, l.conns...)
	}
	for l.live > 0 || l.dialing > 0 {
		if t := l.now(); t-l.yielded >= yieldEvery {
			l.yielded = t
			runtime.Gosched()
		}
		l.runReady()
		if l.open != nil {
			l.arrivals()
		}
		if l.live == 0 && l.dialing == 0 {
			break
		}
		if again := l.again; len(again) > 0 {
			l.again = nil
			for _, lc := range again {
				if lc.state == lcReading {
					l.read(lc)
				}
			}
		}
		n, err := l.wait(len(l.ready) == 0 && len(l.again) == 0)
		if err != nil {
			if err == unix.EINTR {
				continue
			}
			// Not expected of a valid epoll descriptor; nothing can
			// be waited for: everything under way is cancelled.
			l.cancelAll(fmt.Errorf("epoll_wait: %w", err))
			continue
		}
		for _, ev := range l.events[:n] {
			switch ev.Fd {
			case tagWake:
				l.woken()
			case tagTimer:
				unix.Read(l.tfd, l.tick[:])
				l.timerAt = 0
				l.expire()
			default:
				// An event of a socket closed earlier in this batch
				// (its slot may hold a new one already) is dropped.
				if lc := l.conns[ev.Fd]; lc.fd >= 0 && ev.Pad == lc.gen {
					l.serve(lc, ev.Events)
				}
			}
		}
	}
	for _, lc := range l.conns {
		if lc.fd >= 0 && lc.watched != 0 {
			unix.EpollCtl(l.epfd, unix.EPOLL_CTL_DEL, lc.fd, nil)
			lc.watched = 0
		}
	}
}

// yieldEvery is how often a busy loop passes through Go's scheduler
// (runtime.Gosched). A goroutine that never does is preempted by sysmon
// every 10 ms, and as the loop is mostly in a system call then, sysmon
// takes its P away: the loop's next return from epoll_wait waits for
// one, and sysmon, having taken a P, goes back to waking every 20 µs
// (7–8 % of an open loop's CPU at 20,000/s went to its wake-ups).
const yieldEvery = 5 * time.Millisecond

// wait returns the events waiting, at once (a raw system call the
// runtime does not hear of: a loop under load mostly finds some there),
// or when block is set and there are none, once some come: in
// epoll_wait, a system call that tells the runtime it may block. The
// loop's P stays with it while it waits (sysmon takes a P back only from
// a thread blocked longer than 10 ms when another P is idle), and
// RunClosed keeps one P more than there are loops, so the rest of the
// program (the phase's timers, dials, progress) always has one.
//
// A loop that found nothing at its last look (a light load: each
// request's response comes after the loop has gone idle) blocks at once,
// without the look first: one system call per wait, not two, until a
// wait finds several events at once again.
func (l *loop) wait(block bool) (int, error) {
	if !block || !l.skipPoll {
		n, errno := l.poll()
		if errno != 0 || n > 0 || !block {
			if errno != 0 {
				return 0, errno
			}
			return n, nil
		}
		l.skipPoll = true
	}
	n, err := unix.EpollWait(l.epfd, l.events, -1)
	if n > 1 {
		l.skipPoll = false
	}
	return n, err
}

// poll takes the events waiting without blocking.
func (l *loop) poll() (int, syscall.Errno) {
	// epoll_pwait with no signal mask is epoll_wait, which arm64 lacks.
	n, _, errno := syscall.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(l.epfd), uintptr(unsafe.Pointer(&l.events[0])), uintptr(len(l.events)), 0, 0, 0)
	return int(n), errno
}

// signals wakes the loop when stop is closed and when ctx ends.
func (l *loop) signals() {
	select {
	case <-l.stop:
	case <-l.ctx.Done():
	case <-l.quit:
		return
	}
	l.kick()
	select {
	case <-l.ctx.Done():
		l.kick()
	case <-l.quit:
	}
}

// kick wakes the loop from its wait.
func (l *loop) kick() {
	one := [8]byte{1}
	unix.Write(l.efd, one[:])
}

// woken takes what the loop was woken for: dials done, stop, cancel.
func (l *loop) woken() {
	unix.Read(l.efd, l.tick[:])
	l.mu.Lock()
	in, st := l.inbox, l.streamed
	l.inbox, l.streamed = nil, nil
	l.mu.Unlock()
	for _, dr := range in {
		l.dialed(dr)
	}
	for _, r := range st {
		l.settled(r)
	}
	if !l.stopped {
		select {
		case <-l.stop:
			l.stopped = true
			if l.open != nil {
				l.stopOpen()
			}
			for _, lc := range l.conns {
				if lc.state == lcThinking {
					l.finish(lc)
				}
			}
		default:
		}
	}
	if !l.cancelled && l.ctx.Err() != nil {
		l.cancelAll(nil)
	}
}

// cancelAll ends what is in flight as ctx's cancellation does in Do (err
// nil) or, with err, as a failure of the loop itself; no slot sends
// again.
func (l *loop) cancelAll(err error) {
	l.cancelled = true
	if l.open != nil {
		l.stopOpen()
	}
	for _, lc := range l.conns {
		switch lc.state {
		case lcWriting:
			l.fail(lc, "write request", loopErr("write", err))
		case lcReading:
			if sr := lc.stream; sr != nil {
				sr.finish(loopErr("read", err)) // booked when its reader returns
				continue
			}
			l.fail(lc, "read response", loopErr("read", err))
		case lcThinking, lcIdle:
			l.finish(lc)
		case lcDialing:
			if lc.fd >= 0 {
				l.dialError(lc, context.Canceled)
			}
		}
		// A slot dialling on a goroutine ends when its dial, whose
		// context is ctx's child, returns.
	}
}

// loopErr is the error of an I/O the loop cut short: err, or a deadline
// error as Do's socket gives when its deadline passes.
func loopErr(op string, err error) error {
	if err == nil {
		err = os.ErrDeadlineExceeded
	}
	return &net.OpError{Op: op, Net: "tcp", Err: err}
}

// runReady starts the next request of the slots whose previous one just
// ended, each once: a slot whose request ends at once again (a cookie jar
// over its bounds) waits for the next turn, so the others are served.
func (l *loop) runReady() {
	if !l.cancelled {
		select {
		case <-l.ctx.Done():
			// Seen before the wake-up that says so: nothing more is sent.
			l.cancelAll(nil)
		default:
		}
	}
	ready := l.ready
	l.ready = nil
	for _, lc := range ready {
		if l.open != nil {
			l.freed(lc)
			continue
		}
		l.nextRequest(lc)
	}
	if len(l.ready) == 0 {
		l.ready = ready[:0]
	}
}

// nextRequest starts slot lc's next request in the closed model, if the
// engine gives one.
func (l *loop) nextRequest(lc *loopConn) {
	if l.cancelled || lc.state == lcFinished {
		l.finish(lc)
		return
	}
	r, sent, ok := l.next(lc.k)
	if !ok {
		l.finish(lc)
		return
	}
	l.begin(lc, r, sent)
}

// begin starts request r, sent at sent, on slot lc: as Do does, the look
// at the idle connection, the dial if it has none, then the write.
func (l *loop) begin(lc *loopConn, r drivers.Request, sent time.Duration) {
	lc.start, lc.deadline = sent, sent+l.timeout
	lc.r, lc.out = r, drivers.Outcome{}
	l.armConn(lc.deadline)
	// Close (the pool's, at the run's end) never comes while a loop
	// runs. The look at the idle connection is Do's (idle.go): one
	// recv(2) that peeks, just before the write. The epoll event that
	// brought the response says less: a server that closes right after
	// a response without saying so has its FIN land between that event
	// and the next write 3 to 4 times as often as between the look and
	// the write (22–29 % of such requests failed eof against Do's 6–8 %).
	if lc.fd >= 0 {
		n, errno := peekErrno(uintptr(lc.fd), lc.c.peek.buf[:])
		if errno != syscall.EAGAIN && errno != syscall.EINTR || n > 0 {
			// The server wrote or closed while it was idle: a new
			// connection, as Do's look decides.
			l.closeFD(lc)
		}
	}
	if lc.fd < 0 {
		l.dial(lc)
		return
	}
	l.send(lc)
}

// dial opens slot lc's connection, within its request's deadline: in
// the loop, a non-blocking connect(2) to the address the phase's
// connections were dialled at (connect), as Driver.dial's would be; on a
// goroutine of its own with Driver.dial itself where the loop has no
// such address (every slot started empty, or its address has a zone),
// the result taken when it comes (dialed). A hand-off through a
// goroutine and the eventfd cost a re-dial 0.1 to 0.2 ms more than Do's,
// booked as its connect time.
func (l *loop) dial(lc *loopConn) {
	if l.sa != nil {
		l.connect(lc)
		return
	}
	lc.state = lcDialing
	l.dialing++
	l.helpers.Add(1)
	deadline := l.base.Add(lc.deadline)
	go func() {
		defer l.helpers.Done()
		ctx, cancel := context.WithDeadline(l.ctx, deadline)
		nc, tcp, err := l.d.dial(ctx)
		cancel()
		l.mu.Lock()
		l.inbox = append(l.inbox, dialed{lc: lc, nc: nc, tcp: tcp, err: err})
		l.mu.Unlock()
		l.kick()
	}()
}

// connect starts lc's non-blocking connect(2): connected at once, or
// when its socket turns writable (serve), or failed.
func (l *loop) connect(lc *loopConn) {
	lc.state = lcDialing
	fd, err := unix.Socket(l.family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		l.dialError(lc, os.NewSyscallError("socket", err))
		return
	}
	// As Go's dialer sets them: no Nagle, keep-alive probes every 15 s.
	unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_KEEPALIVE, 1)
	unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_KEEPIDLE, 15)
	unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_KEEPINTVL, 15)
	lc.fd = fd
	switch err := unix.Connect(fd, l.sa); err {
	case nil:
		l.connected(lc)
	case unix.EINPROGRESS, unix.EINTR:
		if !l.watch(lc, unix.EPOLLOUT) {
			l.dialError(lc, errors.New("epoll_ctl refused the socket"))
		}
	default:
		l.dialError(lc, os.NewSyscallError("connect", err))
	}
}

// connecting goes on with lc's connect once its socket says it ended.
func (l *loop) connecting(lc *loopConn) {
	errno, err := unix.GetsockoptInt(lc.fd, unix.SOL_SOCKET, unix.SO_ERROR)
	switch {
	case err != nil:
		l.dialError(lc, os.NewSyscallError("getsockopt", err))
	case errno == int(unix.EINPROGRESS):
		// Not yet: the next edge says.
	case errno != 0:
		l.dialError(lc, os.NewSyscallError("connect", syscall.Errno(errno)))
	default:
		l.connected(lc)
	}
}

// connected sends lc's request on the connection just made.
func (l *loop) connected(lc *loopConn) {
	l.d.opened.Add(1)
	lc.out.Connect = l.now() - lc.start
	lc.out.Dialed = 1
	if !l.watch(lc, unix.EPOLLIN|unix.EPOLLRDHUP) {
		l.closeFD(lc)
		lc.out = lc.c.dialFailed(l.ctx, errors.New("epoll_ctl refused the socket"), lc.out)
		l.done(lc)
		return
	}
	l.afterDial(lc)
}

// afterDial sends lc's request on the connection its dial just made,
// unless the loop's context ended meanwhile (Do looks again too).
func (l *loop) afterDial(lc *loopConn) {
	if l.ctx.Err() != nil {
		lc.out.Class, lc.out.Err = drivers.CtxClass(l.ctx), fmt.Errorf("before send: %w", context.Cause(l.ctx))
		l.done(lc)
		return
	}
	l.send(lc)
}

// dialError ends lc's request whose connect failed with err, as Do's
// failed dial ends (a connect failure with the errno's code, ETIMEDOUT
// at its deadline, cancelled when the loop's context ended).
func (l *loop) dialError(lc *loopConn, err error) {
	lc.out.Connect = l.now() - lc.start
	l.closeFD(lc)
	lc.out = lc.c.dialFailed(l.ctx, &net.OpError{Op: "dial", Net: "tcp", Err: err}, lc.out)
	l.done(lc)
}

// dialed goes on with a request whose dial ended.
func (l *loop) dialed(dr dialed) {
	l.dialing--
	lc := dr.lc
	lc.out.Connect = l.now() - lc.start
	if dr.tcp {
		lc.out.Dialed = 1
	}
	if dr.err != nil {
		lc.out = lc.c.dialFailed(l.ctx, dr.err, lc.out)
		l.done(lc)
		return
	}
	fd, err := takeFD(dr.nc)
	if err == nil {
		lc.fd = fd
		if !l.watch(lc, unix.EPOLLIN|unix.EPOLLRDHUP) {
			err = errors.New("epoll_ctl refused the socket")
		}
	}
	if err != nil {
		l.closeFD(lc)
		lc.out = lc.c.dialFailed(l.ctx, err, lc.out)
		l.done(lc)
		return
	}
	if lc.c.isClosed() {
		lc.out.Class, lc.out.Err = drivers.Cancelled, errClosed
		l.done(lc)
		return
	}
	l.afterDial(lc)
}

// send renders lc's request and starts writing it.
func (l *loop) send(lc *loopConn) {
	w, filler, ex, ok := lc.c.prepare(lc.r, &lc.out)
	if !ok {
		l.done(lc)
		return
	}
	lc.w, lc.filler, lc.ex = w, filler, ex
	lc.in, lc.skip, lc.head, lc.keepTo, lc.first, lc.closing = lc.in[:0], 0, -1, 0, 0, false
	lc.state = lcWriting
	l.write(lc)
}

// write writes what is left of lc's request; when the socket takes no
// more, it waits for it to (EPOLLOUT), reporting nothing else meanwhile.
func (l *loop) write(lc *loopConn) {
	for len(lc.w) > 0 || len(lc.filler) > 0 {
		b := &lc.w
		if len(lc.w) == 0 {
			b = &lc.filler
		}
		n, errno := rawWrite(lc.fd, *b)
		switch {
		case errno == syscall.EAGAIN:
			if !l.watch(lc, unix.EPOLLOUT) {
				l.fail(lc, "write request", loopErr("write", errors.New("epoll_ctl refused the socket")))
			}
			return
		case errno == syscall.EINTR:
			continue
		case errno != 0:
			l.fail(lc, "write request", loopErr("write", os.NewSyscallError("write", errno)))
			return
		}
		lc.out.BytesOut += int64(n)
		*b = (*b)[n:]
	}
	if !l.watch(lc, unix.EPOLLIN|unix.EPOLLRDHUP) {
		l.fail(lc, "read response", loopErr("read", errors.New("epoll_ctl refused the socket")))
		return
	}
	lc.state = lcReading
}

// serve handles an epoll event on a connection's socket.
func (l *loop) serve(lc *loopConn, events uint32) {
	switch lc.state {
	case lcDialing:
		l.connecting(lc)
	case lcWriting:
		l.write(lc)
	case lcReading:
		// The look at the connection, for after the response (loop.go):
		// the event that brings it says whether the server has closed
		// or reset its side too.
		lc.closing = events&(unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0
		l.read(lc)
	default:
		// Idle (thinking, or finished): the server wrote or closed on
		// it. Do's look before the next request would find that and
		// re-dial; closed now, the loop does not hear it again.
		l.closeFD(lc)
	}
}

// read takes what arrived of lc's response and runs the reader when it
// may end it (see replayAll).
//
// Edge-triggered (watch), it reads until a read comes back short: the
// socket was drained then, and what comes later is a new event; after an
// event that said the server closed, until the end of the stream. A read
// that fills the buffer and completes the response is followed by one
// more: bytes past the response (or the server's close) drop the
// connection, as Do's look at it would.
func (l *loop) read(lc *loopConn) {
	for reads := 0; lc.fd >= 0; reads++ {
		if reads == maxReads {
			// A large response: the rest in the next turn, after the
			// timer, the cancellation and the other connections.
			l.again = append(l.again, lc)
			return
		}
		if sr := lc.stream; sr != nil && sr.full() {
			// The reader has not taken what it was given yet: the
			// read waits for the next turn.
			l.again = append(l.again, lc)
			return
		}
		n, errno := rawRead(lc.fd, l.buf)
		var end error
		switch {
		case errno == syscall.EINTR:
			continue
		case errno == syscall.EAGAIN:
			return
		case errno != 0:
			end = loopErr("read", os.NewSyscallError("read", errno))
			n = 0
		case n == 0:
			end = io.EOF
		}
		if lc.state != lcReading {
			// The response ended with a full read: anything after it,
			// bytes or the end of the stream, spoils the connection.
			l.closeFD(lc)
			return
		}
		// One reading of the clock per read: the first byte's instant,
		// and the response's end when this read completes it.
		l.took(lc, l.buf[:n], end, l.now())
		if end != nil || n < len(l.buf) && !lc.closing {
			// Drained; but a close that came with the event is no new
			// edge: read on to its end of stream.
			return
		}
	}
}

// took goes on with lc's response given got, the bytes a read at t
// brought (end: none, the stream ended (io.EOF) or the read failed),
// running the reader when they may end it (see replayAll).
func (l *loop) took(lc *loopConn, got []byte, end error, t time.Duration) {
	if len(got) > 0 && lc.first == 0 {
		lc.first = t
	}
	if sr := lc.stream; sr != nil {
		if len(got) > 0 && !sr.push(got) {
			return // full: read on in the next turn
		}
		if end != nil {
			sr.finish(end)
		}
		return
	}
	if end == nil && len(lc.in) == 0 && lc.skip == 0 && l.plain(lc, got, t) {
		return // the whole response, read where it lies
	}
	lc.store(got)
	if end != nil || lc.due(len(got)) {
		l.attempt(lc, lc.in, end, t)
	}
}

// due reports whether the bytes kept so far, the last got of them just
// read, may complete the response (see replayAll).
func (lc *loopConn) due(got int) bool {
	have := int64(len(lc.in)) + lc.skip
	switch {
	case have <= int64(replayAll):
		return true
	case lc.head < 0:
		if have > MaxHeaderBytes {
			return true
		}
		// An empty line in what came, or across its start.
		tail := lc.in[max(0, len(lc.in)-got-2):]
		return bytes.Contains(tail, []byte("\n\n")) || bytes.Contains(tail, []byte("\n\r\n"))
	case lc.c.resp.chunked:
		return true // past replayAll: the reader streams it (stream)
	case lc.c.resp.length >= 0:
		return have >= lc.head+lc.c.resp.length
	}
	return false // to the end of the stream
}

// store keeps got, the bytes just read, for the next run of the reader:
// all of a head and of a chunked body's first replayAll bytes (then it
// streams); of another body what the reader keeps (keepTo). Bytes not
// kept are counted, replayed as zeros.
func (lc *loopConn) store(got []byte) {
	switch {
	case lc.head < 0:
		lc.in = append(lc.in, got...)
	case lc.c.resp.chunked:
		// At most replayAll bytes: past them the body streams (stream).
		lc.in = append(lc.in, got...)
	default:
		take := max(0, min(len(got), lc.keepTo-len(lc.in)))
		lc.in = append(lc.in, got[:take]...)
		lc.skip += int64(len(got) - take)
	}
}

// attempt runs the reader over b (then lc.skip zeros, then end; errMore
// when end is nil) and reports whether the response ended: complete, or
// failed. Ended, its outcome is booked (done) as ended at t, the instant
// the read that brought its last bytes returned.
func (l *loop) attempt(lc *loopConn, b []byte, end error, t time.Duration) bool {
	if end == nil {
		end = errMore
	}
	c := lc.c
	l.src = replay{b: b, zeros: lc.skip, end: end}
	stage, err := c.readFrom(&l.src, func(head int64) {
		if lc.head < 0 {
			lc.head = head
			lc.keepTo = int(lc.head)
			if c.spec.rule != nil && c.spec.rule.needBody || c.spec.captureBody {
				lc.keepTo += MaxRuleBody
			}
		}
	})
	if errors.Is(err, errMore) {
		if c.resp.chunked && stage == "read response body" && len(b) > replayAll {
			l.stream(lc, b)
		}
		return false
	}
	lc.at = t
	consumed := c.cr.n - int64(c.br.Buffered())
	lc.out.BytesIn = consumed
	if lc.first > 0 {
		lc.out.FirstByte = lc.first - lc.start
	}
	if err != nil {
		l.fail(lc, stage, err)
		return true
	}
	// Bytes past the response, read or not, mean the framing is lost: a
	// new connection, as Do decides on bytes left in its buffer (or its
	// look finds in the socket).
	l.complete(lc, consumed < int64(len(b))+lc.skip)
	return true
}

// readFrom runs the reader over src, from a response's first byte: its
// head (limited to MaxHeaderBytes; head, when not nil, is told its
// length), then its body. It returns the stage it stopped in ("read
// response" or "read response body", as Do names them) and the
// reader's error; c.cr.n less c.br.Buffered() is then what it took.
func (c *conn) readFrom(src io.Reader, head func(n int64)) (stage string, err error) {
	c.cr.r, c.cr.resume = src, nil
	// A first-byte time is the loop's own: the counting reader's
	// clock is not read.
	c.cr.n, c.cr.eof, c.cr.first = 0, false, epoch
	c.cr.limit = MaxHeaderBytes
	c.br.Reset(&c.cr)
	err = c.readResponse()
	c.cr.limit = 0
	if err != nil {
		return "read response", err
	}
	if head != nil {
		head(c.cr.n - int64(c.br.Buffered()))
	}
	return "read response body", c.readBody()
}

// complete books lc's response, read whole into lc.c.resp (past: bytes
// came after it), and keeps the connection if conclude says so.
func (l *loop) complete(lc *loopConn, past bool) {
	if !lc.c.conclude(lc.ex, &lc.out, past) || lc.closing {
		l.closeFD(lc)
	}
	l.done(lc)
}

// plain reads got, the first bytes of lc's response, when they hold a
// plain head (plainHead) and the whole body, which a Content-Length
// bounds or the status rules out, nothing of which is kept, and books
// it; false leaves it to the reader (attempt). The request's rule reads
// no header and no body, and there is no cookie jar: nothing but the
// framing and the status is read from the response.
func (l *loop) plain(lc *loopConn, got []byte, t time.Duration) bool {
	c := lc.c
	d := c.spec
	if c.jar != nil || d.captureBody || d.captureHeaders || d.rule != nil && (d.rule.needHeaders || d.rule.needBody) {
		return false
	}
	n, ok := plainHead(got, &c.resp)
	if !ok {
		return false
	}
	total := int64(n)
	switch {
	case c.resp.noBody(d.method == "HEAD"):
	case c.resp.length >= 0 && c.resp.length <= int64(len(got)-n):
		c.resp.bodyLen = c.resp.length
		total += c.resp.length
	default:
		return false // a body to the end of the stream, chunked, or not all here
	}
	lc.at = t
	lc.out.BytesIn = total
	lc.out.FirstByte = lc.first - lc.start
	l.complete(lc, int64(len(got)) > total)
	return true
}

// fail ends lc's request with err at stage, classed as Do classes it.
// What arrived of its response counts, as in Do: its bytes (all of them
// when the reader did not say how many it took) and its first byte's
// time.
func (l *loop) fail(lc *loopConn, stage string, err error) {
	if lc.out.BytesIn == 0 {
		lc.out.BytesIn = int64(len(lc.in)) + lc.skip
	}
	if lc.first > 0 && lc.out.FirstByte == 0 {
		lc.out.FirstByte = lc.first - lc.start
	}
	lc.out = lc.c.failed(l.ctx, stage, err, lc.out)
	l.closeFD(lc)
	l.done(lc)
}

// done books lc's request and schedules its next: at once, after its
// think time, or never.
func (l *loop) done(lc *loopConn) {
	lc.w, lc.filler, lc.ex = nil, nil, exchange{}
	if cap(lc.in) > replayAll {
		lc.in = nil // a large response's bytes are not held between requests
	}
	at := lc.at
	if at == 0 {
		at = l.now()
	}
	lc.at = 0
	l.h.Done(l.id, lc.k, lc.r, lc.out, at)
	lc.state = lcIdle
	switch {
	case l.cancelled:
		l.finish(lc)
	case l.think > 0:
		if l.stopped {
			l.finish(lc)
			return
		}
		lc.state = lcThinking
		lc.wake = l.now() + l.think
		l.armConn(lc.wake)
	default:
		l.ready = append(l.ready, lc)
	}
}

// finish ends slot lc: it sends no more. Its socket stays open for the
// pool, unwatched.
func (l *loop) finish(lc *loopConn) {
	if lc.state == lcFinished {
		return
	}
	lc.state = lcFinished
	l.live--
	if lc.fd >= 0 && lc.watched != 0 {
		unix.EpollCtl(l.epfd, unix.EPOLL_CTL_DEL, lc.fd, nil)
		lc.watched = 0
	}
}

// arm makes the timer fire by at (from Start): a timer set later is
// moved; one set earlier stays (expire sets the next when it fires).
func (l *loop) arm(at time.Duration) {
	if l.timerAt != 0 && l.timerAt <= at {
		return
	}
	d := max(at-l.now(), time.Microsecond)
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}
	if unix.TimerfdSettime(l.tfd, 0, &spec, nil) == nil {
		l.timerAt = at
	}
}

// armConn makes the timer fire by at, a connection's deadline or the end
// of its think time.
func (l *loop) armConn(at time.Duration) {
	if l.connAt == 0 || at < l.connAt {
		l.connAt = at
	}
	l.arm(at)
}

// expire times out the requests past their deadline, ends the think
// times that are over, and sets the timer for the next of either (or
// the open model's next arrival). The connections are looked at only
// when one of theirs is due: a timer that fired for an arrival does not
// walk them.
func (l *loop) expire() {
	t := l.now()
	if l.connAt != 0 && l.connAt <= t {
		l.connAt = 0
		l.expireConns(t)
	}
	if o := l.open; o != nil && !o.ended {
		if o.due <= t {
			// Taken this turn (arrivals), which sets the timer for
			// what comes next: set now, for the connections' next
			// instant, it would be set twice.
			return
		}
		l.armFor(o.due)
		return
	}
	if l.connAt != 0 {
		l.arm(l.connAt)
	}
}

// armFor makes the timer fire by at, the open model's next arrival, or
// by the connections' next instant if that is earlier.
func (l *loop) armFor(at time.Duration) {
	if l.connAt != 0 && l.connAt < at {
		at = l.connAt
	}
	l.arm(at)
}

// expireConns ends the requests past their deadline at t and the think
// times over by then, and notes the next instant one of the connections
// is due (connAt).
func (l *loop) expireConns(t time.Duration) {
	later := func(at time.Duration) {
		if l.connAt == 0 || at < l.connAt {
			l.connAt = at
		}
	}
	for _, lc := range l.conns {
		switch lc.state {
		case lcWriting, lcReading:
			if sr := lc.stream; sr != nil {
				// Its reader ends it: with the deadline's error, as
				// Do's socket would give; booked when it returns.
				if lc.deadline <= t {
					sr.finish(loopErr("read", nil))
				} else {
					later(lc.deadline)
				}
				continue
			}
			if lc.deadline <= t {
				stage, op := "read response", "read"
				if lc.state == lcWriting {
					stage, op = "write request", "write"
				}
				l.fail(lc, stage, loopErr(op, nil))
				continue
			}
			later(lc.deadline)
		case lcDialing:
			if lc.fd < 0 {
				break // a dial on a goroutine keeps its own deadline
			}
			if lc.deadline <= t {
				l.dialError(lc, os.ErrDeadlineExceeded)
				continue
			}
			later(lc.deadline)
		case lcThinking:
			if lc.wake <= t {
				lc.state = lcIdle
				l.ready = append(l.ready, lc)
				continue
			}
			later(lc.wake)
		}
	}
}

// stream hands lc's response, a chunked body past replayAll bytes, to
// the reader on a goroutine of its own, from its first bytes (b): the
// reader takes the rest as the loop reads it (took pushes it), the body
// held only while in flight, and its result comes back to the loop
// (settled). Replaying a large chunked body would hold it whole, or its
// framing, which grows with its number of chunks.
func (l *loop) stream(lc *loopConn, b []byte) {
	sr := &streamSrc{ch: make(chan []byte, streamDepth)}
	sr.pre = append([]byte(nil), b...)
	sr.total = int64(len(b)) + lc.skip
	lc.stream = sr
	c := lc.c
	l.helpers.Add(1)
	go func() {
		defer l.helpers.Done()
		stage, err := c.readFrom(sr, nil)
		r := streamed{lc: lc, stage: stage, err: err, consumed: c.cr.n - int64(c.br.Buffered()), at: l.now()}
		sr.done.Store(true)
		l.mu.Lock()
		l.streamed = append(l.streamed, r)
		l.mu.Unlock()
		l.kick()
	}()
}

// streamDepth is how many reads may wait for a streaming reader.
const streamDepth = 64

// streamSrc is the reader's side of a streamed response: the bytes
// received before the stream started, then each read the loop pushes,
// then end.
type streamSrc struct {
	pre, cur []byte
	ch       chan []byte
	end      error // set before ch is closed
	ended    bool  // the loop's: finish was called
	total    int64 // the loop's: bytes received for the response
	done     atomic.Bool
}

// Read implements io.Reader for the reader's goroutine.
func (s *streamSrc) Read(p []byte) (int, error) {
	if len(s.pre) > 0 {
		n := copy(p, s.pre)
		s.pre = s.pre[n:]
		return n, nil
	}
	for len(s.cur) == 0 {
		b, ok := <-s.ch
		if !ok {
			return 0, s.end
		}
		s.cur = b
	}
	n := copy(p, s.cur)
	s.cur = s.cur[n:]
	return n, nil
}

// full reports whether a push would wait: the reader is behind.
func (s *streamSrc) full() bool { return !s.ended && len(s.ch) == cap(s.ch) }

// push hands a copy of got to the reader; false when it is full. Once
// the reader has returned, got is past the response: counted.
func (s *streamSrc) push(got []byte) bool {
	if s.ended || s.done.Load() {
		s.total += int64(len(got))
		return true
	}
	select {
	case s.ch <- append([]byte(nil), got...):
		s.total += int64(len(got))
		return true
	default:
		return false
	}
}

// finish ends the stream with err (io.EOF, a read's error, or a
// deadline or cancellation the loop cut it with), once.
func (s *streamSrc) finish(err error) {
	if !s.ended {
		s.ended = true
		s.end = err
		close(s.ch)
	}
}

// streamed is a streamed response's result, from the reader's
// goroutine: its stage and error, the bytes it took and when it ended.
type streamed struct {
	lc       *loopConn
	stage    string
	err      error
	consumed int64
	at       time.Duration
}

// settled books a streamed response once its reader has returned.
func (l *loop) settled(r streamed) {
	lc := r.lc
	sr := lc.stream
	lc.stream = nil
	sr.finish(io.EOF) // its goroutine has returned: nothing reads ch
	lc.at = r.at
	lc.out.BytesIn = r.consumed
	if lc.first > 0 {
		lc.out.FirstByte = lc.first - lc.start
	}
	if r.err != nil {
		l.fail(lc, r.stage, r.err)
		return
	}
	l.complete(lc, sr.total > r.consumed)
}

// maxReads bounds the reads of one connection in one turn of the loop
// (its buffer's 64 KiB each): a response that keeps coming goes on in
// the next turn.
const maxReads = 16

// rawRead reads from the non-blocking socket fd: one system call that
// returns at once, so the runtime is not told it may block.
func rawRead(fd int, p []byte) (int, syscall.Errno) {
	n, _, e := syscall.RawSyscall(syscall.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	return int(n), e
}

// rawWrite writes p (not empty) to the non-blocking socket fd, as rawRead reads.
func rawWrite(fd int, p []byte) (int, syscall.Errno) {
	n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	return int(n), e
}

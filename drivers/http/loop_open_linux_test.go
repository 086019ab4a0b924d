//go:build linux

package http

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/runner-dev/runner/drivers"
	"github.com/runner-dev/runner/schema"
)

// openHooks is a timetable of arrivals at fixed offsets from its start,
// which records what the loop did with each.
type openHooks struct {
	start   time.Time
	timeout time.Duration
	ats     []time.Duration // the timetable: each arrival's intended start
	drops   bool

	mu      sync.Mutex
	next    int
	seq     uint64
	arrived []time.Duration // the intended starts, in the order taken
	dropped []time.Duration
	sent    []sentAt
	outs    []drivers.Outcome
	unsent  [][]time.Duration
	pending []bool // Unsent's pending, call by call
	onDone  func() // when set, called by Done
}

type sentAt struct {
	k        int
	at, sent time.Duration
}

func newOpenHooks(timeout time.Duration, ats ...time.Duration) *openHooks {
	return &openHooks{start: time.Now(), timeout: timeout, ats: ats}
}

func (h *openHooks) Start() time.Time       { return h.start }
func (h *openHooks) Timeout() time.Duration { return h.timeout }
func (h *openHooks) Drops() bool            { return h.drops }

func (h *openHooks) Arrival() (at, due time.Duration, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.next == len(h.ats) {
		return 0, 0, false
	}
	h.next++
	return h.ats[h.next-1], h.ats[h.next-1], true
}

func (h *openHooks) Arrived(at, _ time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.arrived = append(h.arrived, at)
}

func (h *openHooks) Dropped(at, _ time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.dropped = append(h.dropped, at)
}

func (h *openHooks) Send(k int, at time.Duration) (drivers.Request, time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seq++
	sent := time.Since(h.start)
	h.sent = append(h.sent, sentAt{k, at, sent})
	return drivers.Request{Seq: h.seq, Slot: k}, sent
}

func (h *openHooks) Done(_, _ int, _ drivers.Request, out drivers.Outcome, _ time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.outs = append(h.outs, out)
	if h.onDone != nil {
		h.onDone()
	}
}

func (h *openHooks) Unsent(queued []time.Duration, pending bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.pending = append(h.pending, pending)
	h.unsent = append(h.unsent, append([]time.Duration(nil), queued...))
}

// runOpen runs h's timetable on conns connections to a server that
// answers each request after wait, and returns when the loop does.
// A wait of 0 never answers: the server reads until the client closes.
func runOpen(t *testing.T, h *openHooks, conns int, wait time.Duration, ctx context.Context, drained <-chan struct{}) []drivers.Conn {
	t.Helper()
	srv := scripted(t, func(int64) step {
		if wait == 0 {
			return step{silent: true}
		}
		return step{wait: wait, chunks: []string{"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"}}
	})
	d := newDriver(t, schema.HTTP{Timeout: schema.Duration(h.timeout)}, "http://"+srv.addr)
	cs := make([]drivers.Conn, conns)
	for k := range cs {
		cs[k] = dial(t, d)
	}
	kept, err := d.RunOpen(ctx, drained, cs, h)
	if err != nil {
		t.Fatalf("RunOpen: %v", err)
	}
	return kept
}

// TestOpenLoop_QueueIsFirstComeFirstServed: arrivals that find every
// connection busy wait in one queue, and each connection that frees up
// takes the oldest; none is sent before its intended start, and every
// one is sent, answered and booked once.
func TestOpenLoop_QueueIsFirstComeFirstServed(t *testing.T) {
	var ats []time.Duration
	for i := range 8 {
		ats = append(ats, 20*time.Millisecond+time.Duration(i)*time.Microsecond)
	}
	h := newOpenHooks(30*time.Second, ats...)
	runOpen(t, h, 2, 20*time.Millisecond, t.Context(), make(chan struct{}))
	if len(h.arrived) != 8 || len(h.sent) != 8 || len(h.outs) != 8 || len(h.dropped) != 0 || len(h.unsent) != 0 {
		t.Fatalf("arrived %d, sent %d, booked %d, dropped %d, unsent %v; want 8, 8, 8, 0, none", len(h.arrived), len(h.sent), len(h.outs), len(h.dropped), h.unsent)
	}
	for i, s := range h.sent {
		if s.at != ats[i] {
			t.Errorf("send %d carried the arrival intended at %v, want %v (the oldest waiting)", i, s.at, ats[i])
		}
		if s.sent < s.at {
			t.Errorf("arrival %v sent early, at %v", s.at, s.sent)
		}
		// Two connections answer each request 20 ms after its send: the
		// third and fourth arrivals wait for the first two responses.
		if i >= 2 && s.sent < h.sent[i-2].sent+20*time.Millisecond {
			t.Errorf("send %d at %v, before a connection was free (%v + 20ms)", i, s.sent, h.sent[i-2].sent)
		}
	}
	for _, o := range h.outs {
		if o.Class != drivers.OK {
			t.Errorf("outcome %+v, want ok", o)
		}
	}
}

// TestOpenLoop_SendsOnTime: each arrival of a sparse timetable is sent
// at or after its intended start, by its own wake-up: none waits for
// another timer (a request's deadline) to wake the loop.
func TestOpenLoop_SendsOnTime(t *testing.T) {
	var ats []time.Duration
	for i := range 20 {
		ats = append(ats, time.Duration(i)*3*time.Millisecond)
	}
	h := newOpenHooks(30*time.Second, ats...)
	runOpen(t, h, 2, time.Millisecond, t.Context(), make(chan struct{}))
	if len(h.sent) != len(ats) {
		t.Fatalf("%d sent, want %d", len(h.sent), len(ats))
	}
	for _, s := range h.sent {
		// Liveness, not speed: a loop that missed its wake-up sends at
		// the next deadline's, 30 s on.
		if s.sent < s.at || s.sent-s.at > 10*time.Second {
			t.Errorf("arrival %v sent at %v", s.at, s.sent)
		}
	}
}

// TestOpenLoop_DropsWhenBusy: with on_saturation: drop, an arrival that
// finds every connection busy is dropped, never queued.
func TestOpenLoop_DropsWhenBusy(t *testing.T) {
	var ats []time.Duration
	for i := range 6 {
		ats = append(ats, 20*time.Millisecond+time.Duration(i)*time.Microsecond)
	}
	h := newOpenHooks(30*time.Second, ats...)
	h.drops = true
	runOpen(t, h, 2, 50*time.Millisecond, t.Context(), make(chan struct{}))
	if len(h.sent) != 2 || len(h.dropped) != 4 || len(h.arrived) != 6 || len(h.unsent) != 0 {
		t.Fatalf("sent %d, dropped %d, arrived %d, unsent %v; want 2, 4, 6, none", len(h.sent), len(h.dropped), len(h.arrived), h.unsent)
	}
}

// TestOpenLoop_DrainAndCancel: the drain's end gives the queued
// arrivals back unsent, oldest first, and stops the timetable; the
// request in flight goes on until the run's context ends, which cancels
// it as Do's cancellation does.
func TestOpenLoop_DrainAndCancel(t *testing.T) {
	ats := []time.Duration{time.Millisecond, 2 * time.Millisecond, 3 * time.Millisecond, time.Hour}
	h := newOpenHooks(30*time.Second, ats...)
	drained := make(chan struct{})
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		time.Sleep(100 * time.Millisecond)
		close(drained)
		time.Sleep(100 * time.Millisecond)
		cancel()
	}()
	runOpen(t, h, 1, 0, ctx, drained)
	if len(h.sent) != 1 || len(h.unsent) != 1 || len(h.unsent[0]) != 2 || h.unsent[0][0] != ats[1] || h.unsent[0][1] != ats[2] {
		t.Fatalf("sent %v, unsent %v; want the first sent, the next two given back", h.sent, h.unsent)
	}
	if len(h.outs) != 1 || h.outs[0].Class != drivers.Cancelled {
		t.Fatalf("outcomes %+v, want the one in flight cancelled", h.outs)
	}
	if len(h.arrived) != 3 {
		t.Errorf("%d arrivals taken, want 3 (the fourth is an hour away)", len(h.arrived))
	}
	// The fourth was read from the timetable, not taken: the engine must
	// start its walk of what came due there, not after it.
	if len(h.pending) != 1 || !h.pending[0] {
		t.Errorf("Unsent's pending %v, want [true]", h.pending)
	}
}

// TestOpenLoop_TimerFollowsTheTimetable: the timer is always set for the
// next arrival, also when a turn took the arrival the timer was set for
// before the timer's own event was read. (It was not: the event then set
// the timer for the next request deadline only, and the arrival waited
// for it, seconds late.)
func TestOpenLoop_TimerFollowsTheTimetable(t *testing.T) {
	a, b := time.Millisecond, time.Hour
	h := newOpenHooks(30*time.Second, a, b)
	d := newDriver(t, schema.HTTP{}, "http://127.0.0.1:1")
	l, err := newLoop(0, d, t.Context(), nil, h, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer l.release()
	l.base = h.start
	l.open = &openState{h: h}
	l.arrival()
	l.arrivals() // the loop's first turn: nothing due yet
	if l.timerAt != a {
		t.Fatalf("timer at %v, want the first arrival's %v", l.timerAt, a)
	}
	for l.now() <= a {
		time.Sleep(a)
	}
	l.arrivals() // a turn takes the first arrival; its timer's event waits
	l.timerAt = 0
	l.expire() // the event is read
	if l.timerAt == 0 || l.timerAt > b {
		t.Errorf("after the first arrival, timer at %v, want the next arrival's %v", l.timerAt, b)
	}
	if len(h.arrived) != 1 || l.open.queue.len() != 1 {
		t.Errorf("taken %v, queued %d; want the first arrival taken and queued (no connection)", h.arrived, l.open.queue.len())
	}
}

// TestOpenLoop_DeadlineBetweenSparseArrivals: a request's timeout ends it
// on time while the timetable's next arrival is far off: the timer
// follows the earlier of the two. (The second arrival, queued behind the
// first on the one connection, leaves the timer to the third, an hour
// away, unless it looks at the connections' deadlines.)
func TestOpenLoop_DeadlineBetweenSparseArrivals(t *testing.T) {
	h := newOpenHooks(100*time.Millisecond, time.Millisecond, 2*time.Millisecond, time.Hour)
	var doneAt time.Duration
	h.onDone = func() {
		if doneAt == 0 {
			doneAt = time.Since(h.start)
		}
	}
	drained := make(chan struct{})
	go func() {
		time.Sleep(2 * time.Second)
		close(drained)
	}()
	runOpen(t, h, 1, 0, t.Context(), drained)
	if len(h.outs) != 2 || h.outs[0].Class != drivers.Timeout || h.outs[1].Class != drivers.Timeout {
		t.Fatalf("outcomes %+v, want two timeouts", h.outs)
	}
	// Liveness, not speed: a timer left for the next arrival (an hour
	// away) ends it only at the drain's end, 2 s on.
	if doneAt > 1500*time.Millisecond {
		t.Errorf("the 100 ms timeout ended its request at %v", doneAt)
	}
}

// TestOpenLoop_QueueHoldsOnlyWhatWaits: a queue that never empties (an
// item joins for each one taken) holds about what waits in it, not
// every item it ever held, and gives them back oldest first.
func TestOpenLoop_QueueHoldsOnlyWhatWaits(t *testing.T) {
	var q fifo[time.Duration]
	next := time.Duration(0)
	for range 100 {
		q.push(next)
		next++
	}
	want := time.Duration(0)
	for range 1_000_000 {
		at, ok := q.pop()
		if !ok || at != want {
			t.Fatalf("popped %v, %v; want %v", at, ok, want)
		}
		want++
		q.push(next)
		next++
	}
	if q.len() != 100 {
		t.Fatalf("%d waiting, want 100", q.len())
	}
	if len(q.s) > 2*compactAt+100 {
		t.Errorf("the queue holds %d entries for 100 waiting", len(q.s))
	}
	if rest := q.take(); len(rest) != 100 || rest[0] != want || q.len() != 0 {
		t.Errorf("take gave %d from %v, left %d; want 100 from %v, none left", len(rest), rest[0], q.len(), want)
	}
}

// BenchmarkOpenLoop: the open model's event loop, one connection, every
// arrival due at once (each waits in the queue for the one before it):
// the loop's cost per request with its timetable and queue, against the
// same stub as BenchmarkClosedLoop.
func BenchmarkOpenLoop(b *testing.B) {
	s := benchStub(b)
	for _, bc := range benchCases(b) {
		b.Run(bc.name, func(b *testing.B) {
			d := newDriver(b, bc.cfg, "http://"+s.addr)
			c := dial(b, d)
			h := &benchOpenHooks{n: b.N, start: time.Now()}
			b.ReportAllocs()
			b.ResetTimer()
			if _, err := d.RunOpen(b.Context(), nil, []drivers.Conn{c}, h); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			if h.ok != b.N {
				b.Fatalf("%d ok of %d: the last failed with %v", h.ok, b.N, h.err)
			}
		})
	}
}

// benchOpenHooks is a timetable of n arrivals all due at its start.
type benchOpenHooks struct {
	n, taken, sent, ok int
	start              time.Time
	err                error
}

func (h *benchOpenHooks) Start() time.Time             { return h.start }
func (h *benchOpenHooks) Timeout() time.Duration       { return time.Hour }
func (h *benchOpenHooks) Drops() bool                  { return false }
func (h *benchOpenHooks) Arrived(_, _ time.Duration)   {}
func (h *benchOpenHooks) Dropped(_, _ time.Duration)   {}
func (h *benchOpenHooks) Unsent([]time.Duration, bool) {}

func (h *benchOpenHooks) Arrival() (at, due time.Duration, ok bool) {
	if h.taken == h.n {
		return 0, 0, false
	}
	h.taken++
	return 0, 0, true
}

func (h *benchOpenHooks) Send(k int, _ time.Duration) (drivers.Request, time.Duration) {
	h.sent++
	return drivers.Request{Seq: uint64(h.sent), Slot: k}, time.Since(h.start)
}

func (h *benchOpenHooks) Done(_, _ int, _ drivers.Request, out drivers.Outcome, _ time.Duration) {
	if out.Class == drivers.OK {
		h.ok++
	} else {
		h.err = out.Err
	}
}

// TestOpenLoop_ConnectionsTakeTurns: an arrival goes to the connection
// idle longest, as the pacer's channel hands it to the worker that has
// waited longest: sparse arrivals on 4 connections use them in turn. (A
// stack of free connections sent every one to the last freed.)
func TestOpenLoop_ConnectionsTakeTurns(t *testing.T) {
	var ats []time.Duration
	for i := range 8 {
		ats = append(ats, time.Duration(i+1)*10*time.Millisecond)
	}
	h := newOpenHooks(30*time.Second, ats...)
	runOpen(t, h, 4, time.Millisecond, t.Context(), make(chan struct{}))
	if len(h.sent) != 8 {
		t.Fatalf("%d sent, want 8", len(h.sent))
	}
	for i, s := range h.sent {
		if s.k != i%4 {
			t.Errorf("send %d on connection %d, want %d (the one idle longest)", i, s.k, i%4)
		}
	}
}

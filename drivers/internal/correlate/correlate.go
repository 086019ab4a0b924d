// Package correlate pairs replies with the requests in flight on one
// connection of a message protocol (WebSocket, binary frames), by request
// id and in any order, and tells what a reply no request waits for is: a
// late reply (its request timed out), a duplicate (its request was
// already answered) or an unknown id.
package correlate

import (
	"maps"
	"sync"
	"sync/atomic"

	"github.com/runner-dev/runner/drivers"
)

// RememberGaveUp bounds, per Table, the ids of requests that gave up
// (timed out or were cancelled after they were sent) kept to tell a late
// reply from an unknown one; RememberAnswered the answered ids kept to
// tell a duplicate. Older ones are forgotten: a reply to one is then
// unknown. (Duplicates come right after the reply; late replies can trail
// a long run of timeouts.)
const (
	RememberGaveUp   = 1 << 16
	RememberAnswered = 4096
)

// Stray is what an unpaired reply was.
type Stray int

// Kinds of unpaired replies.
const (
	Unknown   Stray = iota // an id never sent (or forgotten: older than Remember)
	Late                   // its request timed out before it came
	Duplicate              // its request was already answered
)

// Table is the in-flight table of one connection: ids of type K, replies
// of type R. It is safe for concurrent use. Its zero value is empty.
type Table[K comparable, R any] struct {
	mu       sync.Mutex
	chans    sync.Pool // of chan R, buffered 1: reused, so a request allocates none
	pending  map[K]chan R
	timedOut ring[K] // bounded by RememberGaveUp
	answered ring[K] // bounded by RememberAnswered
}

// Add registers id as in flight and returns the channel its reply will be
// delivered on (buffered: Deliver never blocks). It returns nil, and
// registers nothing, when id is already in flight (a narrow id field
// that wrapped around while an old request still waits): its reply could
// not be told from the old one's.
func (t *Table[K, R]) Add(id K) chan R {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.pending == nil {
		t.pending = map[K]chan R{}
	}
	if _, busy := t.pending[id]; busy {
		return nil
	}
	ch, _ := t.chans.Get().(chan R)
	if ch == nil {
		ch = make(chan R, 1)
	}
	t.pending[id] = ch
	return ch
}

// Release returns a channel Add gave once its request is done with it:
// its reply read, or Forget returned true. A channel Forget returned
// false for still holds the reply: read it first. After Release the
// channel belongs to the Table again.
func (t *Table[K, R]) Release(ch chan R) {
	select {
	case <-ch: // a reply nobody read: never hand it to the next request
	default:
	}
	t.chans.Put(ch)
}

// Forget removes id when its request will not take a reply. gaveUp
// (it timed out or was cancelled after it was sent) remembers it, so that
// a reply after it counts as Late; a request never sent is forgotten
// outright. It reports false when the reply was delivered meanwhile: it
// is then in ch, unread, and the caller decides what it was.
func (t *Table[K, R]) Forget(id K, ch chan R, gaveUp bool) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.pending[id] != ch {
		return false
	}
	delete(t.pending, id)
	if gaveUp {
		t.timedOut.add(id, RememberGaveUp)
	}
	return true
}

// Deliver hands a reply with id to its request and returns true, or says
// what kind of stray it is and returns false.
func (t *Table[K, R]) Deliver(id K, r R) (Stray, bool) {
	t.mu.Lock()
	if ch, ok := t.pending[id]; ok {
		delete(t.pending, id)
		t.answered.add(id, RememberAnswered)
		t.mu.Unlock()
		ch <- r
		return 0, true
	}
	defer t.mu.Unlock()
	switch {
	case t.timedOut.remove(id):
		t.answered.add(id, RememberAnswered)
		return Late, false
	case t.answered.has(id):
		return Duplicate, false
	}
	return Unknown, false
}

// Len is the number of requests in flight.
func (t *Table[K, R]) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.pending)
}

// ring is a bounded set: the oldest id is forgotten first once it holds
// its bound. Its zero value is empty; not safe for concurrent use.
type ring[K comparable] struct {
	set  map[K]struct{}
	ring []K
	next int
}

func (r *ring[K]) add(id K, bound int) {
	if r.set == nil {
		r.set = map[K]struct{}{}
	}
	if _, ok := r.set[id]; ok {
		return
	}
	if len(r.ring) < bound {
		r.ring = append(r.ring, id)
	} else {
		delete(r.set, r.ring[r.next])
		r.ring[r.next] = id
		r.next = (r.next + 1) % bound
	}
	r.set[id] = struct{}{}
}

func (r *ring[K]) has(id K) bool {
	_, ok := r.set[id]
	return ok
}

// remove forgets id and reports whether it was there. Its slot stays
// until overwritten; deleting an absent key then is harmless.
func (r *ring[K]) remove(id K) bool {
	if _, ok := r.set[id]; !ok {
		return false
	}
	delete(r.set, id)
	return true
}

// Counts are a driver's running totals of replies no request waited for
// and of connections the target ended, by code (drivers.StrayCounter).
// Safe for concurrent use; the zero value is ready.
type Counts struct {
	late, unknown, duplicate atomic.Int64
	mu                       sync.Mutex
	closes                   map[string]int64
}

// Count books one unpaired reply.
func (c *Counts) Count(s Stray) {
	switch s {
	case Late:
		c.late.Add(1)
	case Duplicate:
		c.duplicate.Add(1)
	default:
		c.unknown.Add(1)
	}
}

// CountClose books one connection the target ended, by code.
func (c *Counts) CountClose(code string) {
	c.mu.Lock()
	if c.closes == nil {
		c.closes = map[string]int64{}
	}
	c.closes[code]++
	c.mu.Unlock()
}

// Strays returns the totals so far.
func (c *Counts) Strays() drivers.Strays {
	c.mu.Lock()
	closes := maps.Clone(c.closes)
	c.mu.Unlock()
	if closes == nil {
		closes = map[string]int64{}
	}
	return drivers.Strays{Late: c.late.Load(), UnknownID: c.unknown.Load(), DuplicateID: c.duplicate.Load(), Closes: closes}
}

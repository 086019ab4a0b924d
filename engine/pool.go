package engine

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/runner-dev/runner/drivers"
)

// pool holds a repeat's connections; phases of a repeat reuse them.
type pool struct {
	mu    sync.Mutex
	conns []drivers.Conn // nil where a dial failed
	// dialing serialises the dials of an empty slot: with inflight > 1
	// several workers share a slot, and each finding it empty would dial
	// a connection of its own, the earlier ones overwritten and never
	// closed.
	// A channel of capacity 1 is the lock, so that a wait can end with
	// its request's context.
	dialing map[int]chan struct{}
}

// slotLock returns the lock that serialises the dials of slot i: send
// to take it, receive to give it back.
func (p *pool) slotLock(i int) chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dialing == nil {
		p.dialing = map[int]chan struct{}{}
	}
	m := p.dialing[i]
	if m == nil {
		m = make(chan struct{}, 1)
		p.dialing[i] = m
	}
	return m
}

func (p *pool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		if c != nil {
			c.Close()
		}
	}
	p.conns = nil
}

// reserve makes room for n slots without dialling them.
func (p *pool) reserve(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.conns) < n {
		p.conns = append(p.conns, nil)
	}
}

func (p *pool) get(i int) drivers.Conn {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.conns[i]
}

func (p *pool) set(i int, c drivers.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.conns[i] = c
}

func (p *pool) established(n int) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := 0
	for _, c := range p.conns[:min(n, len(p.conns))] {
		if c != nil {
			k++
		}
	}
	return k
}

// established counts the slots that held a live connection when they
// started: at the barrier, or at their stair.
func (ph *phaseRun) established() int {
	n := 0
	for i := range ph.live {
		if ph.live[i].Load() {
			n++
		}
	}
	return n
}

// conn returns connection k, dialling it if its slot is empty. A failed
// dial is returned as the outcome of the request that needed it. The
// workers of one slot (inflight > 1) dial it one at a time: one that
// waited finds the connection the first one made, and takes it.
func (ph *phaseRun) conn(ctx context.Context, k int) (drivers.Conn, drivers.Outcome, bool) {
	if c := ph.pool.get(k); c != nil {
		return c, drivers.Outcome{}, true
	}
	t0 := time.Now()
	lock := ph.pool.slotLock(k)
	select {
	case lock <- struct{}{}:
		defer func() { <-lock }()
	case <-ctx.Done():
		err := context.Cause(ctx)
		cl := drivers.CtxClass(ctx)
		if cl == drivers.Timeout && ph.hard.Err() == nil {
			cl = drivers.Connect // waited out its timeout for a connection
		}
		return nil, drivers.Outcome{Class: cl, Err: fmt.Errorf("waiting for the slot's dial: %w", err), Connect: time.Since(t0)}, false
	}
	if c := ph.pool.get(k); c != nil {
		return c, drivers.Outcome{}, true
	}
	c, err := ph.r.Driver.Dial(ctx)
	if err != nil {
		cl, code := drivers.Classify(err)
		if cl == drivers.Timeout || cl == drivers.Cancelled {
			// A dial that ran out of time is still a failure to connect,
			// unless the phase itself cancelled it.
			if ph.hard.Err() == nil {
				cl = drivers.Connect
			}
		}
		if ph.hard.Err() == nil {
			ph.dials.failure(err, 1, "")
		}
		return nil, drivers.Outcome{Class: cl, Code: code, Err: err, Connect: time.Since(t0)}, false
	}
	ph.pool.set(k, c)
	return c, drivers.Outcome{Dialed: 1, Connect: time.Since(t0)}, true
}

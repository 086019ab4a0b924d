package engine

import (
	"context"
	"sync"
	"time"

	"github.com/runner-dev/runner/drivers"
)

// pool holds a repeat's connections; phases of a repeat reuse them.
type pool struct {
	mu    sync.Mutex
	conns []drivers.Conn // nil where a dial failed
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
// dial is returned as the outcome of the request that needed it.
func (ph *phaseRun) conn(ctx context.Context, k int) (drivers.Conn, drivers.Outcome, bool) {
	if c := ph.pool.get(k); c != nil {
		return c, drivers.Outcome{}, true
	}
	t0 := time.Now()
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

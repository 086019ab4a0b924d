// Package drivertest holds the drivers' test and benchmark helpers:
// driving one connection as the engine does, and hand-written servers
// that misbehave.
//
// Serial and Parallel drive a connection in a benchmark as the engine
// does for a drivers.DeadlineKeeper: the phase's context (cancellation
// only) and each request's deadline in drivers.Request. InFlight sends
// several requests at once, in tests. Serve runs a hand-written server,
// Reset drops a connection it accepted, and WaitDead waits for the client
// to notice.
package drivertest

import (
	"context"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runner-dev/runner/drivers"
)

// Serial sends b.N requests on c, one at a time (sequence numbers 1…b.N),
// and fails the benchmark on the first that is not ok.
func Serial(b *testing.B, c drivers.Conn) {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if o := c.Do(ctx, drivers.Request{Seq: uint64(i) + 1, Deadline: time.Now().Add(time.Minute)}); o.Class != drivers.OK {
			b.Fatalf("request %d: %s %s %v", i+1, o.Class, o.Code, o.Err)
		}
	}
}

// Parallel sends b.N requests on c from about inflight goroutines at
// once, and fails the benchmark on any that is not ok.
func Parallel(b *testing.B, c drivers.Conn, inflight int) {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var seq atomic.Uint64
	b.ReportAllocs()
	b.SetParallelism(max(1, inflight/runtime.GOMAXPROCS(0)))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			s := seq.Add(1)
			if o := c.Do(ctx, drivers.Request{Seq: s, Deadline: time.Now().Add(time.Minute)}); o.Class != drivers.OK {
				b.Errorf("request %d: %s %s %v", s, o.Class, o.Code, o.Err)
				return
			}
		}
	})
}

// InFlight sends requests 1 to n on c at once, each from a goroutine of
// its own with a context that times out after timeout, and returns their
// outcomes in order of sequence number (outs[seq-1]) once all have ended.
func InFlight(c drivers.Conn, n int, timeout time.Duration) []drivers.Outcome {
	var wg sync.WaitGroup
	outs := make([]drivers.Outcome, n)
	for i := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			outs[i] = c.Do(ctx, drivers.Request{Seq: uint64(i) + 1})
		}()
	}
	wg.Wait()
	return outs
}

// Reset closes nc with a reset (SO_LINGER 0: an RST instead of a FIN), as
// a server that accepts a connection and drops it at once does.
func Reset(nc net.Conn) {
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	nc.Close()
}

// WaitDead polls p's Alive every 5 ms for up to 5 s until it reports an
// error, and returns that error; nil when it never did. The server's
// reset reaches the client a scheduling delay after its accept.
func WaitDead(p drivers.Prober) error {
	for range 1000 {
		if err := p.Alive(); err != nil {
			return err
		}
		time.Sleep(5 * time.Millisecond)
	}
	return nil
}

// Serve accepts connections on ln and hands connection number n (0-based,
// in accept order) to handle on a goroutine of its own, for hand-written
// test servers that send what a well-behaved library never would. When
// the test ends, ln and every accepted connection are closed and every
// handler is waited for. A connection stays open when its handler
// returns (a server that stops reading), unless handle closes it.
func Serve(t testing.TB, ln net.Listener, handle func(n int, c net.Conn)) {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns []net.Conn
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for n := 0; ; n++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				handle(n, c)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
}

// Do sends request seq on c with its context bounded by timeout, as the
// engine does for a driver that keeps no deadline of its own.
func Do(c drivers.Conn, seq uint64, timeout time.Duration) drivers.Outcome {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return c.Do(ctx, drivers.Request{Seq: seq})
}

// DoKeep sends request seq on c as the engine does for a
// drivers.DeadlineKeeper: a context without a deadline, and the deadline
// (now + timeout) in the request.
func DoKeep(c drivers.Conn, seq uint64, timeout time.Duration) drivers.Outcome {
	return c.Do(context.Background(), drivers.Request{Seq: seq, Deadline: time.Now().Add(timeout)})
}

// CancelEndsBlockedWrites sends 8 requests at once on c, whose peer reads
// nothing, waits 300 ms for the socket buffers to fill and the writes to
// block, then cancels their context: each must end as drivers.Cancelled
// within 5 s, and all within 2 s of the cancel.
func CancelEndsBlockedWrites(t testing.TB, c drivers.Conn) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	outs := make(chan drivers.Outcome, 8)
	for seq := uint64(1); seq <= 8; seq++ {
		go func() { outs <- c.Do(ctx, drivers.Request{Seq: seq}) }()
	}
	time.Sleep(300 * time.Millisecond) // the socket buffers fill; writes block
	cancel()
	start := time.Now()
	for range 8 {
		select {
		case o := <-outs:
			if o.Class != drivers.Cancelled {
				t.Errorf("%v %q %v, want cancelled", o.Class, o.Code, o.Err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a request did not end within 5 s of the cancel")
		}
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("took %s after the cancel", el)
	}
}

// WatchStalls measures how late this process wakes up: until the test
// ends, a goroutine sleeps 5 ms at a time and keeps the longest overshoot
// it saw. The returned function reads it. A test that bounds how long a
// request may take past its deadline adds it to its allowance, so that a
// machine busy elsewhere (the process not scheduled for a while) is not
// mistaken for a driver that overran.
func WatchStalls(t testing.TB) (longest func() time.Duration) {
	var worst atomic.Int64
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		const step = 5 * time.Millisecond
		for {
			start := time.Now()
			select {
			case <-done:
				return
			case <-time.After(step):
			}
			if late := int64(time.Since(start) - step); late > worst.Load() {
				worst.Store(late)
			}
		}
	}()
	t.Cleanup(func() { close(done); <-stopped })
	return func() time.Duration { return time.Duration(worst.Load()) }
}

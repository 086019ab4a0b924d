// Package drivertest drives one connection of a driver in a benchmark as
// the engine does for a drivers.DeadlineKeeper: the phase's context
// (cancellation only) and each request's deadline in drivers.Request.
package drivertest

import (
	"context"
	"runtime"
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

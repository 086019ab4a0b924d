package relink

import (
	"context"
	"testing"
	"time"
)

// blocked is a write that lasts until unblock is called (by a Watch's
// callback) or 5 s pass; it reports whether it was unblocked.
type blocked chan struct{}

func (b blocked) unblock() { close(b) }

func (b blocked) wait() bool {
	select {
	case <-b:
		return true
	case <-time.After(5 * time.Second):
		return false
	}
}

// A write that returns at once is left alone and sets nothing up.
func TestWatchQuickWrite(t *testing.T) {
	var w Watch
	w.OnCancel = func() { t.Error("OnCancel ran") }
	w.OnStall = func() { t.Error("OnStall ran") }
	w.Timeout = time.Minute
	ctx, cancel := context.WithCancel(context.Background())
	for range 100 {
		w.Begin(ctx)
		if f := w.End(); f != None {
			t.Fatalf("End = %v, want None", f)
		}
	}
	cancel() // after the writes: nothing may run
	time.Sleep(2 * WatchGrace)
}

// A blocked write whose context is cancelled is cut, once the grace has
// passed at the latest.
func TestWatchCancelBlockedWrite(t *testing.T) {
	b := make(blocked)
	w := Watch{OnCancel: b.unblock}
	ctx, cancel := context.WithCancel(context.Background())
	w.Begin(ctx)
	time.AfterFunc(WatchGrace/2, cancel)
	start := time.Now()
	if !b.wait() {
		t.Fatal("the write was not cut within 5 s of the cancel")
	}
	if f := w.End(); f != Cancelled {
		t.Errorf("End = %v, want Cancelled", f)
	}
	if el := time.Since(start); el > time.Second {
		t.Errorf("cut after %s", el)
	}
}

// A deadline that passes is not a cancellation: the write goes on, and
// Timeout cuts it (OnStall).
func TestWatchDeadlineIsNotCancel(t *testing.T) {
	b := make(blocked)
	w := Watch{OnCancel: func() { t.Error("OnCancel ran on a deadline") }, OnStall: b.unblock, Timeout: 200 * time.Millisecond}
	ctx, cancel := context.WithTimeout(context.Background(), WatchGrace)
	defer cancel()
	start := time.Now()
	w.Begin(ctx)
	if !b.wait() {
		t.Fatal("the write did not stall out within 5 s")
	}
	if el := time.Since(start); el < w.Timeout {
		t.Errorf("stalled after %s, before the timeout %s", el, w.Timeout)
	}
	if f := w.End(); f != Stalled {
		t.Errorf("End = %v, want Stalled", f)
	}
}

// The cancellation of an earlier write's context, watched and then
// ended, does not cut the next write.
func TestWatchLateCancelIgnored(t *testing.T) {
	cut := make(chan struct{}, 4)
	w := Watch{OnCancel: func() { cut <- struct{}{} }}
	first, cancel := context.WithCancel(context.Background())
	w.Begin(first)
	time.Sleep(2 * WatchGrace) // watched now
	w.End()
	w.Begin(context.Background())
	cancel()
	time.Sleep(2 * WatchGrace)
	if f := w.End(); f != None {
		t.Errorf("End = %v, want None", f)
	}
	if len(cut) != 0 {
		t.Error("OnCancel ran for an ended write")
	}
}

// BenchmarkWatch is the cost of watching one write that returns at once.
func BenchmarkWatch(b *testing.B) {
	var w Watch
	w.OnCancel = func() {}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.ReportAllocs()
	for range b.N {
		w.Begin(ctx)
		w.End()
	}
}

// A write after a slow one (past the grace, so the timer was re-armed
// for the slow write's far timeout) is still watched from its own grace
// on: its cancellation cuts it promptly, not when that earlier timer
// fires (it used to take up to Timeout: 1.9 s of 2 s).
func TestWatchCancelAfterSlowWrite(t *testing.T) {
	b := make(blocked)
	w := Watch{OnCancel: b.unblock, Timeout: 10 * time.Second}
	w.Begin(context.Background())
	time.Sleep(3 * WatchGrace) // slow, but it ends on its own
	if f := w.End(); f != None {
		t.Fatalf("slow write: End = %v, want None", f)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w.Begin(ctx)
	time.AfterFunc(WatchGrace/2, cancel)
	start := time.Now()
	if !b.wait() {
		t.Fatal("the second write was not cut within 5 s of the cancel")
	}
	if f := w.End(); f != Cancelled {
		t.Errorf("End = %v, want Cancelled", f)
	}
	if el := time.Since(start); el > time.Second {
		t.Errorf("cut after %s, want within the grace", el)
	}
}

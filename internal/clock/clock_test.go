package clock

import (
	"context"
	"testing"
	"time"
)

// The precise sleeper never wakes before its instant, and a closed done
// channel wakes it long before a far instant. (No upper bound on lateness
// is asserted: the machine is shared.)
func TestPreciseSleeperNeverEarlyAndCancellable(t *testing.T) {
	s := NewPrecise()
	defer s.Close()
	done := make(chan struct{})
	start := time.Now()
	for i := 1; i <= 200; i++ {
		at := start.Add(time.Duration(i) * 500 * time.Microsecond)
		if !s.Until(at, done) {
			t.Fatalf("wait %d reported cancelled", i)
		}
		if now := time.Now(); now.Before(at) {
			t.Fatalf("wait %d woke %s early", i, at.Sub(now))
		}
	}
	// A spin-length wait and a past instant.
	if !s.Until(time.Now().Add(10*time.Microsecond), done) || !s.Until(time.Now().Add(-time.Second), done) {
		t.Fatal("short or past waits reported cancelled")
	}
	go func() { time.Sleep(20 * time.Millisecond); close(done) }()
	t0 := time.Now()
	if s.Until(time.Now().Add(time.Hour), done) {
		t.Fatal("an hour passed?")
	}
	if took := time.Since(t0); took > 30*time.Second {
		t.Fatalf("cancellation took %s", took)
	}
	// After cancellation every wait on the same done returns false at once.
	if s.Until(time.Now().Add(time.Hour), done) {
		t.Fatal("wait on a closed done reported reached")
	}
}

// Sleep ends at once when its context is cancelled, and otherwise never
// before its duration.
func TestSleep(t *testing.T) {
	ctx := context.Background()
	for i := 0; i < 50; i++ {
		t0 := time.Now()
		if !Sleep(ctx, 2*time.Millisecond) {
			t.Fatal("reported cancelled")
		}
		if took := time.Since(t0); took < 2*time.Millisecond {
			t.Fatalf("woke after %s, before 2ms", took)
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	time.AfterFunc(10*time.Millisecond, cancel)
	if Sleep(cctx, time.Hour) {
		t.Fatal("an hour passed?")
	}
}

// Measure reports a median overshoot per clock, never negative (no clock
// wakes early), and the precise clock within a millisecond on Linux,
// where a timerfd is available.
func TestMeasureResolution(t *testing.T) {
	start := time.Now()
	r := Measure(25, time.Millisecond)
	took := time.Since(start)
	if r.Samples != 25 || r.Sleep != time.Millisecond {
		t.Fatalf("%+v", r)
	}
	if r.Timer < 0 || r.Precise < 0 {
		t.Fatalf("negative overshoot: %+v", r)
	}
	if !r.PreciseAvailable {
		t.Fatalf("no timerfd on this Linux machine: %+v", r)
	}
	// The median of 25 shrugs off a few preemptions of a shared machine;
	// the precise clock's overshoot is microseconds, a Go timer's up to 1 ms.
	if r.Precise > 2*time.Millisecond {
		t.Errorf("precise clock median overshoot %s, want well under 2ms", r.Precise)
	}
	// 50 sleeps of 1 ms: well under half a second even on a busy machine.
	if took > 500*time.Millisecond {
		t.Errorf("measuring took %s", took)
	}
}

// The clock's state reads on Linux, and its error bounds are not
// negative (the kernel's are unsigned microsecond counts).
func TestSyncState(t *testing.T) {
	s := SyncState()
	if s.Err != "" {
		t.Fatalf("adjtimex: %s", s.Err)
	}
	if s.MaxErrorMicros < 0 || s.EstErrorMicros < 0 {
		t.Fatalf("negative error bounds: %+v", s)
	}
	t.Logf("clock: %+v", s)
}

//go:build linux

package clock

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The once-taken pair maps Go's clock onto CLOCK_MONOTONIC: an instant
// converted through it agrees with a fresh clock_gettime. Were base read
// from another clock (CLOCK_REALTIME, CLOCK_BOOTTIME after a suspend) or
// mono from the wrong field, they would differ by far more than the
// bound, which only has to cover this test's own two readings.
func TestMonoBaseIsTheTimerfdsClock(t *testing.T) {
	p, ok := monoBase()
	if !ok {
		t.Skip("CLOCK_MONOTONIC cannot be read")
	}
	time.Sleep(20 * time.Millisecond) // a later instant than the pair's
	var ts unix.Timespec
	now := time.Now()
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		t.Fatal(err)
	}
	after := time.Since(now)
	want := time.Duration(ts.Nano())
	got := p.mono + now.Sub(p.base)
	if d := want - got; d < -5*time.Millisecond || d > 5*time.Millisecond+after {
		t.Fatalf("mono + (now − base) = %v, clock_gettime %v: %v apart", got, want, d)
	}
}

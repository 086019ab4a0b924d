package relink

import (
	"context"
	"testing"
	"time"
)

// A zero deadline, or one no earlier than ctx's, is the zero Deadline:
// it never passes (ctx ends first).
func TestDeadlineLeftToContext(t *testing.T) {
	for _, c := range []struct {
		name string
		ctx  time.Duration // ctx's deadline from now; 0: none
		at   time.Duration // the request's; 0: none
	}{
		{"no deadline at all", 0, 0},
		{"ctx's only", time.Minute, 0},
		{"ctx's first", time.Minute, time.Hour},
	} {
		ctx := context.Background()
		if c.ctx > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, c.ctx)
			defer cancel()
		}
		var at time.Time
		if c.at > 0 {
			at = time.Now().Add(c.at)
		}
		d := StartDeadline(ctx, at)
		if d.C() != nil || d.Passed() || !d.At().IsZero() {
			t.Errorf("%s: %+v, want the zero Deadline", c.name, d)
		}
		if got, _ := d.WithDeadline(ctx); got != ctx {
			t.Errorf("%s: WithDeadline made a context", c.name)
		}
		d.Stop()
	}
}

// A request's own deadline passes on time, on a reused timer too.
func TestDeadlinePasses(t *testing.T) {
	for range 3 {
		start := time.Now()
		d := StartDeadline(context.Background(), start.Add(20*time.Millisecond))
		if d.Passed() {
			t.Fatal("passed at once")
		}
		select {
		case <-d.C():
		case <-time.After(5 * time.Second):
			t.Fatal("did not pass within 5 s")
		}
		if el := time.Since(start); el < 20*time.Millisecond {
			t.Errorf("passed after %s, want 20ms", el)
		}
		if !d.Passed() {
			t.Error("Passed is false after C received")
		}
		ctx, cancel := d.WithDeadline(context.Background())
		if ctx.Err() == nil {
			t.Error("WithDeadline: a live context past the deadline")
		}
		cancel()
		d.Stop()
	}
}

// A stopped Deadline's timer, reused, delivers nothing stale.
func TestDeadlineStopNoStale(t *testing.T) {
	d := StartDeadline(context.Background(), time.Now().Add(time.Millisecond))
	time.Sleep(10 * time.Millisecond) // fired, unread
	d.Stop()
	d = StartDeadline(context.Background(), time.Now().Add(time.Hour))
	defer d.Stop()
	select {
	case <-d.C():
		t.Error("a stale tick from the timer's last use")
	case <-time.After(50 * time.Millisecond):
	}
}

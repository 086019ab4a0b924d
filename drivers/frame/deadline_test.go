package frame

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/runner-dev/runner/drivers"
	"github.com/runner-dev/runner/drivers/internal/drivertest"
)

// doKeep is drivertest.DoKeep: a request as the engine makes it for a
// drivers.DeadlineKeeper.
var doKeep = drivertest.DoKeep

// A request's own deadline (no deadline on its context) times it out, on
// time; its reply, after it, counts as late.
func TestRequestDeadlineKept(t *testing.T) {
	var d drivers.Driver = newDriver(t, stub(t, func(_ int, id uint32, p []byte) []byte {
		if id == 1 {
			time.Sleep(200 * time.Millisecond)
		}
		return response(id, p)
	}), "x")
	if _, ok := d.(drivers.DeadlineKeeper); !ok {
		t.Fatal("the frame driver is no DeadlineKeeper")
	}
	c, err := d.Dial(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	o := doKeep(c, 1, 50*time.Millisecond)
	if o.Class != drivers.Timeout || !errors.Is(o.Err, context.DeadlineExceeded) {
		t.Fatalf("1: %v %v, want a timeout", o.Class, o.Err)
	}
	if el := time.Since(start); el < 50*time.Millisecond || el > time.Second {
		t.Errorf("1 timed out after %s, want 50ms", el)
	}
	if o := doKeep(c, 2, 5*time.Second); o.Class != drivers.OK || o.Dialed != 0 {
		t.Errorf("2: %v dialed %d (%v)", o.Class, o.Dialed, o.Err)
	}
	if s := d.(drivers.StrayCounter).Strays(); s.Late != 1 {
		t.Errorf("strays %+v, want one late", s)
	}
	// A deadline already past: nothing is sent.
	if o := doKeep(c, 3, -time.Second); o.Class != drivers.Timeout || o.BytesOut != 0 {
		t.Errorf("3: %v out %d (%v), want a timeout before the send", o.Class, o.BytesOut, o.Err)
	}
}

package frame

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/runner-dev/runner/drivers"
	"github.com/runner-dev/runner/drivers/internal/drivertest"
)

// Accepted, then reset: the dial succeeds, and the probe finds the
// connection dead although its reader is blocked in Read on it.
func TestAliveAcceptedThenReset(t *testing.T) {
	url := serveTCP(t, func(_ int, nc net.Conn) {
		time.Sleep(20 * time.Millisecond) // after the client's connect returned
		drivertest.Reset(nc)
	})
	c, err := newDriver(t, url, "x").Dial(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := drivertest.WaitDead(c.(drivers.Prober)); err == nil {
		t.Fatal("Alive: nil for a connection the server reset")
	}
}

// A sound connection is alive, after a request too.
func TestAliveSound(t *testing.T) {
	url := stub(t, func(_ int, id uint32, p []byte) []byte { return response(id, p) })
	c, err := newDriver(t, url, "x").Dial(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p := c.(drivers.Prober)
	if err := p.Alive(); err != nil {
		t.Fatalf("Alive: %v", err)
	}
	if o := do(c, 1, time.Second); o.Class != drivers.OK {
		t.Fatalf("request: %v %v", o.Class, o.Err)
	}
	if err := p.Alive(); err != nil {
		t.Fatalf("Alive after a request: %v", err)
	}
}

package http

import (
	"bufio"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/runner-dev/runner/drivers"
	"github.com/runner-dev/runner/drivers/internal/drivertest"
	"github.com/runner-dev/runner/schema"
)

// Accepted, then reset: the dial succeeds, and the probe the engine takes
// at the barrier finds the connection dead.
func TestAliveAcceptedThenReset(t *testing.T) {
	s := newRawServer(t, func(c net.Conn, _ *bufio.Reader) {
		time.Sleep(20 * time.Millisecond) // after the client's connect returned
		drivertest.Reset(c)
	})
	c := dial(t, newDriver(t, schema.HTTP{}, "http://"+s.addr))
	if err := drivertest.WaitDead(c.(drivers.Prober)); !errors.Is(err, errClosedEarly) {
		t.Fatalf("Alive: %v, want %v", err, errClosedEarly)
	}
}

// A sound connection is alive, before a request and after one whose
// deadline has long passed; once the server closes it while idle, the
// probe says so (an expired deadline does not hide it).
func TestAliveSoundThenClosedIdle(t *testing.T) {
	closeNow := make(chan struct{})
	s := newRawServer(t, func(c net.Conn, br *bufio.Reader) {
		if _, err := readHead(br); err != nil {
			return
		}
		c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
		select {
		case <-closeNow:
		case <-time.After(10 * time.Second):
		}
	})
	c := dial(t, newDriver(t, schema.HTTP{}, "http://"+s.addr))
	p := c.(drivers.Prober)
	if err := p.Alive(); err != nil {
		t.Fatalf("Alive before any request: %v", err)
	}
	if o := do(c, 1, 50*time.Millisecond); o.Class != drivers.OK {
		t.Fatalf("request: %v %v", o.Class, o.Err)
	}
	time.Sleep(100 * time.Millisecond) // the request's deadline passes
	if err := p.Alive(); err != nil {
		t.Fatalf("Alive after a request: %v", err)
	}
	close(closeNow)
	if err := drivertest.WaitDead(p); !errors.Is(err, errClosedEarly) {
		t.Fatalf("Alive after the server closed it: %v, want %v", err, errClosedEarly)
	}
}

package websocket

import (
	"context"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/runner-dev/runner/drivers"
	"github.com/runner-dev/runner/drivers/internal/drivertest"
	"github.com/runner-dev/runner/schema"
)

// deaf is a gateway that accepts connections and never reads: a client's
// writes block once the socket buffers are full.
func deaf(t *testing.T) string {
	return stub(t, func(ctx context.Context, c *websocket.Conn) { <-ctx.Done() })
}

// bigMessage fills the socket buffers in a few writes.
const bigMessage = `{"id": {{seq}}, "pad": "{{bytes 1MiB}}"}`

// Requests blocked in their writes end as cancelled, promptly, when their
// context is cancelled.
func TestCancelBlockedWrite(t *testing.T) {
	d := newDriver(t, schema.WebSocket{Correlate: "id", Message: bigMessage, Timeout: schema.Duration(time.Minute)}, deaf(t))
	c, err := d.Dial(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	drivertest.CancelEndsBlockedWrites(t, c)
	if s := d.Strays(); len(s.Closes) != 0 {
		t.Errorf("our own close counted as the target's: %v", s.Closes)
	}
}

// A write that lasts the driver's timeout closes the connection on our
// side: the request ends as a write-stalled reset, not much later than
// the timeout, and no server close is counted. (The requests before it
// fill the socket buffers: written, they time out waiting for replies.)
func TestWriteStalls(t *testing.T) {
	const timeout = 300 * time.Millisecond
	d := newDriver(t, schema.WebSocket{Correlate: "id", Message: bigMessage, Timeout: schema.Duration(timeout)}, deaf(t))
	c, err := d.Dial(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var o drivers.Outcome
	var took time.Duration
	for seq := uint64(1); seq <= 64; seq++ {
		start := time.Now()
		o = do(c, seq, 100*time.Millisecond)
		took = time.Since(start)
		if o.Class != drivers.Timeout || o.Code != "" {
			break
		}
	}
	if o.Class != drivers.Reset || o.Code != "write-stalled" {
		t.Errorf("%v %q %v, want a write-stalled reset", o.Class, o.Code, o.Err)
	}
	if took < timeout || took > timeout+time.Second {
		t.Errorf("the stalled request took %s with a %s timeout", took, timeout)
	}
	if s := d.Strays(); len(s.Closes) != 0 {
		t.Errorf("our own close counted as the target's: %v", s.Closes)
	}
}

// With several requests in flight on a link whose target stopped
// reading, every one ends as the target's failure (a timeout or the
// stalled write's reset), never as cancelled: a request whose deadline
// passed while it waited for the writer used to close the link as if
// we had chosen to, booking the others as cancelled (not errors).
func TestWriteStall_InflightNotCancelled(t *testing.T) {
	const timeout = 300 * time.Millisecond
	d := newDriver(t, schema.WebSocket{Correlate: "id", Message: bigMessage, Timeout: schema.Duration(timeout)}, deaf(t))
	c, err := d.Dial(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	outs := make(chan drivers.Outcome, 16)
	for seq := uint64(1); seq <= 16; seq++ {
		go func() {
			outs <- c.Do(context.Background(), drivers.Request{Seq: seq, Deadline: time.Now().Add(timeout)})
		}()
	}
	for range 16 {
		select {
		case o := <-outs:
			if o.Class == drivers.Cancelled || o.Class == drivers.OK {
				t.Errorf("%v %q %v, want a timeout or reset", o.Class, o.Code, o.Err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a request did not end within 5 s")
		}
	}
}

package websocket

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/runner-dev/runner/drivers"
	"github.com/runner-dev/runner/drivers/internal/drivertest"
	"github.com/runner-dev/runner/schema"
)

// doKeep is drivertest.DoKeep: a request as the engine makes it for a
// drivers.DeadlineKeeper.
var doKeep = drivertest.DoKeep

// A request's own deadline (no deadline on its context) times it out, on
// time; its reply, after it, counts as late; without correlate the link
// is dropped, as after a context's deadline.
func TestRequestDeadlineKept(t *testing.T) {
	url := stub(t, func(ctx context.Context, c *websocket.Conn) {
		for {
			_, b, err := c.Read(ctx)
			if err != nil {
				return
			}
			id := string(idOf(t, b))
			if id == "1" {
				time.Sleep(200 * time.Millisecond)
			}
			c.Write(ctx, websocket.MessageText, []byte(`{"id":`+id+`}`))
		}
	})
	for _, correlate := range []string{"id", ""} {
		t.Run("correlate="+correlate, func(t *testing.T) {
			var d drivers.Driver = newDriver(t, schema.WebSocket{Correlate: correlate}, url)
			if _, ok := d.(drivers.DeadlineKeeper); !ok {
				t.Fatal("the WebSocket driver is no DeadlineKeeper")
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
			time.Sleep(300 * time.Millisecond) // the late reply arrives
			o = doKeep(c, 2, 5*time.Second)
			wantDialed := 0
			if correlate == "" {
				wantDialed = 1 // the link was dropped
			}
			if o.Class != drivers.OK || o.Dialed != wantDialed {
				t.Errorf("2: %v dialed %d (%v), want ok dialed %d", o.Class, o.Dialed, o.Err, wantDialed)
			}
			if s := d.(drivers.StrayCounter).Strays(); correlate != "" && s.Late != 1 {
				t.Errorf("strays %+v, want one late", s)
			}
		})
	}
}

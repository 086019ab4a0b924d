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

// Upgraded, then dropped: the handshake succeeds and the server drops
// the connection at once; the probe finds it dead. A sound one is alive.
func TestAliveAfterHandshake(t *testing.T) {
	// The stub drops a connection (CloseNow) when its handler returns.
	dropped := stub(t, func(context.Context, *websocket.Conn) {})
	sound := stub(t, func(ctx context.Context, ws *websocket.Conn) { ws.Read(ctx) })
	for _, c := range []struct {
		url  string
		dead bool
	}{{dropped, true}, {sound, false}} {
		conn, err := newDriver(t, schema.WebSocket{}, c.url).Dial(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		p := conn.(drivers.Prober)
		if c.dead {
			if err := drivertest.WaitDead(p); err == nil {
				t.Error("Alive: nil for a connection the server dropped after the handshake")
			}
		} else {
			time.Sleep(50 * time.Millisecond)
			if err := p.Alive(); err != nil {
				t.Errorf("Alive: %v for a sound connection", err)
			}
		}
		conn.Close()
	}
}

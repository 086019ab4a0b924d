package websocket

import (
	"context"
	"testing"

	"github.com/coder/websocket"

	"github.com/runner-dev/runner/drivers"
	"github.com/runner-dev/runner/drivers/internal/drivertest"
	"github.com/runner-dev/runner/schema"
)

// The message's {{data.NAME}} reaches the server from the row the data
// order picks; a random order without a seed, or a seed for another
// order, is refused at data_seed.
func TestDataOrders(t *testing.T) {
	var got drivertest.Received
	url := stub(t, func(ctx context.Context, c *websocket.Conn) {
		for {
			_, b, err := c.Read(ctx)
			if err != nil {
				return
			}
			got.Add(string(b))
			c.Write(ctx, websocket.MessageText, []byte("ok"))
		}
	})
	dir := drivertest.Users(t)
	drivertest.DataOrders(t, &got, func(order string, seed int64) (drivers.Driver, error) {
		return New(schema.WebSocket{Message: "{{data.user}}", Data: "u.csv", DataOrder: order, DataSeed: seed}, url, dir)
	})
	for _, cfg := range []schema.WebSocket{
		{Message: "{{data.user}}", Data: "u.csv", DataOrder: "random"},
		{Message: "{{data.user}}", Data: "u.csv", DataOrder: "connection", DataSeed: 9},
	} {
		_, err := New(cfg, url, dir)
		var ce *drivers.ConfigError
		if !asConfig(err, &ce) || ce.Key != "data_seed" {
			t.Errorf("%+v: %v, want a problem at data_seed", cfg, err)
		}
	}
}

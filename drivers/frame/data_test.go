package frame

import (
	"errors"
	"testing"

	"github.com/runner-dev/runner/drivers"
	"github.com/runner-dev/runner/drivers/internal/drivertest"
	"github.com/runner-dev/runner/schema"
)

// The payload's {{data.NAME}} reaches the server from the row the data
// order picks; an unknown order is refused at data_order.
func TestDataOrders(t *testing.T) {
	var got drivertest.Received
	url := stub(t, func(_ int, id uint32, payload []byte) []byte {
		got.Add(string(payload))
		return response(id, nil)
	})
	dir := drivertest.Users(t)
	drivertest.DataOrders(t, &got, func(order string, seed int64) (drivers.Driver, error) {
		return New(schema.Frame{Preset: "lkdf", Payload: "{{data.user}}", Data: "u.csv", DataOrder: order, DataSeed: seed}, url, dir)
	})
	_, err := New(schema.Frame{Preset: "lkdf", Payload: "{{data.user}}", Data: "u.csv", DataOrder: "sequential"}, url, dir)
	var ce *drivers.ConfigError
	if !errors.As(err, &ce) || ce.Key != "data_order" {
		t.Errorf("unknown order: %v, want a problem at data_order", err)
	}
}

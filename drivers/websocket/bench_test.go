package websocket

import (
	"context"
	"io"
	nethttp "net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/runner-dev/runner/drivers"
	"github.com/runner-dev/runner/drivers/internal/drivertest"
	"github.com/runner-dev/runner/schema"
	"github.com/runner-dev/runner/targets/targettest"
	"github.com/runner-dev/runner/targets/wsgateway"
)

// startGateway runs the reference WebSocket gateway on 127.0.0.1 with
// no service time, no jitter and no rate limit (every message is
// answered at once, ok) and returns its ws:// URL; it is stopped when
// the benchmark ends.
func startGateway(b *testing.B) string {
	cfg := wsgateway.Config{Listen: "127.0.0.1:0", Service: -1, Jitter: -1, Bucket: -1}
	addr, _ := targettest.Start(b, func(ctx context.Context, ready func(string)) error {
		return wsgateway.Serve(ctx, cfg, ready)
	})
	return "ws://" + addr
}

// startStub runs a WebSocket echo stub on 127.0.0.1 (coder/websocket,
// read through Conn.Reader into one reused buffer, contexts that never
// end) that allocates next to nothing per message, so a benchmark's
// allocs/op are the driver's. It returns its ws:// URL.
func startStub(b *testing.B) string {
	h := nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		ctx := context.Background()
		buf := make([]byte, 64<<10)
		for {
			typ, rd, err := c.Reader(ctx)
			if err != nil {
				return
			}
			n, err := io.ReadFull(rd, buf)
			if err != io.ErrUnexpectedEOF && err != io.EOF {
				return // too long for the stub, or broken
			}
			if err := c.Write(ctx, typ, buf[:n]); err != nil {
				return
			}
		}
	})
	srv := httptest.NewServer(h)
	b.Cleanup(srv.Close)
	return "ws" + strings.TrimPrefix(srv.URL, "http")
}

// benchConn dials one connection of a driver configured by cfg (message
// {"id": {{seq}}} when empty, replies paired by id) to url.
func benchConn(b *testing.B, url string, cfg schema.WebSocket) drivers.Conn {
	b.Helper()
	if cfg.Message == "" {
		cfg.Message = `{"id": {{seq}}}`
	}
	cfg.Correlate = "id"
	d, err := New(cfg, url, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	c, err := d.Dial(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return c
}

// BenchmarkDo is one message at a time on one connection, replies paired
// by id: render, write, read, correlate, over loopback to an echo stub
// that allocates next to nothing, so allocs/op are the driver's (0 is
// the goal on the record-and-correlate path). Requests are made as the
// engine makes them for a drivers.DeadlineKeeper.
func BenchmarkDo(b *testing.B) {
	drivertest.Serial(b, benchConn(b, startStub(b), schema.WebSocket{}))
}

// BenchmarkDoParallel is 16 messages in flight on one connection to the
// stub.
func BenchmarkDoParallel(b *testing.B) {
	drivertest.Parallel(b, benchConn(b, startStub(b), schema.WebSocket{}), 16)
}

// BenchmarkDoSuccessRule is BenchmarkDo with a success rule: every reply
// is decoded from JSON and judged by expr (the decode allocates: the
// rule reads a map).
func BenchmarkDoSuccessRule(b *testing.B) {
	drivertest.Serial(b, benchConn(b, startStub(b), schema.WebSocket{Success: "resp.id > 0"}))
}

// BenchmarkDoReferenceTarget is BenchmarkDo against `runner serve
// ws-gateway` (no service time, no rate limit) in the same process: its
// own work is in ns/op and allocs/op.
func BenchmarkDoReferenceTarget(b *testing.B) {
	drivertest.Serial(b, benchConn(b, startGateway(b), schema.WebSocket{}))
}

package frame

import (
	"bufio"
	"context"
	"encoding/binary"
	"io"
	"net"
	"testing"

	"github.com/runner-dev/runner/drivers"
	"github.com/runner-dev/runner/drivers/internal/drivertest"
	"github.com/runner-dev/runner/schema"
	"github.com/runner-dev/runner/targets/frametarget"
	"github.com/runner-dev/runner/targets/targettest"
)

// startTarget runs the reference frame target (echo) on 127.0.0.1 and
// returns its tcp:// URL; it is stopped when the benchmark ends.
func startTarget(b *testing.B) string {
	addr, _ := targettest.Start(b, func(ctx context.Context, ready func(string)) error {
		return frametarget.Serve(ctx, frametarget.Config{Listen: "127.0.0.1:0"}, ready)
	})
	return "tcp://" + addr
}

// startStub runs an LKDF echo stub on 127.0.0.1 that allocates nothing
// per frame: it reads each request (16-byte header, then the payload its
// length field gives), turns its type into the response type and writes
// it back. With it, a benchmark's allocs/op are the driver's alone.
func startStub(b *testing.B) string {
	return serveTCP(b, func(_ int, c net.Conn) {
		buf := make([]byte, 64<<10)
		br := bufio.NewReader(c)
		for {
			if _, err := io.ReadFull(br, buf[:16]); err != nil {
				return
			}
			n := int(binary.BigEndian.Uint32(buf[12:16]))
			if n > len(buf)-16 {
				return
			}
			if _, err := io.ReadFull(br, buf[16:16+n]); err != nil {
				return
			}
			buf[5] = 2 // LKDF response type
			if _, err := c.Write(buf[:16+n]); err != nil {
				return
			}
		}
	})
}

// benchConn dials one connection of an LKDF driver with a 64-byte
// payload carrying the sequence number to url.
func benchConn(b *testing.B, url string) drivers.Conn {
	b.Helper()
	d, err := New(schema.Frame{Preset: "lkdf", Payload: "seq={{seq}} {{bytes 48}}"}, url, b.TempDir())
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

// BenchmarkDo is one request at a time on one connection: render,
// write, read, correlate the reply, over loopback to a stub that
// allocates nothing, so allocs/op are the driver's (0 is the goal: no
// allocation per request on the record-and-correlate path). Requests are
// made as the engine makes them for a drivers.DeadlineKeeper.
func BenchmarkDo(b *testing.B) { drivertest.Serial(b, benchConn(b, startStub(b))) }

// BenchmarkDoParallel is 16 requests in flight on one connection to the
// stub, made as BenchmarkDo's are.
func BenchmarkDoParallel(b *testing.B) { drivertest.Parallel(b, benchConn(b, startStub(b)), 16) }

// BenchmarkDoReferenceTarget is BenchmarkDo against `runner serve frame`
// (echo) in the same process: its own work is in ns/op and allocs/op.
func BenchmarkDoReferenceTarget(b *testing.B) {
	drivertest.Serial(b, benchConn(b, startTarget(b)))
}

package frame

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/drivers"
	"github.com/runner-dev/runner/drivers/internal/drivertest"
	"github.com/runner-dev/runner/schema"
)

// lkdfX is the lkdf preset sending "x".
var lkdfX = schema.Frame{Preset: "lkdf", Payload: "x"}

// A reply that stops in the middle of its frame (the header declares 10
// bytes, 5 come, then nothing) leaves the stream's framing unknown: the
// request it answers times out, and the connection is closed and
// re-dialled, not kept for every later request to wait out its own
// timeout on it (51 timeouts in 10 s against a fake memcached). Cut in
// the payload and in the header, with the request's deadline kept by the
// driver (DoKeep) or by its context (Do).
func TestStalledReplyRedials(t *testing.T) {
	for _, c := range []struct {
		name string
		cut  []byte
		do   func(drivers.Conn, uint64, time.Duration) drivers.Outcome
	}{
		{"mid payload", append(lkdfHeader(LKDFMagic, 1, 2, 1, 10), "xxxxx"...), drivertest.DoKeep},
		{"mid header", lkdfHeader(LKDFMagic, 1, 2, 1, 10)[:7], drivertest.Do},
	} {
		t.Run(c.name, func(t *testing.T) {
			url := stub(t, func(conn int, id uint32, p []byte) []byte {
				if conn == 0 && id == 1 {
					return c.cut // and nothing more on this connection
				}
				return response(id, p)
			})
			d, conn := dialFrame(t, lkdfX, url, t.TempDir())
			o := c.do(conn, 1, 400*time.Millisecond)
			if o.Class != drivers.Timeout || o.Err == nil || !strings.Contains(o.Err.Error(), "stood still in the middle of its frame") {
				t.Fatalf("stalled request: %v %q %v, want a timeout that says the reply stood still", o.Class, o.Code, o.Err)
			}
			for seq := uint64(2); seq <= 4; seq++ {
				o = c.do(conn, seq, 2*time.Second)
				if o.Class != drivers.OK || o.Dialed != map[bool]int{true: 1, false: 0}[seq == 2] {
					t.Errorf("request %d after the stall: %v %q dialled %d (%v); want ok, the first re-dialling once", seq, o.Class, o.Code, o.Dialed, o.Err)
				}
			}
			if s := d.Strays(); len(s.Closes) != 0 {
				t.Errorf("closes %v: the client closed it, not the target", s.Closes)
			}
		})
	}
}

// A large reply still arriving when its request's deadline passes keeps
// the connection: only a frame that stood still closes it.
func TestSlowReplyKeepsConnection(t *testing.T) {
	url := serveTCP(t, func(n int, nc net.Conn) {
		frames(nc, 16, 12, func(hdr, p []byte) bool {
			id := uint32(hdr[8])<<24 | uint32(hdr[9])<<16 | uint32(hdr[10])<<8 | uint32(hdr[11])
			if id != 1 {
				nc.Write(response(id, p))
				return true
			}
			// 40 bytes, one every 20 ms: 800 ms, never quiet for 100 ms.
			nc.Write(lkdfHeader(LKDFMagic, 1, 2, 1, 40))
			for range 40 {
				time.Sleep(20 * time.Millisecond)
				if _, err := nc.Write([]byte{'y'}); err != nil {
					return false
				}
			}
			return true
		})
	})
	_, conn := dialFrame(t, lkdfX, url, t.TempDir())
	if o := drivertest.DoKeep(conn, 1, 400*time.Millisecond); o.Class != drivers.Timeout || strings.Contains(o.Err.Error(), "stood still") {
		t.Fatalf("slow request: %v %q %v, want a plain timeout", o.Class, o.Code, o.Err)
	}
	if o := drivertest.DoKeep(conn, 2, 3*time.Second); o.Class != drivers.OK || o.Dialed != 0 {
		t.Errorf("after a slow reply: %v %q dialled %d (%v), want ok on the same connection", o.Class, o.Code, o.Dialed, o.Err)
	}
}

package http

import (
	"bufio"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/drivers"
	"github.com/runner-dev/runner/schema"
)

// TestIssue12_HugeStatusLineMemoryBounded: a hostile target answers
// every request with a status line (or a header line) of 4 MiB and no
// line break. The request ends bad-frame naming the 1 MiB limit, and the
// client reads past the line without building it: it used to copy the
// line into a slice grown to the 1 MiB cap for every request (about
// 2 MiB allocated per request; ~300 MiB RSS at 16 connections of a
// 100 MB line). Allowed here: 256 KiB per request, dials included.
func TestIssue12_HugeStatusLineMemoryBounded(t *testing.T) {
	const requests = 8
	junk := []byte(strings.Repeat("a", 4<<20))
	for _, c := range []struct{ name, head string }{
		{"status line", "HTTP/1.1 200 OK"},
		{"header line", "HTTP/1.1 200 OK\r\nX-Big: "},
	} {
		t.Run(c.name, func(t *testing.T) {
			head := []byte(c.head)
			s := newRawServer(t, func(nc net.Conn, br *bufio.Reader) {
				if _, err := readHead(br); err != nil {
					return
				}
				nc.SetWriteDeadline(time.Now().Add(10 * time.Second))
				if _, err := nc.Write(head); err != nil {
					return
				}
				nc.Write(junk) // ends when the client closes
			})
			d := newDriver(t, schema.HTTP{}, "http://"+s.addr)
			conn := dial(t, d)
			check := func(out drivers.Outcome) {
				t.Helper()
				if out.Class != drivers.BadFrame || out.Responded || out.Err == nil || !strings.Contains(out.Err.Error(), "1 MiB") {
					t.Fatalf("%+v, want bad-frame naming the 1 MiB limit", out)
				}
				if out.BytesIn > MaxHeaderBytes+64<<10 {
					t.Errorf("read %d bytes of a head capped at %d", out.BytesIn, MaxHeaderBytes)
				}
			}
			check(do(conn, 1, 10*time.Second)) // warm up: first dial, buffers
			var m0, m1 runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&m0)
			for i := 2; i < 2+requests; i++ {
				check(do(conn, uint64(i), 10*time.Second))
			}
			runtime.ReadMemStats(&m1)
			if per := (m1.TotalAlloc - m0.TotalAlloc) / requests; per > 256<<10 {
				t.Errorf("allocated %d KiB per request reading a capped head, want ≤ 256 KiB", per>>10)
			}
		})
	}
}

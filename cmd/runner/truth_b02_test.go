package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// throttledServer answers each request once it has read the whole body,
// reading at rate bytes/s through a 16 KiB receive buffer, so a large body
// takes size/rate seconds to leave the client (longer if the client is
// slow to send it). It stops with the test. took returns how long each
// exchange lasted at the server: from its request line to its response.
func throttledServer(t *testing.T, rate int) (url string, took func() []time.Duration) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { close(done); ln.Close() })
	var mu sync.Mutex
	var durations []time.Duration
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.(*net.TCPConn).SetReadBuffer(16 << 10)
				br := bufio.NewReaderSize(c, 4096)
				for {
					length := 0
					var head time.Time
					for {
						line, err := br.ReadString('\n')
						if head.IsZero() {
							head = time.Now()
						}
						if err != nil {
							return
						}
						if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok && strings.EqualFold(k, "Content-Length") {
							length, _ = strconv.Atoi(strings.TrimSpace(v))
						}
						if line == "\r\n" {
							break
						}
					}
					const chunk = 16 << 10
					pause := time.Duration(float64(chunk) / float64(rate) * float64(time.Second))
					start := time.Now()
					for read := 0; read < length; {
						n, err := io.CopyN(io.Discard, br, int64(min(chunk, length-read)))
						read += int(n)
						if err != nil {
							return
						}
						// Pace against the start, so sleeps that run late
						// do not add up.
						if ahead := time.Until(start.Add(time.Duration(read/chunk) * pause)); ahead > 0 {
							select {
							case <-time.After(ahead):
							case <-done:
								return
							}
						}
					}
					mu.Lock()
					durations = append(durations, time.Since(head))
					mu.Unlock()
					if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"); err != nil {
						return
					}
				}
			}()
		}
	}()
	return "http://" + ln.Addr().String(), func() []time.Duration {
		mu.Lock()
		defer mu.Unlock()
		return append([]time.Duration(nil), durations...)
	}
}

// B02, the defect pinned: the latency clock started after the request was
// written, so a slow send reads as a fast response.
//
// TestField_B02_ClockStartsBeforeTheSend: a 1 MiB POST to a server that
// reads at 512 KiB/s takes 2.0 s to leave the client, and the server
// answers as soon as the last byte is read. The response time (= service
// time in the closed model) of each of 5 requests is the exchange's
// duration at the server (request line to response), within 1 ms below
// and 300 ms above it, and at least 1.8 s: never near 0, the clock starts
// before the first byte is written, not after the write returns (wrk's
// bug). On a loaded machine the client's writes are woken late and the
// exchange lasts longer than 2 s (6.3 s was seen under the race detector
// beside other packages' tests): the server's own clock is the truth. The
// first-byte split shows where the time sits: before the first response
// byte.
//
// Naive measurement: a clock started after the write returns sees only
// the server's reply to the last 16 KiB or so, well under 100 ms: 1/20 of
// the truth; the test requires at least 1.8 s.
func TestField_B02_ClockStartsBeforeTheSend(t *testing.T) {
	base, took := throttledServer(t, 512<<10)
	p := scenario(t, "b02.yaml", fmt.Sprintf(`version: 1
name: b02
target: {url: %q}
driver:
  http: {method: POST, path: /upload, body_size: 1MiB, timeout: 10s}
phases:
  - {name: upload, closed: {connections: 1}, requests: 5}
assert: [errors == 0]
`, base))
	js := filepath.Join(t.TempDir(), "r.json")
	code, out, stderr := cli(t, "run", "--log-level", "disabled", "--json", js, p)
	if code != exitPass {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
	ph := readJSON(t, js)["result"].(map[string]any)["phases"].([]any)[0].(map[string]any)
	if ok := fcCount(t, ph, "ok"); ok != 5 {
		t.Fatalf("ok %d, want 5", ok)
	}
	server := took()
	if len(server) != 5 {
		t.Fatalf("the server saw %d exchanges, want 5", len(server))
	}
	slices.Sort(server)
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	for _, c := range []struct {
		q     string
		truth time.Duration
	}{{"min", server[0]}, {"p50", server[2]}, {"max", server[4]}} {
		got := jsonNum(t, ph, "metrics", "response_time", c.q+"_ms")
		if got < ms(c.truth)-1 || got > ms(c.truth)+300 || got < 1800 {
			t.Errorf("response time %s = %.1f ms, want the server's %.1f ms (−1/+300), and ≥ 1800", c.q, got, ms(c.truth))
		}
	}
	fb := jsonNum(t, ph, "summary", "first_byte", "min_ns") / 1e6
	if fb < 1800 {
		t.Errorf("first byte after %.1f ms, want ≈ 2000: the time must sit before the first response byte", fb)
	}
	t.Logf("B02: response time p50 %.1f ms, first byte min %.1f ms", jsonNum(t, ph, "metrics", "response_time", "p50_ms"), fb)
}

package execute

import (
	"bufio"
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/schema"
)

// memcachedStub answers each connection's first line with reply and
// returns the tcp:// URL and the first line it read; stopped at the end
// of the test.
func memcachedStub(t *testing.T, reply string) (string, <-chan string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		line, _ := bufio.NewReader(c).ReadString('\n')
		got <- line
		c.Write([]byte(reply))
	}()
	t.Cleanup(func() { ln.Close() })
	return "tcp://" + ln.Addr().String(), got
}

// reconcile.fetch.memcached_stats sends "stats\r\n" to the target's
// address and reads its STAT lines; memcached's refusal, and nothing
// listening, are errors that say so.
func TestFetchMemcachedStats(t *testing.T) {
	url, sent := memcachedStub(t, "STAT cmd_get 7\r\nSTAT version 1.6.18\r\nEND\r\n")
	fetch := fetchCounters(url, schema.Fetch{MemcachedStats: true}, nil, nil, nil)
	m, err := fetch(context.Background())
	if err != nil || len(m) != 1 || m["cmd_get"] != 7 {
		t.Errorf("%v %v, want cmd_get 7 alone", m, err)
	}
	if line := <-sent; line != "stats\r\n" {
		t.Errorf("sent %q, want the stats command", line)
	}
	url, _ = memcachedStub(t, "ERROR\r\n")
	if _, err := fetchCounters(url, schema.Fetch{MemcachedStats: true}, nil, nil, nil)(context.Background()); err == nil || !strings.Contains(err.Error(), `memcached refused stats: "ERROR"`) {
		t.Errorf("refused: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	if _, err := fetchCounters("tcp://"+addr, schema.Fetch{MemcachedStats: true}, nil, nil, nil)(context.Background()); err == nil || !strings.Contains(err.Error(), "connection refused: nothing listens there") {
		t.Errorf("nothing listening: %v", err)
	}
}

// A memcached started with -B binary never answers the text command
// stats (it waits for the rest of a 24-byte header): the fetch's timeout
// says that memcached_stats needs the text protocol, and the run's
// interrupt (its context cancelled) ends a fetch under way at once
// rather than at the 5 s timeout.
func TestMemcachedStatsSilentTarget(t *testing.T) {
	silent := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				t.Cleanup(func() { c.Close() })
			}
		}()
		return "tcp://" + ln.Addr().String()
	}
	fetch := fetchCounters(silent(), schema.Fetch{MemcachedStats: true}, nil, nil, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := fetch(ctx); err == nil || !strings.Contains(err.Error(), "memcached_stats needs memcached's text protocol") || !strings.Contains(err.Error(), "-B auto") {
		t.Errorf("timed out: %v", err)
	}
	cctx, stop := context.WithCancelCause(context.Background())
	defer stop(nil)
	errc := make(chan error, 1)
	go func() { _, err := fetch(cctx); errc <- err }()
	time.Sleep(100 * time.Millisecond) // the fetch waits for the reply
	stop(errors.New("interrupted"))
	select {
	case err := <-errc:
		if err == nil || !strings.Contains(err.Error(), "interrupted") || strings.Contains(err.Error(), "text protocol") {
			t.Errorf("cancelled: %v, want the interrupt as the cause", err)
		}
	case <-time.After(4 * time.Second): // under the fetch's own 5 s
		t.Fatal("the fetch did not end when its context was cancelled")
	}
}

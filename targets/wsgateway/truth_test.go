package wsgateway

import (
	"errors"
	"io"
	"strconv"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// TestCloseAfterClean: after the 3rd reply the gateway sends Close 1000
// "bye"; later messages are not processed; the client's answer makes the
// close clean.
func TestCloseAfterClean(t *testing.T) {
	addr := start(t, Config{Service: 5 * time.Millisecond, CloseAfter: 3})
	c := dial(t, addr, "/")
	for i := 1; i <= 5; i++ {
		send(t, c, `{"id":`+strconv.Itoa(i)+`}`)
	}
	got := map[string]bool{}
	for i := 0; i < 3; i++ {
		got[mustRecv(t, c)] = true
	}
	for i := 1; i <= 3; i++ {
		if s := `{"id":` + strconv.Itoa(i) + `,"ok":true}`; !got[s] {
			t.Errorf("no reply %s among %v", s, got)
		}
	}
	// Read answers the Close frame and reports it.
	_, s, err := recv(c, 5*time.Second)
	var ce websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.StatusNormalClosure || ce.Reason != "bye" {
		t.Fatalf("after 3 replies: %q, %v; want close 1000 \"bye\"", s, err)
	}
	m := waitStats(t, addr, func(m map[string]int64) bool { return m["closes_clean"] == 1 })
	if m["closes_sent"] != 1 || m["closes_abrupt"] != 0 || m["messages"] != 3 || m["ok"] != 3 || m["replies"] != 3 {
		t.Errorf("stats %v: want closes_sent 1, closes_clean 1, messages 3, ok 3, replies 3", m)
	}
}

// TestCloseAfterNoAnswer: a client that does not answer the Close (it
// stops reading) is cut after 1 s: closes_sent without closes_clean.
func TestCloseAfterNoAnswer(t *testing.T) {
	addr := start(t, Config{Service: -1, Jitter: -1, CloseAfter: 1})
	c := dial(t, addr, "/")
	send(t, c, `{"id":1}`)
	m := waitStats(t, addr, func(m map[string]int64) bool { return m["closes_sent"] == 1 && m["connections"] == 1 })
	time.Sleep(1500 * time.Millisecond) // past the 1 s wait for our Close
	m = stats(t, addr)
	if m["closes_sent"] != 1 || m["closes_clean"] != 0 {
		t.Errorf("stats %v: want closes_sent 1, closes_clean 0", m)
	}
	// The reply did leave before the Close.
	if s := mustRecv(t, c); s != `{"id":1,"ok":true}` {
		t.Errorf("reply %s", s)
	}
}

// TestCloseAfterAbrupt: the TCP connection drops after the 2nd reply,
// with no Close frame.
func TestCloseAfterAbrupt(t *testing.T) {
	addr := start(t, Config{Service: time.Millisecond, CloseAfter: 2, CloseAbrupt: true})
	c := dial(t, addr, "/")
	send(t, c, `{"id":1}`)
	send(t, c, `{"id":2}`)
	mustRecv(t, c)
	mustRecv(t, c)
	_, s, err := recv(c, 5*time.Second)
	if err == nil || websocket.CloseStatus(err) != -1 {
		t.Fatalf("after 2 replies: %q, %v; want an abnormal end (no Close frame)", s, err)
	}
	if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Logf("abrupt end seen as %v", err)
	}
	m := waitStats(t, addr, func(m map[string]int64) bool { return m["closes_abrupt"] == 1 })
	if m["closes_sent"] != 0 || m["closes_clean"] != 0 || m["messages"] != 2 {
		t.Errorf("stats %v", m)
	}
}

// TestCloseAfterSerial: the close waits for the serial queue.
func TestCloseAfterSerial(t *testing.T) {
	addr := start(t, Config{CloseAfter: 3})
	c := dial(t, addr, "/serial")
	for i := 1; i <= 4; i++ {
		send(t, c, `{"id":`+strconv.Itoa(i)+`}`)
	}
	for i := 1; i <= 3; i++ {
		if s, want := mustRecv(t, c), `{"id":`+strconv.Itoa(i)+`,"ok":true}`; s != want {
			t.Fatalf("reply %s, want %s", s, want)
		}
	}
	if _, _, err := recv(c, 5*time.Second); websocket.CloseStatus(err) != websocket.StatusNormalClosure {
		t.Fatalf("after 3 replies: %v, want close 1000", err)
	}
	waitStats(t, addr, func(m map[string]int64) bool {
		return m["closes_clean"] == 1 && m["serial_messages"] == 3 && m["ok"] == 3
	})
}

// TestNeverAnswer: messages are counted, never answered.
func TestNeverAnswer(t *testing.T) {
	addr := start(t, Config{NeverAnswer: true})
	c := dial(t, addr, "/")
	s := dial(t, addr, "/serial")
	for i := 0; i < 5; i++ {
		send(t, c, `{"id":1}`)
		send(t, s, `{"id":1}`)
	}
	if _, got, err := recv(c, 300*time.Millisecond); err == nil {
		t.Errorf("got a reply %s", got)
	}
	m := waitStats(t, addr, func(m map[string]int64) bool { return m["messages"] == 10 })
	if m["dropped_replies"] != 10 || m["ok"] != 0 || m["replies"] != 0 || m["serial_messages"] != 5 {
		t.Errorf("stats %v: want messages 10, dropped_replies 10, no replies", m)
	}
}

// TestReorder: batches of 3 leave reversed; a partial batch after 50 ms.
func TestReorder(t *testing.T) {
	addr := start(t, Config{Bucket: -1, Service: -1, Jitter: -1, Reorder: 3})
	c := dial(t, addr, "/")
	for i := 1; i <= 7; i++ {
		send(t, c, `{"id":`+strconv.Itoa(i)+`}`)
	}
	for _, id := range []int{3, 2, 1, 6, 5, 4} {
		if s, want := mustRecv(t, c), `{"id":`+strconv.Itoa(id)+`,"ok":true}`; s != want {
			t.Errorf("reply %s, want %s", s, want)
		}
	}
	t0 := time.Now()
	if s := mustRecv(t, c); s != `{"id":7,"ok":true}` {
		t.Errorf("partial batch: %s", s)
	}
	if d := time.Since(t0); d > 3*time.Second {
		t.Errorf("partial batch after %s", d)
	}
	// Bad messages are not held.
	send(t, c, `{}`)
	if s := mustRecv(t, c); s != `{"ok":false,"code":"BAD_REQUEST"}` {
		t.Errorf("bad message reply %s", s)
	}
}

// TestReorderPartialWait: a lone reply waits the 50 ms flush.
func TestReorderPartialWait(t *testing.T) {
	addr := start(t, Config{Bucket: -1, Service: -1, Jitter: -1, Reorder: 5})
	c := dial(t, addr, "/")
	t0 := time.Now()
	send(t, c, `{"id":1}`)
	mustRecv(t, c)
	if d := time.Since(t0); d < reorderFlush {
		t.Errorf("lone reply after %s, want %s or more", d, reorderFlush)
	}
}

// TestDuplicate: every 2nd reply is sent twice.
func TestDuplicate(t *testing.T) {
	addr := start(t, Config{Bucket: -1, Service: -1, Jitter: -1, DuplicateEvery: 2})
	c := dial(t, addr, "/")
	for i := 1; i <= 4; i++ {
		send(t, c, `{"id":`+strconv.Itoa(i)+`}`)
	}
	for _, id := range []int{1, 2, 2, 3, 4, 4} {
		if s, want := mustRecv(t, c), `{"id":`+strconv.Itoa(id)+`,"ok":true}`; s != want {
			t.Errorf("reply %s, want %s", s, want)
		}
	}
	expect(t, addr, map[string]int64{"duplicates_sent": 2, "replies": 6, "ok": 4, "messages": 4})
}

// TestUnknownID: after every 2nd reply an extra reply to an unknown id.
func TestUnknownID(t *testing.T) {
	addr := start(t, Config{Bucket: -1, Service: -1, Jitter: -1, UnknownIDEvery: 2})
	c := dial(t, addr, "/")
	for i := 1; i <= 4; i++ {
		send(t, c, `{"id":`+strconv.Itoa(i)+`}`)
	}
	for _, want := range []string{`{"id":1,"ok":true}`, `{"id":2,"ok":true}`, `{"id":"unknown-2","ok":true}`,
		`{"id":3,"ok":true}`, `{"id":4,"ok":true}`, `{"id":"unknown-4","ok":true}`} {
		if s := mustRecv(t, c); s != want {
			t.Errorf("reply %s, want %s", s, want)
		}
	}
	expect(t, addr, map[string]int64{"unknown_sent": 2, "replies": 6, "ok": 4, "messages": 4})
}

// TestSlow: every 3rd message (gateway-wide) waits a further 300 ms.
func TestSlow(t *testing.T) {
	const slow = 300 * time.Millisecond
	addr := start(t, Config{Bucket: -1, Service: -1, Jitter: -1, SlowEvery: 3, SlowDelay: slow})
	c := dial(t, addr, "/")
	t0 := time.Now()
	for i := 1; i <= 4; i++ {
		send(t, c, `{"id":`+strconv.Itoa(i)+`}`)
	}
	for _, id := range []int{1, 2, 4} {
		if s, want := mustRecv(t, c), `{"id":`+strconv.Itoa(id)+`,"ok":true}`; s != want {
			t.Errorf("reply %s, want %s", s, want)
		}
	}
	if d := time.Since(t0); d >= slow {
		t.Logf("fast replies took %s (slow machine?)", d)
	}
	if s := mustRecv(t, c); s != `{"id":3,"ok":true}` {
		t.Errorf("slow reply %s", s)
	}
	if d := time.Since(t0); d < slow {
		t.Errorf("slow reply after %s, want %s or more", d, slow)
	}
	// Numbering is gateway-wide: the 6th message, on another connection.
	c2 := dial(t, addr, "/")
	send(t, c2, `{"id":5}`)
	mustRecv(t, c2)
	t1 := time.Now()
	send(t, c2, `{"id":6}`)
	mustRecv(t, c2)
	if d := time.Since(t1); d < slow {
		t.Errorf("6th message answered after %s, want %s or more", d, slow)
	}
}

// TestSlowRateLimited: a limited reply due to be slow waits too.
func TestSlowRateLimited(t *testing.T) {
	const slow = 200 * time.Millisecond
	addr := start(t, Config{Bucket: 1, Refill: 0.001, Service: -1, Jitter: -1, SlowEvery: 2, SlowDelay: slow})
	c := dial(t, addr, "/")
	t0 := time.Now()
	send(t, c, `{"id":1}`)
	send(t, c, `{"id":2}`)
	if s := mustRecv(t, c); s != `{"id":1,"ok":true}` {
		t.Errorf("reply %s", s)
	}
	if s := mustRecv(t, c); s != `{"id":2,"ok":false,"code":"RATE_LIMITED"}` {
		t.Errorf("reply %s", s)
	}
	if d := time.Since(t0); d < slow {
		t.Errorf("slow limited reply after %s, want %s or more", d, slow)
	}
}

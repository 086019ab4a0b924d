package http

import (
	"bufio"
	"fmt"
	"net"
	nethttp "net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runner-dev/runner/drivers"
	"github.com/runner-dev/runner/drivers/internal/drivertest"
	"github.com/runner-dev/runner/schema"
)

// cookieServer is a net/http server on 127.0.0.1 for path /step/SEQ
// (or /admin/step/SEQ):
// step 1 logs in (Set-Cookie session=u<n>, n counting logins, and a
// cookie for /admin only), steps 2 and up answer 200 with the cookies
// they were sent in X-Got, or 401 without a session; step 9 answers 500
// and changes the session to "bad"; step 10 deletes it (Max-Age=0).
// got lists the Cookie header of every request, in order.
type cookieServer struct {
	*server
	logins atomic.Int64
	got    drivertest.Received
}

func newCookieServer(t *testing.T) *cookieServer {
	cs := &cookieServer{}
	cs.server = newServer(t, func(w nethttp.ResponseWriter, r *nethttp.Request) {
		cs.got.Add(strings.Join(r.Header.Values("Cookie"), " | "))
		switch strings.TrimPrefix(r.URL.Path, "/admin") {
		case "/step/1":
			nethttp.SetCookie(w, &nethttp.Cookie{Name: "session", Value: fmt.Sprint("u", cs.logins.Add(1)), Path: "/", HttpOnly: true})
			nethttp.SetCookie(w, &nethttp.Cookie{Name: "admin", Value: "yes", Path: "/admin"})
		case "/step/9":
			nethttp.SetCookie(w, &nethttp.Cookie{Name: "session", Value: "bad", Path: "/"})
			w.WriteHeader(500)
		case "/step/10":
			nethttp.SetCookie(w, &nethttp.Cookie{Name: "session", Path: "/", MaxAge: -1})
		default:
			if _, err := r.Cookie("session"); err != nil {
				w.WriteHeader(401)
			}
		}
	})
	return cs
}

// take returns the Cookie headers seen since the last take.
func (cs *cookieServer) take() []string { return cs.got.Take() }

// With cookies on, a virtual user (one Conn) logs in and sends its
// session cookie with its later requests, and only where its Path
// allows; another Conn of the same driver has a jar of its own; a cookie
// a 500 response sets is stored all the same; Max-Age=0 deletes one.
func TestCookiesPerVirtualUser(t *testing.T) {
	cs := newCookieServer(t)
	d := newDriver(t, schema.HTTP{Path: "/step/{{seq}}", Cookies: true}, cs.URL)
	a, b := dial(t, d), dial(t, d)
	expect := func(c drivers.Conn, seq uint64, class drivers.Class, cookie string) {
		t.Helper()
		out := do(c, seq, 5*time.Second)
		got := cs.take()
		if out.Class != class || len(got) != 1 || got[0] != cookie {
			t.Errorf("request %d: %s %s, the server saw Cookie %q; want %s and %q", seq, out.Class, out.Code, got, class, cookie)
		}
	}
	expect(a, 2, drivers.Status, "")       // not logged in yet: 401
	expect(a, 1, drivers.OK, "")           // log in: session=u1
	expect(a, 2, drivers.OK, "session=u1") // admin=yes stays on /admin
	expect(b, 3, drivers.Status, "")       // b is another user: no cookie
	expect(b, 1, drivers.OK, "")           // b logs in: session=u2
	expect(b, 4, drivers.OK, "session=u2")
	expect(a, 5, drivers.OK, "session=u1") // a still has its own
	expect(a, 9, drivers.Status, "session=u1")
	expect(a, 6, drivers.OK, "session=bad") // set by a 500, kept
	expect(a, 10, drivers.OK, "session=bad")
	expect(a, 7, drivers.Status, "") // deleted
	expect(b, 8, drivers.OK, "session=u2")
}

// The jar files a request under the target URL's path prefix and the
// request's path: behind /admin the cookie scoped to /admin is sent too,
// first (the longer path, RFC 6265 §5.4).
func TestCookiePath(t *testing.T) {
	cs := newCookieServer(t)
	c := dial(t, newDriver(t, schema.HTTP{Path: "/step/{{seq}}", Cookies: true}, cs.URL+"/admin"))
	for seq := uint64(1); seq <= 2; seq++ {
		if out := do(c, seq, 5*time.Second); out.Class != drivers.OK {
			t.Fatalf("request %d: %s %s", seq, out.Class, out.Code)
		}
	}
	if got, want := strings.Join(cs.take(), ","), ",admin=yes; session=u1"; got != want {
		t.Errorf("Cookie headers %q, want %q", got, want)
	}
}

// A virtual user keeps its cookies across the re-dials of keep_alive:
// false: every request is a new TCP connection, the session goes on.
func TestCookiesSurviveRedials(t *testing.T) {
	cs := newCookieServer(t)
	d := newDriver(t, schema.HTTP{Path: "/step/{{seq}}", Cookies: true, KeepAlive: boolp(false)}, cs.URL)
	c := dial(t, d)
	for seq := uint64(1); seq <= 4; seq++ {
		if out := do(c, seq, 5*time.Second); out.Class != drivers.OK {
			t.Fatalf("request %d: %s %s %v", seq, out.Class, out.Code, out.Err)
		}
	}
	if got, want := strings.Join(cs.take(), ","), ",session=u1,session=u1,session=u1"; got != want {
		t.Errorf("Cookie headers %q, want %q", got, want)
	}
	if n := cs.accepted.Load(); n != 4 {
		t.Errorf("%d connections accepted, want 4 (one per request)", n)
	}
}

// Without cookies: true the driver stores nothing and sends no Cookie.
func TestCookiesOffByDefault(t *testing.T) {
	cs := newCookieServer(t)
	c := dial(t, newDriver(t, schema.HTTP{Path: "/step/{{seq}}"}, cs.URL))
	do(c, 1, 5*time.Second)
	if out := do(c, 2, 5*time.Second); out.Class != drivers.Status || out.Code != "401" {
		t.Errorf("after a login without a jar: %s %s, want status 401", out.Class, out.Code)
	}
	if got := cs.take(); strings.Join(got, "") != "" {
		t.Errorf("Cookie headers sent: %q", got)
	}
}

// A Set-Cookie line longer than the 16 KiB read buffer is read whole and
// stored; a Cookie header in the scenario is refused with cookies on.
func TestLongSetCookieAndHeaderConflict(t *testing.T) {
	value := strings.Repeat("v", 20<<10)
	s := newRawServer(t, func(c net.Conn, br *bufio.Reader) {
		for {
			line, err := wholeHead(br)
			if err != nil {
				return
			}
			if strings.Contains(line, "/1 ") {
				fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nSet-Cookie: big=%s; Path=/\r\nContent-Length: 0\r\n\r\n", value)
				continue
			}
			status := "204 No Content"
			if !strings.Contains(line, "Cookie: big="+value) {
				status = "400 Bad Request"
			}
			fmt.Fprintf(c, "HTTP/1.1 %s\r\nContent-Length: 0\r\n\r\n", status)
		}
	})
	c := dial(t, newDriver(t, schema.HTTP{Path: "/{{seq}}", Cookies: true}, "http://"+s.addr))
	for seq := uint64(1); seq <= 2; seq++ {
		if out := do(c, seq, 5*time.Second); out.Class != drivers.OK {
			t.Fatalf("request %d: %s %s %v", seq, out.Class, out.Code, out.Err)
		}
	}
	_, err := New(schema.HTTP{Cookies: true, Headers: map[string]string{"cookie": "a=b"}}, "http://127.0.0.1:1", "")
	if ps := problemKeys(err); err == nil || len(ps) != 1 || ps[0] != "headers.cookie" || !strings.Contains(err.Error(), "cookie jar") {
		t.Errorf("Cookie header with cookies on: %v", err)
	}
}

// wholeHead reads one request head and returns it whole.
func wholeHead(br *bufio.Reader) (string, error) {
	var b strings.Builder
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return "", err
		}
		b.WriteString(line)
		if line == "\r\n" {
			return b.String(), nil
		}
	}
}

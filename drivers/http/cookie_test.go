package http

import (
	"bufio"
	"fmt"
	"net"
	nethttp "net/http"
	"net/url"
	"strings"
	"sync"
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
	d := newDriver(t, schema.HTTP{Path: "/step/{{seq}}", Cookies: boolp(true)}, cs.URL)
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
	c := dial(t, newDriver(t, schema.HTTP{Path: "/step/{{seq}}", Cookies: boolp(true)}, cs.URL+"/admin"))
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
	d := newDriver(t, schema.HTTP{Path: "/step/{{seq}}", Cookies: boolp(true), KeepAlive: boolp(false)}, cs.URL)
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

// A Set-Cookie line longer than the 16 KiB read buffer is read whole: it
// is refused as longer than MaxCookieSize, its length told exactly, and
// the next request carries no Cookie; a Cookie header in the scenario is
// refused with cookies on.
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
			if strings.Contains(line, "Cookie:") {
				status = "400 Bad Request"
			}
			fmt.Fprintf(c, "HTTP/1.1 %s\r\nContent-Length: 0\r\n\r\n", status)
		}
	})
	c := dial(t, newDriver(t, schema.HTTP{Path: "/{{seq}}", Cookies: boolp(true)}, "http://"+s.addr))
	want := fmt.Sprintf("cookie big is %d bytes (name and value), more than the 4096", len("big")+len(value))
	if out := do(c, 1, 5*time.Second); out.Code != drivers.CodeCookieLimit || !strings.Contains(fmt.Sprint(out.Err), want) {
		t.Fatalf("request 1: %s %s %v, want cookie-limit saying %q", out.Class, out.Code, out.Err, want)
	}
	if out := do(c, 2, 5*time.Second); out.Class != drivers.OK {
		t.Fatalf("request 2: %s %s %v", out.Class, out.Code, out.Err)
	}
	_, err := New(schema.HTTP{Cookies: boolp(true), Headers: map[string]string{"cookie": "a=b"}}, "http://127.0.0.1:1", "")
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

// setCookieServer answers every request with the Set-Cookie lines its
// next field holds for the request's path (none when absent) and notes
// the Cookie header of every request in got: its length and how many
// cookies it carries, "len=N n=M".
type setCookieServer struct {
	*server
	mu   sync.Mutex
	next map[string][]string
	got  drivertest.Received
}

func newSetCookieServer(t *testing.T) *setCookieServer {
	cs := &setCookieServer{next: map[string][]string{}}
	cs.server = newServer(t, func(w nethttp.ResponseWriter, r *nethttp.Request) {
		h := r.Header.Get("Cookie")
		n := 0
		if h != "" {
			n = strings.Count(h, ";") + 1
		}
		cs.got.Add(fmt.Sprintf("len=%d n=%d", len(h), n))
		cs.mu.Lock()
		lines := cs.next[r.URL.Path]
		cs.mu.Unlock()
		for _, l := range lines {
			w.Header().Add("Set-Cookie", l)
		}
	})
	return cs
}

// set makes the responses to path set lines.
func (cs *setCookieServer) set(path string, lines ...string) {
	cs.mu.Lock()
	cs.next[path] = lines
	cs.mu.Unlock()
}

// TestIssue16_HostileCookiesBounded, from the flow review: a target that
// sets 50 new cookies in every response grew each virtual user's jar
// without end; its requests reached 1.5 MB and their errors were blamed
// on the target. The jar keeps MaxCookies: a new cookie past them evicts
// the one set longest ago, as browsers do (the fresh user's site that
// sets a cookie per visit failed every iteration once the jar was full),
// so every request is ok and carries the 50 cookies set last.
func TestIssue16_HostileCookiesBounded(t *testing.T) {
	cs := newSetCookieServer(t)
	c := dial(t, newDriver(t, schema.HTTP{Path: "/{{seq}}", Cookies: boolp(true)}, cs.URL))
	for seq := 1; seq <= 6; seq++ {
		var lines []string
		for i := range 50 {
			lines = append(lines, fmt.Sprintf("c%d_%d=%s; Path=/", seq, i, strings.Repeat("v", 100)))
		}
		cs.set(fmt.Sprint("/", seq), lines...)
		out := do(c, uint64(seq), 5*time.Second)
		if seq == 1 {
			if out.Class != drivers.OK {
				t.Fatalf("request 1 (50 cookies set, the bound): %s %s %v", out.Class, out.Code, out.Err)
			}
			continue
		}
		if out.Class != drivers.OK {
			t.Errorf("request %d: %s %s %v, want ok: the oldest cookies make room", seq, out.Class, out.Code, out.Err)
		}
	}
	if ev := c.(*conn).jar.evicted; ev != 5*50 {
		t.Errorf("%d cookies evicted, want 250", ev)
	}
	got := cs.got.Take()
	want := []string{"len=0 n=0"}
	for range 5 {
		want = append(want, fmt.Sprintf("len=%d n=50", 50*len("c1_00=")-10+50*100+49*2))
	}
	if strings.Join(got, " | ") != strings.Join(want, " | ") {
		t.Errorf("the target was sent Cookie headers\n%s\nwant\n%s", strings.Join(got, " | "), strings.Join(want, " | "))
	}
	if !drivers.ClientSide(drivers.CodeCookieLimit) || drivers.LikelyCause(drivers.CodeCookieLimit) == "" {
		t.Errorf("cookie-limit is not told as the client's")
	}
}

// TestCookieJarBounds: the jar's bounds count what it keeps, as RFC 6265
// files it: a Set-Cookie of MaxCookieSize bytes is kept and one byte more
// is not; changing or deleting a kept cookie at the bound, and a cookie
// for another domain (which the jar refuses), do not count; and a jar
// that holds more than it may send sends nothing.
func TestCookieJarBounds(t *testing.T) {
	many := func(prefix string, n int, attrs string) []string {
		var lines []string
		for i := range n {
			lines = append(lines, fmt.Sprintf("%s%d=v%s", prefix, i, attrs))
		}
		return lines
	}
	// Name and value of MaxCookieSize bytes, with attributes besides.
	exact := "big=" + strings.Repeat("x", MaxCookieSize-len("big")) + "; Path=/; Secure; HttpOnly; SameSite=Lax; Max-Age=3600"
	exact = strings.Replace(exact, "; Secure", "", 1) // sent over http://
	for _, c := range []struct {
		name  string
		steps [][]string // the Set-Cookie lines of each response
		want  []string   // each request's class and code
		sent  string     // the last request's Cookie header, as the target noted it
	}{
		{"a cookie of MaxCookieSize", [][]string{{exact}, nil}, []string{"ok", "ok"}, fmt.Sprintf("len=%d n=1", len("big=")+MaxCookieSize-len("big"))},
		{"a field of MaxSetCookie and more", [][]string{{"a=b; Path=/; X=" + strings.Repeat("y", MaxSetCookie)}, nil}, []string{"client cookie-limit", "ok"}, "len=0 n=0"},
		{"one byte more", [][]string{{"x" + exact}, nil}, []string{"client cookie-limit", "ok"}, "len=0 n=0"},
		{"changed at the bound", [][]string{many("a", 50, "; Path=/"), many("a", 50, "2; Path=/"), nil}, []string{"ok", "ok", "ok"}, "len=388 n=50"},
		{"deleted to make room", [][]string{many("a", 50, ""), append(many("a", 10, "; Max-Age=0"), many("b", 10, "")...), nil}, []string{"ok", "ok", "ok"}, "len=338 n=50"},
		{"expired to make room", [][]string{many("a", 50, ""), append(many("a", 10, "; Expires=Thu, 01 Jan 1970 00:00:00 GMT"), many("b", 10, "")...), nil}, []string{"ok", "ok", "ok"}, "len=338 n=50"},
		{"another domain", [][]string{append(many("a", 50, ""), many("f", 10, "; Domain=example.com")...), nil}, []string{"ok", "ok"}, "len=338 n=50"},
		// A 51st cookie evicts the one set longest ago (a0 on /), so /2
		// is sent a1 … a49.
		{"one path more", [][]string{append(many("a", 50, "; Path=/"), "a0=v; Path=/x"), nil}, []string{"ok", "ok"}, "len=332 n=49"},
		// a0 changed is set anew: a1 and a2 are then the oldest.
		{"two more evict the oldest", [][]string{many("a", 50, ""), {"a0=ww"}, many("b", 2, ""), nil}, []string{"ok", "ok", "ok", "ok"}, "len=339 n=50"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cs := newSetCookieServer(t)
			conn := dial(t, newDriver(t, schema.HTTP{Path: "/{{seq}}", Cookies: boolp(true)}, cs.URL))
			for i, lines := range c.steps {
				cs.set(fmt.Sprint("/", i+1), lines...)
				out := do(conn, uint64(i+1), 5*time.Second)
				if got := strings.TrimSpace(string(out.Class) + " " + out.Code); got != c.want[i] {
					t.Errorf("request %d: %s (%v), want %s", i+1, got, out.Err, c.want[i])
				}
			}
			got := cs.got.Take()
			if last := got[len(got)-1]; last != c.sent {
				t.Errorf("the last request carried a Cookie header %s, want %s", last, c.sent)
			}
		})
	}

	// A jar that holds more than MaxCookies (filled behind the count's
	// back) sends nothing: the request fails before a byte is written.
	cs := newSetCookieServer(t)
	cn := dial(t, newDriver(t, schema.HTTP{Cookies: boolp(true)}, cs.URL))
	u, _ := url.Parse(cs.URL + "/")
	var cookies []*nethttp.Cookie
	for i := range MaxCookies + 1 {
		cookies = append(cookies, &nethttp.Cookie{Name: fmt.Sprint("k", i), Value: "v"})
	}
	cn.(*conn).jar.j.SetCookies(u, cookies)
	out := do(cn, 1, 5*time.Second)
	if out.Class != drivers.ClientError || out.Code != drivers.CodeCookieLimit || out.Responded || out.BytesOut != 0 || !strings.Contains(fmt.Sprint(out.Err), "51 cookies") {
		t.Errorf("a jar over its bound: %s %s %v (responded %v, %d bytes out), want cookie-limit before sending", out.Class, out.Code, out.Err, out.Responded, out.BytesOut)
	}
	if got := cs.got.Take(); len(got) != 0 {
		t.Errorf("the target received %v", got)
	}
}

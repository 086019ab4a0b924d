package httptarget

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	nethttp "net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runner-dev/runner/drivers"
	"github.com/runner-dev/runner/schema"
)

// jarClient is a keep-alive client with its own cookie jar (RFC 6265), as
// a virtual user of a flow has.
func jarClient(t *testing.T) *nethttp.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	c := client(t)
	c.Jar = jar
	return c
}

// call sends method path with body (JSON unless form) and the bearer
// token (when not ""), and returns the response, its body read.
func call(t *testing.T, c *nethttp.Client, method, url, token, body string, hdr ...string) (*nethttp.Response, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := nethttp.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	return resp, b
}

// login logs user in with password on c and returns the token (failing
// the test unless it is a 200).
func login(t *testing.T, c *nethttp.Client, base, user, password string) string {
	t.Helper()
	resp, b := call(t, c, "POST", base+"/login", "", fmt.Sprintf(`{"user": %q, "password": %q}`, user, password))
	var got struct{ Token, User string }
	if resp.StatusCode != 200 || json.Unmarshal(b, &got) != nil || got.Token == "" || got.User != user {
		t.Fatalf("login %s: %d %s", user, resp.StatusCode, b)
	}
	return got.Token
}

type shopItem struct {
	ID   int64
	Name string
}

// wantStats checks the counters of want in /stats.
func wantStats(t *testing.T, base string, want map[string]int64) map[string]int64 {
	t.Helper()
	m := stats(t, base)
	for k, v := range want {
		if got, ok := m[k]; !ok || got != v {
			t.Errorf("stats[%s] = %d (present %v), want %d", k, got, ok, v)
		}
	}
	return m
}

// addsUp checks that each endpoint's requests are the sum of its answers
// by status, that ok is the sum of the 2xx answers and requests the sum
// of the status_NNN (no request is still in flight).
func addsUp(t *testing.T, m map[string]int64) {
	t.Helper()
	var ok, byStatus int64
	for k, v := range m {
		if strings.HasPrefix(k, "status_") {
			byStatus += v
			if strings.HasPrefix(k, "status_2") {
				ok += v
			}
		}
	}
	if ok != m["ok"] || byStatus != m["requests"] {
		t.Errorf("ok %d, 2xx answers %d; requests %d, answers %d", m["ok"], ok, m["requests"], byStatus)
	}
	for _, e := range []string{"login", "logout", "items", "item"} {
		var sum int64
		for k, v := range m {
			if rest, found := strings.CutPrefix(k, e+"_"); found && len(rest) == 3 {
				sum += v
			}
		}
		if sum != m[e] {
			t.Errorf("%s = %d, its answers add up to %d (%v)", e, m[e], sum, m)
		}
	}
}

// TestShop_Flow: log in, list, open each item, log out, through a client
// with a cookie jar; the token goes in by hand, the cookie by the jar.
func TestShop_Flow(t *testing.T) {
	base := start(t, Config{})
	c := jarClient(t)
	resp, b := call(t, c, "POST", base+"/login", "", `{"user": "alice", "password": "pw-alice"}`)
	var lg struct{ Token, User string }
	if resp.StatusCode != 200 || json.Unmarshal(b, &lg) != nil || lg.Token == "" || lg.User != "alice" {
		t.Fatalf("login: %d %s", resp.StatusCode, b)
	}
	var cookie *nethttp.Cookie
	for _, ck := range resp.Cookies() {
		if ck.Name == "session" {
			cookie = ck
		}
	}
	if cookie == nil || cookie.Value == "" || !cookie.HttpOnly || cookie.Path != "/" || cookie.Value == lg.Token {
		t.Fatalf("Set-Cookie %q: want session=<opaque, not the token>; Path=/; HttpOnly", resp.Header.Values("Set-Cookie"))
	}

	resp, b = call(t, c, "GET", base+"/items", lg.Token, "")
	var list struct{ Items []shopItem }
	if resp.StatusCode != 200 || json.Unmarshal(b, &list) != nil {
		t.Fatalf("/items: %d %s", resp.StatusCode, b)
	}
	if len(list.Items) != ShopItems || resp.Header.Get("X-Item-Count") != fmt.Sprint(ShopItems) {
		t.Fatalf("/items: %d items, X-Item-Count %q, want %d each: %s", len(list.Items), resp.Header.Get("X-Item-Count"), ShopItems, b)
	}
	seen := map[int64]bool{}
	for _, it := range list.Items {
		if seen[it.ID] || !strings.Contains(it.Name, "alice") {
			t.Errorf("item %+v: ids must differ and names name the user", it)
		}
		seen[it.ID] = true
		resp, b = call(t, c, "GET", fmt.Sprintf("%s/items/%d", base, it.ID), lg.Token, "")
		var got shopItem
		if resp.StatusCode != 200 || json.Unmarshal(b, &got) != nil || got != it {
			t.Errorf("/items/%d: %d %s, want %+v", it.ID, resp.StatusCode, b, it)
		}
	}

	// The same user logged in again (a form this time) has the same items.
	form, err := c.PostForm(base+"/login", url.Values{"user": {"alice"}, "password": {"pw-alice"}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(form.Body)
	form.Body.Close()
	var lg2 struct{ Token string }
	if form.StatusCode != 200 || json.Unmarshal(b, &lg2) != nil || lg2.Token == "" || lg2.Token == lg.Token {
		t.Fatalf("form login: %d %s", form.StatusCode, b)
	}
	// The jar now holds the second login's cookie: the first token no
	// longer matches it.
	if resp, _ = call(t, c, "GET", base+"/items", lg.Token, ""); resp.StatusCode != 403 {
		t.Errorf("first token with the second login's cookie: %d, want 403", resp.StatusCode)
	}
	resp, b = call(t, c, "GET", base+"/items", lg2.Token, "")
	var list2 struct{ Items []shopItem }
	if resp.StatusCode != 200 || json.Unmarshal(b, &list2) != nil || fmt.Sprint(list2.Items) != fmt.Sprint(list.Items) {
		t.Errorf("second login's items: %d %s, want %v", resp.StatusCode, b, list.Items)
	}

	if resp, b = call(t, c, "POST", base+"/logout", lg2.Token, ""); resp.StatusCode != 200 || !strings.Contains(string(b), "alice") {
		t.Errorf("logout: %d %s", resp.StatusCode, b)
	}
	if u, _ := url.Parse(base); len(c.Jar.Cookies(u)) != 0 {
		t.Errorf("after logout the jar still holds %v", c.Jar.Cookies(u))
	}
	if resp, _ = call(t, c, "GET", base+"/items", lg2.Token, ""); resp.StatusCode != 401 {
		t.Errorf("/items after logout: %d, want 401", resp.StatusCode)
	}
	m := wantStats(t, base, map[string]int64{
		"requests": 2 + 3 + 3 + 1 + 1, "ok": 2 + 2 + 3 + 1,
		"login": 2, "login_200": 2,
		"items": 4, "items_200": 2, "items_403": 1, "items_401": 1,
		"item": 3, "item_200": 3, "item_404": 0,
		"logout": 1, "logout_200": 1,
		"sessions": 1, "sessions_evicted": 0,
	})
	addsUp(t, m)
}

// TestShop_ItemIDs: a user's item ids follow the documented rule,
// 10 × (FNV-1a-32(user) mod 100000) + k for k = 1…3.
func TestShop_ItemIDs(t *testing.T) {
	base := start(t, Config{})
	for _, user := range []string{"alice", "bob", "user-17"} {
		c := jarClient(t)
		tok := login(t, c, base, user, "pw-"+user)
		_, b := call(t, c, "GET", base+"/items", tok, "")
		var list struct{ Items []shopItem }
		if err := json.Unmarshal(b, &list); err != nil {
			t.Fatal(err)
		}
		h := fnv.New32a()
		io.WriteString(h, user)
		want := []shopItem{}
		for k := int64(1); k <= 3; k++ {
			want = append(want, shopItem{10*int64(h.Sum32()%100000) + k, fmt.Sprintf("item %d of %s", k, user)})
		}
		if fmt.Sprint(list.Items) != fmt.Sprint(want) {
			t.Errorf("%s's items %v, want %v", user, list.Items, want)
		}
	}
}

// TestShop_Refusals: every refusal answers its status and counts in its
// endpoint's counter of that status.
func TestShop_Refusals(t *testing.T) {
	base := start(t, Config{})
	plain := client(t) // no jar: cookies by hand
	aliceJar, bobJar := jarClient(t), jarClient(t)
	alice := login(t, aliceJar, base, "alice", "pw-alice")
	bob := login(t, bobJar, base, "bob", "pw-bob")
	u, _ := url.Parse(base)
	aliceCookie := "session=" + aliceJar.Jar.Cookies(u)[0].Value
	bobCookie := "session=" + bobJar.Jar.Cookies(u)[0].Value
	var bobItem int64
	{
		_, b := call(t, bobJar, "GET", base+"/items", bob, "")
		var list struct{ Items []shopItem }
		json.Unmarshal(b, &list)
		bobItem = list.Items[0].ID
	}
	big := `{"user": "alice", "password": "pw-alice", "pad": "` + strings.Repeat("x", 70<<10) + `"}`
	cases := []struct {
		name, method, path, token, body string
		hdr                             []string
		want                            int
		counter                         string
	}{
		{"wrong password", "POST", "/login", "", `{"user": "alice", "password": "pw-bob"}`, nil, 401, "login_401"},
		{"no password", "POST", "/login", "", `{"user": "alice"}`, nil, 401, "login_401"},
		{"malformed JSON", "POST", "/login", "", `{"user": "alice",`, nil, 400, "login_400"},
		{"JSON not an object", "POST", "/login", "", `["alice"]`, nil, 400, "login_400"},
		{"more after the object", "POST", "/login", "", `{"user": "a", "password": "pw-a"} {}`, nil, 400, "login_400"},
		{"a number for the user", "POST", "/login", "", `{"user": 7, "password": "pw-7"}`, nil, 400, "login_400"},
		{"no user", "POST", "/login", "", `{"password": "pw-"}`, nil, 400, "login_400"},
		{"empty body", "POST", "/login", "", "", nil, 400, "login_400"},
		{"form without user", "POST", "/login", "", "password=pw-", []string{"Content-Type", "application/x-www-form-urlencoded"}, 400, "login_400"},
		{"malformed form", "POST", "/login", "", "user=%zz", []string{"Content-Type", "application/x-www-form-urlencoded"}, 400, "login_400"},
		{"body over 64 KiB", "POST", "/login", "", big, nil, 400, "login_400"},
		{"GET /login", "GET", "/login", "", "", nil, 405, "login_405"},
		{"no token", "GET", "/items", "", "", []string{"Cookie", aliceCookie}, 401, "items_401"},
		{"unknown token", "GET", "/items", "nope", "", []string{"Cookie", aliceCookie}, 401, "items_401"},
		{"basic, not bearer", "GET", "/items", "", "", []string{"Authorization", "Basic " + alice, "Cookie", aliceCookie}, 401, "items_401"},
		{"no cookie", "GET", "/items", alice, "", nil, 403, "items_403"},
		{"another login's cookie", "GET", "/items", alice, "", []string{"Cookie", bobCookie}, 403, "items_403"},
		{"unknown cookie", "GET", "/items", alice, "", []string{"Cookie", "session=nope"}, 403, "items_403"},
		{"POST /items", "POST", "/items", alice, "{}", []string{"Cookie", aliceCookie}, 405, "items_405"},
		{"item: no token", "GET", fmt.Sprintf("/items/%d", bobItem), "", "", []string{"Cookie", bobCookie}, 401, "item_401"},
		{"item: no cookie", "GET", fmt.Sprintf("/items/%d", bobItem), bob, "", nil, 403, "item_403"},
		{"another user's item", "GET", fmt.Sprintf("/items/%d", bobItem), alice, "", []string{"Cookie", aliceCookie}, 404, "item_404"},
		{"not a number", "GET", "/items/abc", alice, "", []string{"Cookie", aliceCookie}, 404, "item_404"},
		{"a sign before the id", "GET", fmt.Sprintf("/items/+%d", bobItem), bob, "", []string{"Cookie", bobCookie}, 404, "item_404"},
		{"a zero before the id", "GET", fmt.Sprintf("/items/0%d", bobItem), bob, "", []string{"Cookie", bobCookie}, 404, "item_404"},
		{"no id", "GET", "/items/", alice, "", []string{"Cookie", aliceCookie}, 404, "item_404"},
		{"DELETE an item", "DELETE", fmt.Sprintf("/items/%d", bobItem), bob, "", []string{"Cookie", bobCookie}, 405, "item_405"},
		{"logout: no cookie", "POST", "/logout", bob, "", nil, 403, "logout_403"},
		{"logout: no token", "POST", "/logout", "", "", []string{"Cookie", bobCookie}, 401, "logout_401"},
		{"GET /logout", "GET", "/logout", bob, "", []string{"Cookie", bobCookie}, 405, "logout_405"},
	}
	want := map[string]int64{"login": 2, "login_200": 2, "items": 1, "items_200": 1, "status_200": 3}
	for _, c := range cases {
		resp, b := call(t, plain, c.method, base+c.path, c.token, c.body, c.hdr...)
		if resp.StatusCode != c.want {
			t.Errorf("%s: %d %s, want %d", c.name, resp.StatusCode, b, c.want)
		}
		if c.want == 401 && resp.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("%s: a 401 without WWW-Authenticate", c.name)
		}
		if c.want == 405 && resp.Header.Get("Allow") == "" {
			t.Errorf("%s: a 405 without Allow", c.name)
		}
		var e struct{ Error string }
		if json.Unmarshal(b, &e) != nil || e.Error == "" {
			t.Errorf("%s: body %q, want a JSON error", c.name, b)
		}
		want[c.counter]++
		want[strings.SplitN(c.counter, "_", 2)[0]]++
		want[fmt.Sprintf("status_%d", c.want)]++
	}
	want["requests"] = int64(len(cases)) + 3
	want["ok"] = 3
	// Nothing above ended a login: both still work.
	m := wantStats(t, base, want)
	addsUp(t, m)
	if m["sessions"] != 2 {
		t.Errorf("sessions %d, want 2", m["sessions"])
	}
	for _, tc := range []struct {
		c   *nethttp.Client
		tok string
	}{{aliceJar, alice}, {bobJar, bob}} {
		if resp, _ := call(t, tc.c, "GET", base+"/items", tc.tok, ""); resp.StatusCode != 200 {
			t.Errorf("a login after the refusals: %d", resp.StatusCode)
		}
	}
}

// TestShop_StatsNamedFromTheStart: a fresh target shows the shop's
// counters at zero, so a rule like server.items_401 == 0 always has its
// counter; other paths, near the shop's, stay plain counted requests.
func TestShop_StatsNamedFromTheStart(t *testing.T) {
	base := start(t, Config{ErrorStatus: 502})
	m := stats(t, base)
	for _, e := range []string{"login", "logout", "items", "item"} {
		for _, s := range []string{"", "_200", "_400", "_401", "_403", "_404", "_405", "_502"} {
			if v, ok := m[e+s]; !ok || v != 0 {
				t.Errorf("stats[%s] = %d (present %v), want 0", e+s, v, ok)
			}
		}
	}
	if _, ok := m["sessions_evicted"]; !ok {
		t.Error("no sessions_evicted")
	}
	c := client(t)
	for _, p := range []string{"/loginx", "/login/", "/itemsx", "/logout/1", "/shop"} {
		if status, body := get(t, c, base+p); status != 200 || body != "ok\n" {
			t.Errorf("GET %s: %d %q, want the plain 200 ok", p, status, body)
		}
	}
	m = wantStats(t, base, map[string]int64{"requests": 5, "ok": 5, "login": 0, "items": 0, "item": 0, "logout": 0})
	addsUp(t, m)
}

// TestShop_ErrorEveryAndDelayPath: the shop's requests are counted
// requests: ErrorEvery fails them before the shop sees them (a failed
// login logs no one in) and a per-path delay holds them.
func TestShop_ErrorEveryAndDelayPath(t *testing.T) {
	base := start(t, Config{ErrorEvery: 2, DelayPath: PathDelays{"/login": 40 * time.Millisecond}})
	c := jarClient(t)
	t0 := time.Now()
	tok := login(t, c, base, "alice", "pw-alice") // request 1
	if el := time.Since(t0); el < 40*time.Millisecond {
		t.Errorf("login answered after %v, want ≥ 40ms", el)
	}
	if resp, b := call(t, c, "GET", base+"/items", tok, ""); resp.StatusCode != 503 || len(b) != 0 { // request 2
		t.Errorf("request 2: %d %q, want 503 and no body", resp.StatusCode, b)
	}
	if resp, _ := call(t, c, "GET", base+"/items", tok, ""); resp.StatusCode != 200 { // request 3
		t.Errorf("request 3: %d", resp.StatusCode)
	}
	if resp, _ := call(t, c, "POST", base+"/login", "", `{"user": "bob", "password": "pw-bob"}`); resp.StatusCode != 503 { // request 4
		t.Errorf("request 4: %d", resp.StatusCode)
	}
	m := wantStats(t, base, map[string]int64{
		"requests": 4, "ok": 2, "status_503": 2,
		"login": 2, "login_200": 1, "login_503": 1,
		"items": 2, "items_200": 1, "items_503": 1,
		"sessions": 1,
	})
	addsUp(t, m)
}

// TestShop_Eviction: with max-sessions 2, a third login evicts the
// oldest, whose token then gets 401.
func TestShop_Eviction(t *testing.T) {
	base := start(t, Config{MaxSessions: 2})
	var cs [3]*nethttp.Client
	var toks [3]string
	for i := range cs {
		cs[i] = jarClient(t)
		toks[i] = login(t, cs[i], base, fmt.Sprint("u", i), fmt.Sprint("pw-u", i))
	}
	for i, want := range []int{401, 200, 200} {
		if resp, _ := call(t, cs[i], "GET", base+"/items", toks[i], ""); resp.StatusCode != want {
			t.Errorf("login %d: %d, want %d", i+1, resp.StatusCode, want)
		}
	}
	wantStats(t, base, map[string]int64{"sessions": 2, "sessions_evicted": 1, "items_401": 1, "items_200": 2})
}

// TestShop_ConcurrentLogins: 8 virtual users × 25 iterations of log in,
// list, open, each with its own jar, at once: every step succeeds, every
// token is new, and the counters match exactly.
func TestShop_ConcurrentLogins(t *testing.T) {
	base := start(t, Config{})
	const users, iters = 8, 25
	var (
		mu     sync.Mutex
		tokens = map[string]bool{}
		wg     sync.WaitGroup
	)
	for u := range users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := jarClient(t)
			user := fmt.Sprint("user", u%4) // two virtual users per user
			for range iters {
				tok := login(t, c, base, user, "pw-"+user)
				mu.Lock()
				dup := tokens[tok]
				tokens[tok] = true
				mu.Unlock()
				if dup {
					t.Errorf("token %s issued twice", tok)
				}
				resp, b := call(t, c, "GET", base+"/items", tok, "")
				var list struct{ Items []shopItem }
				if resp.StatusCode != 200 || json.Unmarshal(b, &list) != nil || len(list.Items) == 0 {
					t.Errorf("/items: %d %s", resp.StatusCode, b)
					return
				}
				if resp, b := call(t, c, "GET", fmt.Sprintf("%s/items/%d", base, list.Items[len(list.Items)-1].ID), tok, ""); resp.StatusCode != 200 {
					t.Errorf("/items/id: %d %s", resp.StatusCode, b)
				}
			}
		}()
	}
	wg.Wait()
	n := int64(users * iters)
	m := wantStats(t, base, map[string]int64{
		"requests": 3 * n, "ok": 3 * n,
		"login": n, "login_200": n, "items": n, "items_200": n, "item": n, "item_200": n,
		"sessions": n,
	})
	addsUp(t, m)
}

// writeFile writes content to name in a fresh directory and returns its
// path.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestShop_UsersFile: with --users the file's passwords decide, and the
// built-in rule no longer applies.
func TestShop_UsersFile(t *testing.T) {
	// A byte order mark, the columns in another order, an extra column,
	// a quoted password with a comma.
	p := writeFile(t, "users.csv", "\ufeffid,password,user\n1,s3cret,alice\n2,\"a,b\",bob\n")
	base := start(t, Config{Users: p})
	c := jarClient(t)
	for _, tc := range []struct {
		user, password string
		want           int
	}{
		{"alice", "s3cret", 200},
		{"bob", "a,b", 200},
		{"alice", "pw-alice", 401}, // the built-in rule is off
		{"carol", "pw-carol", 401}, // not in the file
		{"alice", "S3CRET", 401},
	} {
		body := fmt.Sprintf(`{"user": %q, "password": %q}`, tc.user, tc.password)
		if resp, b := call(t, c, "POST", base+"/login", "", body); resp.StatusCode != tc.want {
			t.Errorf("login %s/%s: %d %s, want %d", tc.user, tc.password, resp.StatusCode, b, tc.want)
		}
	}
	wantStats(t, base, map[string]int64{"login_200": 2, "login_401": 3})
}

// TestLoadUsers_Errors: a bad users file is refused with its name and
// the line at fault; Serve refuses to start with it.
func TestLoadUsers_Errors(t *testing.T) {
	for _, c := range []struct {
		content string
		want    string // after "users file PATH"
	}{
		{"", ": empty"},
		{"user,password\n", ": no users"},
		{"name,password\nalice,x\n", " line 1: the header"},
		{"user,pass\nalice,x\n", " line 1: the header"},
		{"user,password\nalice,x\nbob\n", " line 3: another number of fields"},
		{"user,password\nalice,x\n,y\n", " line 3: empty user"},
		{"user,password\nalice,x\nbob,y\nalice,z\n", ` line 4: user "alice" again (first on line 2)`},
		{"user,password\nalice,\"x\n", " line 2: "},
	} {
		p := writeFile(t, "u.csv", c.content)
		_, err := LoadUsers(p)
		if want := "users file " + p + c.want; err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%q: %v, want an error starting %q", c.content, err, want)
		}
	}
	missing := filepath.Join(t.TempDir(), "none.csv")
	if _, err := LoadUsers(missing); err == nil || !strings.Contains(err.Error(), "none.csv") {
		t.Errorf("a missing file: %v", err)
	}
	if _, err := LoadUsers(t.TempDir()); err == nil {
		t.Error("a directory: want an error")
	}
	bad := writeFile(t, "bad.csv", "user,password\nalice\n")
	if _, err := ParseArgs([]string{"--users", bad}); err == nil || !strings.HasPrefix(err.Error(), "users file "+bad+" line 2: ") {
		t.Errorf("ParseArgs --users with a bad file: %v", err)
	}
	if cfg, err := ParseArgs([]string{"--users", writeFile(t, "ok.csv", "user,password\na,b\n"), "--max-sessions", "5"}); err != nil || cfg.MaxSessions != 5 {
		t.Errorf("ParseArgs --users with a good file: %+v, %v", cfg, err)
	}
	err := Serve(t.Context(), Config{Users: missing}, func(string) { t.Error("Serve listened with a missing users file") })
	if err == nil || !strings.Contains(err.Error(), "none.csv") {
		t.Errorf("Serve with a missing users file: %v", err)
	}
}

// TestShop_ReconcileWithDriver: runner's HTTP driver logs in 40 users
// (u1…u40, each with its right password) against a target failing every
// 4th request; the driver's outcomes and the shop's counters agree
// exactly, as `server.login == step.login.requests` needs.
func TestShop_ReconcileWithDriver(t *testing.T) {
	base := start(t, Config{ErrorEvery: 4})
	_, byClass := drive(t, base, schema.HTTP{
		Method:  "POST",
		Path:    "/login",
		Headers: map[string]string{"Content-Type": "application/json"},
		Body:    `{"user": "u{{seq}}", "password": "pw-u{{seq}}"}`,
	}, 40)
	if byClass[drivers.OK] != 30 || byClass[drivers.Status] != 10 {
		t.Errorf("driver outcomes %v, want 30 ok and 10 status", byClass)
	}
	m := wantStats(t, base, map[string]int64{
		"login": 40, "login_200": int64(byClass[drivers.OK]), "login_503": int64(byClass[drivers.Status]),
		"login_401": 0, "login_400": 0, "sessions": 30,
	})
	addsUp(t, m)
}

// FuzzCredentials: no login body, JSON or form, makes the parser panic,
// and what it accepts has a user.
func FuzzCredentials(f *testing.F) {
	for _, seed := range []struct{ ct, body string }{
		{"application/json", `{"user": "alice", "password": "pw-alice"}`},
		{"", `{"user": "a"}`},
		{"application/json", `{"user": 7}`},
		{"application/json", `[]`},
		{"application/x-www-form-urlencoded", "user=a&password=b"},
		{"application/x-www-form-urlencoded; charset=utf-8", "user=%zz"},
		{"text/plain", "user=a"},
	} {
		f.Add(seed.ct, []byte(seed.body))
	}
	f.Fuzz(func(t *testing.T, ct string, body []byte) {
		user, _, err := credentials(ct, body)
		if err == nil && user == "" {
			t.Errorf("accepted %q (%s) without a user", body, ct)
		}
	})
}

// FuzzParseUsers: no users file makes the parser panic; an error names
// the file, and what it accepts has no empty user.
func FuzzParseUsers(f *testing.F) {
	for _, seed := range []string{
		"user,password\nalice,x\n",
		"\ufeffid,password,user\n1,\"a,b\",bob\n",
		"user,password\nalice\n",
		"user,password\nalice,\"x\n",
		"",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		users, err := parseUsers("f.csv", b)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "users file f.csv") {
				t.Errorf("error %q does not name the file", err)
			}
			return
		}
		if len(users) == 0 {
			t.Errorf("accepted %q with no users", b)
		}
		if _, empty := users[""]; empty {
			t.Errorf("accepted an empty user in %q", b)
		}
	})
}

// FuzzDelayPathFlag: no --delay-path value makes its parser panic.
func FuzzDelayPathFlag(f *testing.F) {
	for _, seed := range []string{"/login=5ms,/items=2ms", "/a", "/a=5", "=,=", "/a=1ms,/a=2ms", " /x = 1ms"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var p PathDelays
		if err := (pathDelaysFlag{&p}).Set(s); err == nil && len(p) == 0 {
			t.Errorf("Set(%q) accepted nothing", s)
		}
		validatePathDelays(p)
	})
}

package httptarget

import (
	"bytes"
	"container/list"
	"crypto/rand"
	"crypto/subtle"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"mime"
	nethttp "net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/runner-dev/runner/internal/regularfile"
)

// The shop: a small application inside the target for HTTP flows (log in,
// list, open one), which issues and checks a bearer token and a session
// cookie per login. Its requests are counted requests like any other
// (requests, ok, status_NNN, delays, ErrorEvery, CloseAfter, the truth
// knobs all apply; a request ErrorEvery fails is answered ErrorStatus
// before the shop sees it), and are counted per endpoint too.
//
//   - POST /login, body JSON {"user": U, "password": P} or the form
//     user=U&password=P (Content-Type application/x-www-form-urlencoded):
//     200 {"token": T, "user": U} with Set-Cookie session=C; Path=/;
//     HttpOnly, when P is U's password (Config.Users, or "pw-" + U);
//     401 when it is not or U is unknown; 400 for a malformed body, a
//     missing or empty user, or a body over 64 KiB.
//   - GET /items, with Authorization: Bearer T and the cookie session=C of
//     the same login: 200 {"items": [{"id": N, "name": S}, ...]} and the
//     header X-Item-Count. 401 without a bearer token or with one the shop
//     does not know (never issued, logged out or evicted); 403 when the
//     session cookie is missing or is not that login's.
//   - GET /items/{id}: the same checks, then 200 {"id": N, "name": S} when
//     id is one of the user's items, else 404.
//   - POST /logout: the same checks, then ends the login: 200 {"user": U}
//     and a Set-Cookie that expires the session cookie.
//   - Another method on those paths: 405 with Allow.
//
// Each user has ShopItems items: item k (1…ShopItems) has id
// 10 × (FNV-1a-32(user) mod 100000) + k and name "item k of USER", so a
// user's ids are the same in every login and every run.
//
// Sessions live in memory, at most Config.MaxSessions of them: a login
// beyond that evicts the oldest live one (its token then gets 401). The
// same user may be logged in many times at once; each login has its own
// token and cookie.

// DefaultMaxSessions is Config.MaxSessions' default: 100000 live logins
// (about 25 MB).
const DefaultMaxSessions = 100_000

// ShopItems is how many items each shop user has.
const ShopItems = 3

// maxLoginBody bounds a login's body: 64 KiB.
const maxLoginBody = 64 << 10

// maxUsersFile bounds the users file: 64 MiB.
const maxUsersFile = 64 << 20

// The shop's endpoints, in the order of endpointNames.
const (
	epNone = iota - 1
	epLogin
	epLogout
	epItems
	epItem
	nEndpoints
)

// endpointNames are the counter names of the endpoints (/stats).
var endpointNames = [nEndpoints]string{"login", "logout", "items", "item"}

// shopStatuses are the statuses the shop answers; /stats shows
// ENDPOINT_NNN for each (and for ErrorStatus) even when it is zero, so a
// rule can name any of them.
var shopStatuses = []int{200, 400, 401, 403, 404, 405}

// endpointOf returns the shop endpoint of path, or epNone.
func endpointOf(path string) int {
	switch {
	case path == "/login":
		return epLogin
	case path == "/logout":
		return epLogout
	case path == "/items":
		return epItems
	case strings.HasPrefix(path, "/items/"):
		return epItem
	}
	return epNone
}

// shop is the shop's state. Its methods are safe for concurrent use.
type shop struct {
	users map[string]string // user → password; nil: the built-in rule
	max   int               // most live sessions

	mu       sync.Mutex
	sessions map[string]*session // by token
	order    list.List           // of *session, oldest login first

	evicted atomic.Int64
	// count[e][0] counts e's requests on arrival; count[e][s] its answers
	// with status s.
	count [nEndpoints][600]atomic.Int64
}

// session is one login.
type session struct {
	user, token, cookie string
	elem                *list.Element // in shop.order
}

func newShop(users map[string]string, max int) *shop {
	if max <= 0 {
		max = DefaultMaxSessions
	}
	return &shop{users: users, max: max, sessions: map[string]*session{}}
}

// arrived counts a request to endpoint e.
func (s *shop) arrived(e int) { s.count[e][0].Add(1) }

// answered counts endpoint e's answer with status.
func (s *shop) answered(e, status int) { s.count[e][status].Add(1) }

// stats adds the shop's counters to m: ENDPOINT (requests), ENDPOINT_NNN
// (answers by status; the shop's statuses and errStatus always present),
// sessions (live logins now) and sessions_evicted.
func (s *shop) stats(m map[string]int64, errStatus int) {
	for e, name := range endpointNames {
		m[name] = s.count[e][0].Load()
		for code := 100; code < len(s.count[e]); code++ {
			v := s.count[e][code].Load()
			if v != 0 || code == errStatus || isShopStatus(code) {
				m[name+"_"+strconv.Itoa(code)] = v
			}
		}
	}
	s.mu.Lock()
	m["sessions"] = int64(len(s.sessions))
	s.mu.Unlock()
	m["sessions_evicted"] = s.evicted.Load()
}

func isShopStatus(code int) bool {
	for _, c := range shopStatuses {
		if c == code {
			return true
		}
	}
	return false
}

// serve answers the shop request r to endpoint e; body is a login's body
// (nil otherwise), tooLarge says it was cut at maxLoginBody. It returns
// the status written.
func (s *shop) serve(w nethttp.ResponseWriter, r *nethttp.Request, e int, body []byte, tooLarge bool) int {
	allow, allowed := "GET, HEAD", r.Method == nethttp.MethodGet || r.Method == nethttp.MethodHead
	if e == epLogin || e == epLogout {
		allow, allowed = "POST", r.Method == nethttp.MethodPost
	}
	if !allowed {
		w.Header().Set("Allow", allow)
		return writeJSON(w, nethttp.StatusMethodNotAllowed, errorBody("method not allowed; use "+allow))
	}
	if e == epLogin {
		return s.login(w, r, body, tooLarge)
	}
	ss, status, msg := s.check(r)
	if ss == nil {
		if status == nethttp.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Bearer realm="shop"`)
		}
		return writeJSON(w, status, errorBody(msg))
	}
	switch e {
	case epLogout:
		s.logout(ss)
		nethttp.SetCookie(w, &nethttp.Cookie{Name: "session", Value: "", Path: "/", HttpOnly: true, MaxAge: -1})
		return writeJSON(w, nethttp.StatusOK, map[string]string{"user": ss.user})
	case epItems:
		items := itemsOf(ss.user)
		w.Header().Set("X-Item-Count", strconv.Itoa(len(items)))
		return writeJSON(w, nethttp.StatusOK, map[string][]item{"items": items})
	default: // epItem
		raw := strings.TrimPrefix(r.URL.Path, "/items/")
		id, err := strconv.ParseInt(raw, 10, 64)
		if err == nil && strconv.FormatInt(id, 10) == raw { // the id as the list writes it, no +7 or 007

			for _, it := range itemsOf(ss.user) {
				if it.ID == id {
					return writeJSON(w, nethttp.StatusOK, it)
				}
			}
		}
		return writeJSON(w, nethttp.StatusNotFound, errorBody("no such item of "+ss.user))
	}
}

// check finds the login of r's bearer token and checks r's session
// cookie against it: the session, or nil with the refusal's status and
// message.
func (s *shop) check(r *nethttp.Request) (*session, int, string) {
	scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	token = strings.TrimSpace(token)
	if !strings.EqualFold(scheme, "Bearer") || token == "" {
		return nil, nethttp.StatusUnauthorized, "no bearer token"
	}
	s.mu.Lock()
	ss := s.sessions[token]
	s.mu.Unlock()
	if ss == nil {
		return nil, nethttp.StatusUnauthorized, "unknown token (never issued, logged out or evicted)"
	}
	c, err := r.Cookie("session")
	if err != nil {
		return nil, nethttp.StatusForbidden, "no session cookie"
	}
	if subtle.ConstantTimeCompare([]byte(c.Value), []byte(ss.cookie)) != 1 {
		return nil, nethttp.StatusForbidden, "the session cookie is not this token's login"
	}
	return ss, 0, ""
}

// login answers POST /login.
func (s *shop) login(w nethttp.ResponseWriter, r *nethttp.Request, body []byte, tooLarge bool) int {
	if tooLarge {
		return writeJSON(w, nethttp.StatusBadRequest, errorBody(fmt.Sprintf("body over %d bytes", maxLoginBody)))
	}
	user, password, err := credentials(r.Header.Get("Content-Type"), body)
	if err != nil {
		return writeJSON(w, nethttp.StatusBadRequest, errorBody(err.Error()))
	}
	if !s.valid(user, password) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="shop"`) // a 401 names a scheme (RFC 9110 §15.5.2)
		return writeJSON(w, nethttp.StatusUnauthorized, errorBody("wrong user or password"))
	}
	ss := &session{user: user, token: rand.Text(), cookie: rand.Text()}
	s.mu.Lock()
	for len(s.sessions) >= s.max {
		old := s.order.Front()
		s.remove(old.Value.(*session))
		s.evicted.Add(1)
	}
	ss.elem = s.order.PushBack(ss)
	s.sessions[ss.token] = ss
	s.mu.Unlock()
	nethttp.SetCookie(w, &nethttp.Cookie{Name: "session", Value: ss.cookie, Path: "/", HttpOnly: true})
	return writeJSON(w, nethttp.StatusOK, map[string]string{"token": ss.token, "user": user})
}

// logout ends ss, if it is still live.
func (s *shop) logout(ss *session) {
	s.mu.Lock()
	if s.sessions[ss.token] == ss {
		s.remove(ss)
	}
	s.mu.Unlock()
}

// remove forgets ss; s.mu is held.
func (s *shop) remove(ss *session) {
	delete(s.sessions, ss.token)
	s.order.Remove(ss.elem)
}

// valid says whether password is user's.
func (s *shop) valid(user, password string) bool {
	want, ok := "pw-"+user, true
	if s.users != nil {
		want, ok = s.users[user]
	}
	return ok && subtle.ConstantTimeCompare([]byte(password), []byte(want)) == 1
}

// credentials reads a login body: a form when contentType says so, else
// JSON. Errors: a malformed body, a missing or empty user.
func credentials(contentType string, body []byte) (user, password string, err error) {
	if mt, _, _ := mime.ParseMediaType(contentType); mt == "application/x-www-form-urlencoded" {
		v, err := url.ParseQuery(string(body))
		if err != nil {
			return "", "", fmt.Errorf("malformed form: %v", err)
		}
		user, password = v.Get("user"), v.Get("password")
	} else {
		var c struct {
			User     *string `json:"user"`
			Password *string `json:"password"`
		}
		dec := json.NewDecoder(bytes.NewReader(body))
		if err := dec.Decode(&c); err != nil {
			return "", "", fmt.Errorf("malformed JSON: %v", err)
		}
		if _, err := dec.Token(); err != io.EOF {
			return "", "", errors.New("malformed JSON: more after the object")
		}
		if c.User != nil {
			user = *c.User
		}
		if c.Password != nil {
			password = *c.Password
		}
	}
	if user == "" {
		return "", "", errors.New(`no "user"`)
	}
	return user, password, nil
}

// item is one of a user's items.
type item struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
}

// itemsOf returns user's items (see the shop's comment for the ids).
func itemsOf(user string) []item {
	h := fnv.New32a()
	h.Write([]byte(user))
	base := 10 * int64(h.Sum32()%100000)
	items := make([]item, ShopItems)
	for k := range items {
		items[k] = item{ID: base + int64(k) + 1, Name: fmt.Sprintf("item %d of %s", k+1, user)}
	}
	return items
}

func errorBody(msg string) map[string]string { return map[string]string{"error": msg} }

// writeJSON answers status with v as JSON and returns status.
func writeJSON(w nethttp.ResponseWriter, status int, v any) int {
	b, _ := json.Marshal(v) // maps of strings and items always marshal
	b = append(b, '\n')
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	w.Write(b)
	return status
}

// LoadUsers reads a users file: CSV whose header row names the columns
// user and password (others are ignored, in any order; a UTF-8 byte order
// mark is skipped), then one user per row. It returns user → password.
// Errors name the file and the line: no such file or not a regular file,
// over 64 MiB, malformed CSV, a header without user or password, a row
// with another number of fields than the header, an empty user, a user
// given twice, no users.
func LoadUsers(path string) (map[string]string, error) {
	b, err := regularfile.ReadFile(path, maxUsersFile)
	if err != nil {
		return nil, fmt.Errorf("users file: %w", err)
	}
	return parseUsers(path, b)
}

// parseUsers is LoadUsers on the file's content b; path names it in errors.
func parseUsers(path string, b []byte) (map[string]string, error) {
	b = bytes.TrimPrefix(b, []byte("\xef\xbb\xbf"))
	r := csv.NewReader(bytes.NewReader(b))
	r.ReuseRecord = true
	at := func(line int, format string, a ...any) error {
		return fmt.Errorf("users file %s line %d: %s", path, line, fmt.Sprintf(format, a...))
	}
	header, err := r.Read()
	if err == io.EOF {
		return nil, fmt.Errorf("users file %s: empty; want a header user,password and a user per line", path)
	}
	if err != nil {
		return nil, csvError(path, err)
	}
	ui, pi := -1, -1
	for i, name := range header {
		switch strings.TrimSpace(name) {
		case "user":
			ui = i
		case "password":
			pi = i
		}
	}
	if ui < 0 || pi < 0 {
		return nil, at(1, "the header %q does not name both columns user and password", strings.Join(header, ","))
	}
	users := map[string]string{}
	firstLine := map[string]int{}
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, csvError(path, err)
		}
		line, _ := r.FieldPos(0)
		user := rec[ui]
		if user == "" {
			return nil, at(line, "empty user")
		}
		if l, dup := firstLine[user]; dup {
			return nil, at(line, "user %q again (first on line %d)", user, l)
		}
		firstLine[user] = line
		users[user] = rec[pi]
	}
	if len(users) == 0 {
		return nil, fmt.Errorf("users file %s: no users after the header", path)
	}
	return users, nil
}

// csvError words a CSV reader's error with the file and its line.
func csvError(path string, err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		msg := pe.Err.Error()
		if errors.Is(pe.Err, csv.ErrFieldCount) {
			msg = "another number of fields than the header"
		}
		return fmt.Errorf("users file %s line %d: %s", path, pe.StartLine, msg)
	}
	return fmt.Errorf("users file %s: %w", path, err)
}

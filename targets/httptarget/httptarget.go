package httptarget

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	nethttp "net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/runner-dev/runner/targets"
)

// Defaults of Config's zero fields.
const (
	DefaultListen      = targets.DefaultListen
	DefaultErrorStatus = nethttp.StatusServiceUnavailable
)

// Config is the target's behaviour. The zero value is a plain target on a
// free loopback port that answers every request at once with 200 "ok\n".
//
// Every knob's zero value keeps the plain behaviour.
type Config struct {
	// Listen is the TCP address to listen on; default 127.0.0.1:0 (a free port).
	Listen string
	// Delay is a fixed extra time before every counted request is answered
	// (its service time); 0 answers at once.
	Delay time.Duration
	// ErrorEvery, when N > 0, answers every Nth counted request with
	// ErrorStatus and an empty body. Requests are numbered globally, across
	// connections, in arrival order, so exactly 1/N of them fail.
	ErrorEvery int
	// ErrorStatus is the status of ErrorEvery's failures, 200–599; default 503.
	ErrorStatus int
	// CloseAfter, when N > 0, answers the Nth counted request on each
	// connection with `Connection: close` and closes the connection after it.
	CloseAfter int
	// ResetAfterConns, when K > 0, accepts every connection but resets
	// (SO_LINGER 0) each one accepted while K load connections are
	// already counted, at once and before reading anything: a server at
	// its connection limit that accepts and drops. Control connections
	// (/healthz, /stats) made before then do not count; later ones are
	// reset too.
	ResetAfterConns int
	// SlowFor and SlowDelay make a slow start: a counted request that
	// arrives less than SlowFor after the target began listening waits
	// SlowDelay instead of Delay. SlowFor 0 means no slow start.
	SlowFor   time.Duration
	SlowDelay time.Duration
	// DelayPerSeq adds n × DelayPerSeq to a counted request's delay, n
	// the non-negative integer that is the last segment of its path
	// (/d/17 → 17 × DelayPerSeq); a path ending otherwise gets nothing
	// extra. 0 means off.
	DelayPerSeq time.Duration
	// DelayPath replaces Delay for the counted requests to the paths it
	// names (see PathDelays for matching): a known service time per path,
	// e.g. {"/login": 5ms, "/items": 2ms}. SlowDelay still replaces it
	// during SlowFor, and DelayPerSeq still adds to it. nil: Delay for all.
	DelayPath PathDelays
	// Users is the shop's users file (shop.go): CSV with a header naming
	// the columns user and password. "" means the built-in rule: any
	// non-empty user whose password is "pw-" + user. Serve reads the file
	// before it listens.
	Users string
	// MaxSessions bounds the shop's live sessions; a login beyond it
	// evicts the oldest. 0 means DefaultMaxSessions.
	MaxSessions int
	// Truth knobs (truth.go). Workers 1 serves counted requests one at a
	// time, FIFO in arrival order, each taking its delay as service time;
	// 0 serves them all at once. StallEvery P and StallFor D hold every
	// response that would leave during [kP, kP+D) of the stall clock
	// until kP+D; the stall clock starts at StallOrigin: "start" (the
	// target began listening, the default) or "first" (its first counted
	// request); "" means "start".
	Workers     int
	StallEvery  time.Duration
	StallFor    time.Duration
	StallOrigin string
}

// flags registers cfg's fields on fs, with their current values as defaults.
func (cfg *Config) flags(fs *flag.FlagSet) {
	targets.ListenFlag(fs, &cfg.Listen)
	fs.DurationVar(&cfg.Delay, "delay", cfg.Delay, "fixed extra delay before each counted request is answered (e.g. 5ms)")
	fs.IntVar(&cfg.ErrorEvery, "error-every", cfg.ErrorEvery, "answer every Nth counted request (global arrival order) with --error-status; 0 = never")
	fs.IntVar(&cfg.ErrorStatus, "error-status", cfg.ErrorStatus, "status of the --error-every failures (200-599)")
	fs.IntVar(&cfg.CloseAfter, "close-after", cfg.CloseAfter, "send Connection: close and close after N counted requests on a connection; 0 = never")
	fs.IntVar(&cfg.ResetAfterConns, "reset-after-conns", cfg.ResetAfterConns, "accept, then reset at once (RST) every connection made while K load connections are counted; 0 = never")
	fs.DurationVar(&cfg.SlowFor, "slow-for", cfg.SlowFor, "slow start: for this long after the target starts listening, delay counted requests by --slow-delay instead of --delay (e.g. 5s); 0 = off")
	fs.DurationVar(&cfg.SlowDelay, "slow-delay", cfg.SlowDelay, "the delay of counted requests during --slow-for (e.g. 300ms)")
	fs.Var(pathDelaysFlag{&cfg.DelayPath}, "delay-path", "for each pair of `PATH=D[,...]`, counted requests to PATH wait D instead of --delay (PATH exact, or ending in / for the paths under it); repeatable (e.g. /login=5ms,/items=2ms)")
	fs.StringVar(&cfg.Users, "users", cfg.Users, "CSV `FILE` of the shop's users (header user,password); default: any user whose password is pw-USER")
	fs.IntVar(&cfg.MaxSessions, "max-sessions", cfg.MaxSessions, "most live shop sessions; a login beyond it evicts the oldest (0 = 100000)")
	fs.DurationVar(&cfg.DelayPerSeq, "delay-per-seq", cfg.DelayPerSeq, "add n times this to the delay, n the number that ends the path (/d/17: 17 × it; e.g. 4ms); 0 = off")
	cfg.truthFlags(fs)
}

func defaults() Config {
	return Config{Listen: DefaultListen, ErrorStatus: DefaultErrorStatus}
}

// ParseArgs parses the target's command line (the words of `target.args`
// in a scenario), e.g. ["--delay", "5ms", "--error-every", "4"]. Flags
// may start with - or --. An unknown flag, a malformed or out-of-range
// value, or a positional argument is an error; so is a users file
// (--users) that LoadUsers refuses, read here too so that a scenario's
// check finds it before anything runs (a relative path is read from the
// working directory, as the spawned target reads it).
func ParseArgs(args []string) (Config, error) {
	cfg := defaults()
	if err := targets.ParseFlags("http", args, cfg.flags); err != nil {
		return Config{}, err
	}
	if err := cfg.validate(); err != nil {
		return Config{}, err
	}
	if cfg.Users != "" {
		if _, err := LoadUsers(cfg.Users); err != nil {
			return Config{}, err
		}
	}
	return cfg, nil
}

// Usage describes the flags ParseArgs accepts, one per line.
func Usage() string {
	cfg := defaults()
	return targets.FlagUsage("http", cfg.flags)
}

// withDefaults fills zero fields in.
func (cfg Config) withDefaults() Config {
	if cfg.Listen == "" {
		cfg.Listen = DefaultListen
	}
	if cfg.ErrorStatus == 0 {
		cfg.ErrorStatus = DefaultErrorStatus
	}
	return cfg
}

func (cfg Config) validate() error {
	var errs []error
	if cfg.Delay < 0 {
		errs = append(errs, fmt.Errorf("delay %s: must not be negative", cfg.Delay))
	}
	if cfg.ErrorEvery < 0 {
		errs = append(errs, fmt.Errorf("error-every %d: must not be negative", cfg.ErrorEvery))
	}
	if cfg.ErrorStatus < 200 || cfg.ErrorStatus > 599 {
		errs = append(errs, fmt.Errorf("error-status %d: want 200-599", cfg.ErrorStatus))
	}
	if cfg.CloseAfter < 0 {
		errs = append(errs, fmt.Errorf("close-after %d: must not be negative", cfg.CloseAfter))
	}
	if cfg.ResetAfterConns < 0 {
		errs = append(errs, fmt.Errorf("reset-after-conns %d: must not be negative", cfg.ResetAfterConns))
	}
	if cfg.SlowFor < 0 || cfg.SlowDelay < 0 || cfg.DelayPerSeq < 0 {
		errs = append(errs, fmt.Errorf("slow-for %s, slow-delay %s, delay-per-seq %s: must not be negative", cfg.SlowFor, cfg.SlowDelay, cfg.DelayPerSeq))
	}
	if cfg.MaxSessions < 0 {
		errs = append(errs, fmt.Errorf("max-sessions %d: must not be negative", cfg.MaxSessions))
	}
	errs = append(errs, validatePathDelays(cfg.DelayPath)...)
	errs = append(errs, cfg.validateTruth()...)
	return errors.Join(errs...)
}

// Serve listens on cfg.Listen, calls ready with the bound address
// (host:port) once connections are accepted, and serves until ctx is
// done; then it shuts down gracefully (in-flight requests get up to 1 s)
// and returns nil. Errors: an invalid cfg, a failed listen, or the server
// failing on its own.
//
// It speaks HTTP/1.x and, on the same port, cleartext HTTP/2 with prior
// knowledge (h2c: a connection that opens with the HTTP/2 preface); an
// HTTP/2 connection counts once in connections however many streams it
// carries, and its streams are served concurrently.
//
// Endpoints:
//   - GET /healthz: 200 "ok\n", not counted.
//   - GET /stats: the counters as a flat JSON object of integers, not counted.
//   - any other method or path: a counted request, answered 200 "ok\n"
//     after its delay (Delay, or its path's DelayPath, or SlowDelay
//     during SlowFor; plus DelayPerSeq × n), or ErrorStatus with an empty
//     body (ErrorEvery).
//   - POST /login, POST /logout, GET /items, GET /items/{id}: the shop
//     (shop.go), counted requests too, answered by the shop after the
//     delay unless ErrorEvery fails them.
//
// Counters (/stats): requests (counted requests received), ok (2xx
// answers), status_NNN per status answered (status_200 and the error
// status are always present), connections (TCP connections accepted,
// minus control connections), control_connections (those whose first
// request was /healthz or /stats: the spawner's health checks and
// reconciliation fetches, kept apart so that connections reconciles with
// the client's connections opened), closed_by_server (connections closed
// by CloseAfter), reset_at_accept (connections reset by ResetAfterConns,
// not in connections), worker_idle_us (with Workers 1 only: how long the
// single worker waited with nothing queued after its first request, in
// µs), late_max_us (the most any counted response was written after the
// instant it was due, in µs: the target's own wake-up and write delay,
// the part of a measured response time that is neither the scheduled
// service time nor the client's). The shop's: login, logout, items and
// item (requests to /login, /logout, /items and /items/{id}), each with
// ENDPOINT_NNN per status answered (200, 400, 401, 403, 404, 405 and the
// error status always present, e.g. login_200, items_401, item_404),
// sessions (live logins now, not a counter) and sessions_evicted (logins
// evicted at MaxSessions). Counters are atomic and start at zero.
//
// With Users set, Serve reads the users file (LoadUsers) before it
// listens; a bad file is its error.
func Serve(ctx context.Context, cfg Config, ready func(addr string)) error {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return err
	}
	var users map[string]string
	if cfg.Users != "" {
		var err error
		if users, err = LoadUsers(cfg.Users); err != nil {
			return err
		}
	}
	ln, err := targets.Listen(cfg.Listen)
	if err != nil {
		return err
	}
	t := &target{cfg: cfg, start: time.Now(), shop: newShop(users, cfg.MaxSessions)}
	srv := &nethttp.Server{
		Handler:           t,
		ConnContext:       t.connContext,
		ConnState:         t.connState,
		ReadHeaderTimeout: time.Minute,
	}
	// HTTP/1.x, and HTTP/2 with prior knowledge (h2c) on the same port:
	// a connection that opens with the HTTP/2 preface speaks HTTP/2.
	srv.Protocols = new(nethttp.Protocols)
	srv.Protocols.SetHTTP1(true)
	srv.Protocols.SetUnencryptedHTTP2(true)
	return targets.ServeUntil(ctx, ln, ready,
		func() error { return srv.Serve(&resetListener{Listener: ln, t: t}) },
		func() { targets.ShutdownHTTP(srv) })
}

// resetListener resets the connections ResetAfterConns turns away. The
// server's loop marks a connection new (connState counts it) before it
// accepts the next, so the count it reads is exact.
type resetListener struct {
	net.Listener
	t *target
}

// Accept returns the next connection the target serves.
func (l *resetListener) Accept() (net.Conn, error) {
	for {
		nc, err := l.Listener.Accept()
		k := int64(l.t.cfg.ResetAfterConns)
		if err != nil || k == 0 || l.t.connections.Load() < k {
			return nc, err
		}
		// Counted before the reset, so a client that saw it and then
		// fetches the counters finds it there.
		l.t.resetAtAccept.Add(1)
		if tc, ok := nc.(*net.TCPConn); ok {
			tc.SetLinger(0)
		}
		nc.Close()
	}
}

// target is the handler and its counters.
type target struct {
	cfg   Config
	start time.Time // when the target began listening (SlowFor)
	truth truthState
	shop  *shop

	requests           atomic.Int64
	ok                 atomic.Int64
	status             [600]atomic.Int64
	connections        atomic.Int64
	controlConnections atomic.Int64
	closedByServer     atomic.Int64
	resetAtAccept      atomic.Int64
	lateMaxUs          atomic.Int64 // late_max_us, see recordLate
}

// connInfo is one connection's state, reached from its requests' context.
type connInfo struct {
	requests atomic.Int64 // requests of any kind seen on the connection
	counted  atomic.Int64 // counted requests served on the connection
	control  atomic.Bool  // its first request was /healthz or /stats
}

type connKey struct{}

func (t *target) connContext(ctx context.Context, _ net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, &connInfo{})
}

func (t *target) connState(_ net.Conn, s nethttp.ConnState) {
	if s == nethttp.StateNew {
		t.connections.Add(1)
	}
}

var okBody = []byte("ok\n")

// ServeHTTP routes /healthz and /stats, and counts everything else;
// /malformed is answered with a status line that is not HTTP
// (serveMalformed).
func (t *target) ServeHTTP(w nethttp.ResponseWriter, r *nethttp.Request) {
	ci, _ := r.Context().Value(connKey{}).(*connInfo)
	control := r.URL.Path == "/healthz" || r.URL.Path == "/stats"
	if ci != nil {
		first := ci.requests.Add(1) == 1
		switch {
		case first && control:
			// Decided before the stats snapshot below, so a fetch never
			// counts its own connection.
			ci.control.Store(true)
			t.connections.Add(-1)
			t.controlConnections.Add(1)
		case !control && ci.control.CompareAndSwap(true, false):
			// A control connection that now carries load counts after all.
			t.connections.Add(1)
			t.controlConnections.Add(-1)
		}
	}
	switch {
	case control && r.Method != nethttp.MethodGet && r.Method != nethttp.MethodHead:
		w.Header().Set("Allow", "GET, HEAD")
		nethttp.Error(w, "method not allowed", nethttp.StatusMethodNotAllowed)
	case r.URL.Path == "/healthz":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write(okBody)
	case r.URL.Path == "/stats":
		w.Header().Set("Content-Type", "application/json")
		w.Write(t.stats())
	case r.URL.Path == "/malformed":
		t.serveMalformed(w, r)
	default:
		t.serveCounted(w, r, ci)
	}
}

// serveMalformed answers a counted request to /malformed with a status
// line that is not HTTP, `XTTP/1.1 502 ` followed by the value of the
// request's X-Echo header, and closes the connection: a protocol error
// whose message the client quotes (shortened), reflecting what it sent.
// It counts in requests, never in ok or a status.
func (t *target) serveMalformed(w nethttp.ResponseWriter, r *nethttp.Request) {
	t.requests.Add(1)
	io.Copy(io.Discard, r.Body)
	hj, ok := w.(nethttp.Hijacker)
	if !ok {
		nethttp.Error(w, "cannot take over the connection", nethttp.StatusInternalServerError)
		return
	}
	conn, buf, err := hj.Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	buf.WriteString("XTTP/1.1 502 " + r.Header.Get("X-Echo") + "\r\n\r\n")
	buf.Flush()
}

// serveCounted answers one counted request. Its number (global arrival
// order) is taken on arrival, before the delay, so ErrorEvery is exact
// whatever the concurrency.
func (t *target) serveCounted(w nethttp.ResponseWriter, r *nethttp.Request, ci *connInfo) {
	n := t.requests.Add(1)
	ep := endpointOf(r.URL.Path)
	if ep != epNone {
		t.shop.arrived(ep)
	}
	if ci != nil && t.cfg.CloseAfter > 0 && ci.counted.Add(1) == int64(t.cfg.CloseAfter) {
		w.Header().Set("Connection", "close")
		t.closedByServer.Add(1)
	}
	var body []byte
	tooLarge := false
	if ep == epLogin {
		body, _ = io.ReadAll(io.LimitReader(r.Body, maxLoginBody+1))
		tooLarge = len(body) > maxLoginBody
	}
	io.Copy(io.Discard, r.Body)
	due := t.hold(r.Context(), t.delay(r))
	status := nethttp.StatusOK
	failed := false
	if e := t.cfg.ErrorEvery; e > 0 && n%int64(e) == 0 {
		status, failed = t.cfg.ErrorStatus, true
	}
	h := w.Header()
	if ep != epNone && !failed {
		// The shop decides once the delay is over, so a login's session
		// exists from the moment its answer leaves.
		status = t.shop.serve(w, r, ep, body, tooLarge)
	} else if status == nethttp.StatusOK {
		h.Set("Content-Type", "text/plain; charset=utf-8")
		h.Set("Content-Length", "3")
		w.WriteHeader(status)
		w.Write(okBody)
	} else {
		h.Set("Content-Length", "0")
		w.WriteHeader(status)
	}
	t.recordLate(due)
	if ep != epNone {
		t.shop.answered(ep, status)
	}
	t.status[status].Add(1)
	if status >= 200 && status <= 299 {
		t.ok.Add(1)
	}
}

// stats renders the counters as a flat JSON object with sorted keys.
func (t *target) stats() []byte {
	m := map[string]int64{
		"requests":            t.requests.Load(),
		"ok":                  t.ok.Load(),
		"connections":         t.connections.Load(),
		"control_connections": t.controlConnections.Load(),
		"closed_by_server":    t.closedByServer.Load(),
		"reset_at_accept":     t.resetAtAccept.Load(),
		"late_max_us":         t.lateMaxUs.Load(),
	}
	if t.cfg.Workers == 1 {
		t.truth.mu.Lock()
		m["worker_idle_us"] = t.truth.idle.Microseconds()
		t.truth.mu.Unlock()
	}
	t.shop.stats(m, t.cfg.ErrorStatus)
	for code := range t.status {
		if v := t.status[code].Load(); v != 0 || code == nethttp.StatusOK || code == t.cfg.ErrorStatus {
			m["status_"+strconv.Itoa(code)] = v
		}
	}
	b, _ := json.Marshal(m) // a map of int64 always marshals
	return append(b, '\n')
}

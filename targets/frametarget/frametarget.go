package frametarget

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	nethttp "net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runner-dev/runner/targets"
)

// Defaults of Config's zero fields.
const (
	DefaultListen = targets.DefaultListen
	// DefaultHandler is the reply a request gets: its own payload.
	DefaultHandler = HandlerEcho
	// DefaultRounds is the number of SHA-256 rounds of the digest handler.
	DefaultRounds = 16
	// DefaultWorkers is the number of event loops (worker goroutines).
	DefaultWorkers = 4

	// MaxWorkers bounds Workers.
	MaxWorkers = 1024
	// MaxRounds bounds Rounds.
	MaxRounds = 1 << 20

	// shutdownGrace bounds the graceful shutdown; then connections are
	// closed.
	shutdownGrace = targets.ShutdownGrace
	// writeTimeout bounds one batch of writes to a connection; a client
	// that does not read for this long loses its connection (and stops
	// holding up its worker).
	writeTimeout = 5 * time.Second
	// closeLinger bounds how long a connection closed by CloseAfter keeps
	// reading (and discarding) after its FIN, waiting for the client's.
	closeLinger = time.Second
	// readBufSize and writeBufSize size each connection's buffers, in bytes.
	readBufSize  = 64 << 10
	writeBufSize = 64 << 10
	// jobQueue is the capacity of each worker's queue, in frames (up to
	// 64 MiB of payloads); a full queue stops its connections' readers.
	jobQueue = 64
)

// The handlers: what a request's reply carries.
const (
	// HandlerEcho replies with the request's payload.
	HandlerEcho = "echo"
	// HandlerDigest replies with the 32-byte SHA-256 of the payload,
	// computed Rounds times over the whole payload (CPU work).
	HandlerDigest = "digest"
)

// Config is the target's behaviour. The zero value is the default target
// on a free loopback port: an echo server on 4 event loops.
//
// Handler, Rounds and Workers take their default when zero. Every truth
// knob's zero value is off.
type Config struct {
	// Listen is the TCP address to listen on; default 127.0.0.1:0 (a free port).
	Listen string
	// Handler is HandlerEcho (the reply's payload is the request's) or
	// HandlerDigest (SHA-256 over the whole payload, Rounds times, as
	// seed 003's handler does; the reply's payload is the 32-byte digest);
	// default echo.
	Handler string
	// Rounds is the number of SHA-256 rounds of the digest handler, 1 to
	// MaxRounds; default 16.
	Rounds int
	// Workers is the number of event loops, 1 to MaxWorkers; default 4.
	// Each frame connection is bound for life to one of them, round-robin
	// in the order connections are recognized as frame connections; the
	// worker runs the handler (the CPU work) for every frame of its
	// connections, one at a time, and writes the replies.
	Workers int

	// Truth knobs (truth.go).

	// Delay is an extra wait before each reply is written, after the
	// handler has run; it does not hold up the worker's other frames.
	Delay time.Duration
	// Reorder, when K ≥ 2, holds each connection's replies and writes each
	// batch of K in reverse order; a partial batch leaves, reversed too,
	// 50 ms after its first reply was held.
	Reorder int
	// MalformedEvery, when N > 0, replaces every Nth reply (numbered
	// across the target as the handler finishes, 1, 2, …) by the fault
	// Malformed. Give both or neither.
	MalformedEvery int
	// Malformed is MalformedEvery's fault, one of the Malformed* kinds.
	Malformed string
	// CloseAfter, when N > 0, closes each frame connection after writing
	// its Nth reply.
	CloseAfter int
	// CutAfter, when N > 0, writes the first half of each frame
	// connection's (N+1)th reply after its Nth, then closes it: a frame
	// cut short. Give at most one of CloseAfter and CutAfter.
	CutAfter int
}

// flags registers cfg's fields on fs, with their current values as defaults.
func (cfg *Config) flags(fs *flag.FlagSet) {
	targets.ListenFlag(fs, &cfg.Listen)
	fs.StringVar(&cfg.Handler, "handler", cfg.Handler, "what a reply carries: echo (the request's payload) or digest (32 bytes: --rounds rounds of SHA-256 of the payload)")
	fs.IntVar(&cfg.Rounds, "rounds", cfg.Rounds, "rounds of SHA-256 of the digest handler: h = sha256(payload), then h = sha256(h) N-1 more times; 1 to 1048576")
	fs.IntVar(&cfg.Workers, "workers", cfg.Workers, "event loops: each frame connection is bound to one (round-robin), which runs its handler work and writes its replies; 1 to 1024")
	cfg.truthFlags(fs)
}

func defaults() Config {
	return Config{Listen: DefaultListen, Handler: DefaultHandler, Rounds: DefaultRounds, Workers: DefaultWorkers}
}

// ParseArgs parses the target's command line (the words of `target.args`
// in a scenario), e.g. ["--handler", "digest", "--workers", "1"]. Flags
// may start with - or --. An unknown flag, a malformed or out-of-range
// value, a combination that makes no sense, or a positional argument is an
// error.
func ParseArgs(args []string) (Config, error) {
	cfg := defaults()
	if err := targets.ParseFlags("frame", args, cfg.flags); err != nil {
		return Config{}, err
	}
	if err := cfg.validate(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// Usage describes the flags ParseArgs accepts, one per line.
func Usage() string {
	cfg := defaults()
	return targets.FlagUsage("frame", cfg.flags)
}

// withDefaults fills zero fields in.
func (cfg Config) withDefaults() Config {
	if cfg.Listen == "" {
		cfg.Listen = DefaultListen
	}
	if cfg.Handler == "" {
		cfg.Handler = DefaultHandler
	}
	if cfg.Rounds == 0 {
		cfg.Rounds = DefaultRounds
	}
	if cfg.Workers == 0 {
		cfg.Workers = DefaultWorkers
	}
	return cfg
}

// validate checks a Config with its defaults filled in.
func (cfg Config) validate() error {
	var errs []error
	if cfg.Handler != HandlerEcho && cfg.Handler != HandlerDigest {
		errs = append(errs, fmt.Errorf("handler %q: want %q or %q", cfg.Handler, HandlerEcho, HandlerDigest))
	}
	if cfg.Rounds < 1 || cfg.Rounds > MaxRounds {
		errs = append(errs, fmt.Errorf("rounds %d: want 1 to %d", cfg.Rounds, MaxRounds))
	}
	if cfg.Workers < 1 || cfg.Workers > MaxWorkers {
		errs = append(errs, fmt.Errorf("workers %d: want 1 to %d", cfg.Workers, MaxWorkers))
	}
	errs = append(errs, cfg.validateTruth()...)
	return errors.Join(errs...)
}

// Serve listens on cfg.Listen, calls ready with the bound address
// (host:port) once connections are accepted, and serves until ctx is
// done; then it shuts down gracefully and returns nil: it stops reading
// frames, lets the replies to frames already read leave for up to 1 s,
// then closes every connection. Errors: an invalid cfg, a failed listen,
// or the listener failing on its own.
//
// One port, two protocols: the first 4 bytes of each accepted connection
// decide. "GET " or "HEAD" makes it an HTTP/1.1 control connection:
//   - GET /healthz: 200 "ok\n".
//   - GET /stats: 200, the counters as a flat JSON object of integers.
//   - anything else: 404.
//
// Anything else makes it a frame connection (LKDF, see protocol.go): each
// well-formed request frame (magic "LKDF", version 1, type 1, length ≤
// 1 MiB) gets one response frame (type 2, the request's flags and
// requestId) whose payload is the handler's result. A bad frame (bad
// magic, version or type, or a length over 1 MiB) closes the connection
// at once, without reading (or allocating) its payload; replies not yet
// written are dropped. When the client half-closes, the replies still due
// leave and then the connection is closed. Accepted connections have
// TCP_NODELAY set.
//
// Counters (/stats), atomic int64, starting at zero: requests (well-formed
// request frames received), responses (response frames written, extras
// included: zero-length and unknown-id replies count, the other faults do
// not), bad_frames, connections (frame connections), control_connections
// (HTTP connections), closed_by_server (CloseAfter, CutAfter), cut_sent
// (replies cut short by CutAfter; not responses), malformed_sent
// (faults sent, unknown-id extras included), unknown_sent (unknown-id
// extras), bytes_in and bytes_out (payload bytes of the request frames
// received and of the response frames written; headers and faults'
// bytes excluded).
func Serve(ctx context.Context, cfg Config, ready func(addr string)) error {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return err
	}
	ln, err := targets.Listen(cfg.Listen)
	if err != nil {
		return err
	}
	s := newServer(cfg)
	for _, w := range s.workers {
		s.workerWG.Add(1)
		go w.run()
	}
	httpLn := newChanListener(ln.Addr())
	srv := &nethttp.Server{
		Handler:           nethttp.HandlerFunc(s.serveHTTP),
		ReadHeaderTimeout: time.Minute,
	}
	httpDone := make(chan struct{})
	go func() { defer close(httpDone); srv.Serve(httpLn) }()
	err = targets.ServeUntil(ctx, ln, ready,
		func() error { return s.acceptLoop(ln, httpLn) },
		func() {
			s.stopping.Store(true)
			ln.Close()
		})
	s.shutdown(srv, httpDone)
	return err
}

// server is the target: its counters, its workers and its live connections.
type server struct {
	cfg     Config
	workers []*worker

	requests           atomic.Int64
	responses          atomic.Int64
	badFrames          atomic.Int64
	connections        atomic.Int64
	controlConnections atomic.Int64
	closedByServer     atomic.Int64
	cutSent            atomic.Int64
	malformedSent      atomic.Int64
	unknownSent        atomic.Int64
	bytesIn            atomic.Int64
	bytesOut           atomic.Int64

	replySeq atomic.Int64 // numbers replies across the target (MalformedEvery)
	pending  atomic.Int64 // frames read whose reply is neither written nor dropped

	stopping atomic.Bool   // shutting down: readers stop at their next read
	done     chan struct{} // closed at the end of shutdown: workers stop

	mu    sync.Mutex
	conns map[net.Conn]struct{} // accepted, not yet closed, not handed to HTTP

	// writing is held shared by every write of replies until its
	// counters are added (conn.writeLocked), and taken alone by counters
	// before it reads them: a client that has read a reply and then asks
	// for the counters finds it counted, even when the writer was
	// descheduled between its write and its count (responses 29999 of
	// 30000 on a busy machine).
	writing sync.RWMutex

	connWG   sync.WaitGroup // per-connection goroutines (peek, then reader)
	workerWG sync.WaitGroup
}

func newServer(cfg Config) *server {
	s := &server{cfg: cfg, done: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	s.workers = make([]*worker, cfg.Workers)
	for i := range s.workers {
		s.workers[i] = &worker{s: s, jobs: make(chan job, jobQueue)}
	}
	return s
}

// acceptLoop accepts connections until ln fails (or is closed) and
// classifies each on its own goroutine.
func (s *server) acceptLoop(ln net.Listener, httpLn *chanListener) error {
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.stopping.Load() || errors.Is(err, net.ErrClosed) {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return err
		}
		if tc, ok := nc.(*net.TCPConn); ok {
			tc.SetNoDelay(true)
		}
		s.mu.Lock()
		s.conns[nc] = struct{}{}
		s.mu.Unlock()
		s.connWG.Add(1)
		go s.classify(nc, httpLn)
	}
}

// classify peeks at a new connection's first 4 bytes and hands it to the
// HTTP server or serves it as a frame connection.
func (s *server) classify(nc net.Conn, httpLn *chanListener) {
	defer s.connWG.Done()
	r := bufio.NewReaderSize(nc, readBufSize)
	first, err := r.Peek(4)
	if err != nil || s.stopping.Load() {
		s.forget(nc)
		nc.Close()
		return
	}
	if p := string(first); p == "GET " || p == "HEAD" {
		s.forget(nc)
		s.controlConnections.Add(1)
		httpLn.handoff(&peekedConn{Conn: nc, r: r})
		return
	}
	n := s.connections.Add(1)
	c := newConn(s, nc, r, s.workers[(n-1)%int64(len(s.workers))])
	c.readLoop()
}

// forget removes nc from the live connections.
func (s *server) forget(nc net.Conn) {
	s.mu.Lock()
	delete(s.conns, nc)
	s.mu.Unlock()
}

// shutdown stops the readers, waits up to shutdownGrace for the replies
// due, then closes every connection and stops the workers.
func (s *server) shutdown(srv *nethttp.Server, httpDone <-chan struct{}) {
	s.stopping.Store(true)
	end := time.Now().Add(shutdownGrace)
	sctx, cancel := context.WithDeadline(context.Background(), end)
	defer cancel()
	go func() {
		if err := srv.Shutdown(sctx); err != nil {
			srv.Close()
		}
	}()
	s.mu.Lock()
	for nc := range s.conns {
		nc.SetReadDeadline(time.Now()) // wakes the readers: they stop as at EOF
	}
	s.mu.Unlock()
	for s.pending.Load() > 0 && time.Now().Before(end) {
		time.Sleep(2 * time.Millisecond)
	}
	s.mu.Lock()
	for nc := range s.conns {
		nc.Close()
	}
	s.mu.Unlock()
	waitFor(&s.connWG, time.Second)
	close(s.done)
	waitFor(&s.workerWG, time.Second)
	select {
	case <-httpDone:
	case <-time.After(shutdownGrace + time.Second):
	}
}

// waitFor waits for wg, at most d.
func waitFor(wg *sync.WaitGroup, d time.Duration) {
	ch := make(chan struct{})
	go func() { wg.Wait(); close(ch) }()
	select {
	case <-ch:
	case <-time.After(d):
	}
}

var okBody = []byte("ok\n")

// serveHTTP answers the control connections.
func (s *server) serveHTTP(w nethttp.ResponseWriter, r *nethttp.Request) {
	if r.Method != nethttp.MethodGet && r.Method != nethttp.MethodHead {
		nethttp.NotFound(w, r)
		return
	}
	switch r.URL.Path {
	case "/healthz":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write(okBody)
	case "/stats":
		w.Header().Set("Content-Type", "application/json")
		w.Write(s.stats())
	default:
		nethttp.NotFound(w, r)
	}
}

// counters returns the counters by their /stats names, once the writes
// under way have been counted (writing).
func (s *server) counters() map[string]int64 {
	s.writing.Lock()
	s.writing.Unlock() // an empty section: it only waits for the writes
	return map[string]int64{
		"requests":            s.requests.Load(),
		"responses":           s.responses.Load(),
		"bad_frames":          s.badFrames.Load(),
		"connections":         s.connections.Load(),
		"control_connections": s.controlConnections.Load(),
		"closed_by_server":    s.closedByServer.Load(),
		"cut_sent":            s.cutSent.Load(),
		"malformed_sent":      s.malformedSent.Load(),
		"unknown_sent":        s.unknownSent.Load(),
		"bytes_in":            s.bytesIn.Load(),
		"bytes_out":           s.bytesOut.Load(),
	}
}

// stats renders the counters as a flat JSON object with sorted keys.
func (s *server) stats() []byte {
	b, _ := json.Marshal(s.counters()) // a map of int64 always marshals
	return append(b, '\n')
}

// peekedConn is a connection whose first bytes were read into r.
type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *peekedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// chanListener is the HTTP server's listener: classify feeds it the
// control connections.
type chanListener struct {
	addr net.Addr
	ch   chan net.Conn
	once sync.Once
	done chan struct{}
}

func newChanListener(addr net.Addr) *chanListener {
	return &chanListener{addr: addr, ch: make(chan net.Conn), done: make(chan struct{})}
}

// handoff gives c to the HTTP server, or closes it if the server is gone.
func (l *chanListener) handoff(c net.Conn) {
	select {
	case l.ch <- c:
	case <-l.done:
		c.Close()
	}
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *chanListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *chanListener) Addr() net.Addr { return l.addr }

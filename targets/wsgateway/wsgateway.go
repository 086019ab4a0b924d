package wsgateway

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	nethttp "net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/runner-dev/runner/targets"
)

// Defaults of Config's zero fields.
const (
	DefaultListen = targets.DefaultListen
	// DefaultBucket is the token bucket's capacity, in tokens (messages).
	DefaultBucket = 100
	// DefaultRefill is the token bucket's refill rate, in tokens per second.
	DefaultRefill = 400.0
	// DefaultService is the fixed part of a normal message's service time.
	DefaultService = 2 * time.Millisecond
	// DefaultJitter is the mean of the exponential part of a normal
	// message's service time.
	DefaultJitter = time.Millisecond
	// DefaultSeed seeds the jitter's random numbers.
	DefaultSeed = 1
	// DefaultSerialService is a /serial message's exact service time.
	DefaultSerialService = 12 * time.Millisecond

	// shutdownGrace bounds the graceful shutdown; then connections are
	// closed.
	shutdownGrace = targets.ShutdownGrace
	// closeWait bounds the wait for a client's answer to our Close frame.
	closeWait = time.Second
	// writeTimeout bounds one frame's write; a client that does not read
	// for this long loses its connection.
	writeTimeout = 5 * time.Second
)

// Config is the gateway's behaviour. The zero value is the default
// gateway on a free loopback port: a bucket of 100 tokens refilled at 400
// tokens/s per connection, a service time of 2 ms plus an exponential
// jitter of mean 1 ms (seed 1), and 12 ms per /serial message.
//
// Fields with a non-zero default (Bucket, Refill, Service, Jitter, Seed,
// SerialService) take it when zero. Bucket, Service and Jitter can be
// turned off with a negative value (the flags say 0 for that). Every truth
// knob's zero value is off.
type Config struct {
	// Listen is the TCP address to listen on; default 127.0.0.1:0 (a free port).
	Listen string
	// Bucket is the capacity of each normal connection's token bucket, in
	// tokens (one per message); default 100; negative: no rate limiting.
	Bucket int
	// Refill is the rate at which a bucket refills, in tokens per second,
	// continuously; default 400.
	Refill float64
	// Service is the fixed part of a normal message's service time;
	// default 2 ms; negative: none.
	Service time.Duration
	// Jitter is the mean of the exponentially distributed part of a normal
	// message's service time; default 1 ms; negative: none.
	Jitter time.Duration
	// Seed seeds the jitter: connection number c (1, 2, … in accept order)
	// draws from a PCG source seeded with (Seed, c); default 1.
	Seed uint64
	// SerialService is the exact service time of a /serial message; default
	// 12 ms.
	SerialService time.Duration

	// Truth knobs (truth.go).

	// CloseAfter, when N > 0, closes each connection after it has replied
	// to its Nth message (and every earlier one): Close 1000 "bye", then up
	// to 1 s for the client's Close.
	CloseAfter int
	// CloseAbrupt makes CloseAfter drop the TCP connection instead, with no
	// Close frame.
	CloseAbrupt bool
	// NeverAnswer reads and counts messages but never replies.
	NeverAnswer bool
	// Reorder, when K ≥ 2, buffers each connection's replies and sends each
	// batch of K in reverse order; a partial batch leaves 50 ms after its
	// first reply was buffered.
	Reorder int
	// DuplicateEvery, when N > 0, sends every Nth reply twice (replies to
	// messages numbered across the gateway in the order they are made).
	DuplicateEvery int
	// UnknownIDEvery, when N > 0, sends {"id":"unknown-<n>","ok":true}
	// after the nth reply for every n divisible by N (same numbering as
	// DuplicateEvery): a reply to an id never sent.
	UnknownIDEvery int
	// SlowEvery, when N > 0, delays the reply to every Nth message (global
	// arrival order) by a further SlowDelay.
	SlowEvery int
	// SlowDelay is SlowEvery's extra wait; needed with SlowEvery.
	SlowDelay time.Duration
}

// flags registers cfg's fields on fs, with their current values as
// defaults. Here 0 means off for --bucket, --service and --jitter
// (ParseArgs maps it to Config's negative "off").
func (cfg *Config) flags(fs *flag.FlagSet) {
	targets.ListenFlag(fs, &cfg.Listen)
	fs.IntVar(&cfg.Bucket, "bucket", cfg.Bucket, "capacity of each connection's token bucket, in messages; 0 = no rate limiting")
	fs.Float64Var(&cfg.Refill, "refill", cfg.Refill, "token bucket refill rate, in tokens per second (continuous); > 0")
	fs.DurationVar(&cfg.Service, "service", cfg.Service, "fixed service time of a normal message (e.g. 2ms); 0 = none")
	fs.DurationVar(&cfg.Jitter, "jitter", cfg.Jitter, "mean of the exponential jitter added to --service (e.g. 1ms); 0 = none")
	fs.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "seed of the jitter's random numbers (per connection: PCG seeded with seed and connection number); >= 1")
	fs.DurationVar(&cfg.SerialService, "serial-service", cfg.SerialService, "exact service time of a /serial message, one at a time per connection, FIFO (e.g. 12ms); > 0")
	cfg.truthFlags(fs)
}

func defaults() Config {
	return Config{
		Listen:        DefaultListen,
		Bucket:        DefaultBucket,
		Refill:        DefaultRefill,
		Service:       DefaultService,
		Jitter:        DefaultJitter,
		Seed:          DefaultSeed,
		SerialService: DefaultSerialService,
	}
}

// ParseArgs parses the gateway's command line (the words of `target.args`
// in a scenario), e.g. ["--bucket", "50", "--service", "5ms"]. Flags may
// start with - or --. An unknown flag, a malformed or out-of-range value,
// a combination that makes no sense, or a positional argument is an error.
func ParseArgs(args []string) (Config, error) {
	cfg := defaults()
	if err := targets.ParseFlags("ws-gateway", args, cfg.flags); err != nil {
		return Config{}, err
	}
	if err := cfg.validateFlags(); err != nil {
		return Config{}, err
	}
	// A flag's 0 is Config's "off".
	if cfg.Bucket == 0 {
		cfg.Bucket = -1
	}
	if cfg.Service == 0 {
		cfg.Service = -1
	}
	if cfg.Jitter == 0 {
		cfg.Jitter = -1
	}
	if err := cfg.validate(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// Usage describes the flags ParseArgs accepts, one per line.
func Usage() string {
	cfg := defaults()
	return targets.FlagUsage("ws-gateway", cfg.flags)
}

// validateFlags checks the values as the flags give them (0 = off).
func (cfg Config) validateFlags() error {
	var errs []error
	if cfg.Bucket < 0 {
		errs = append(errs, fmt.Errorf("bucket %d: must not be negative (0 = no rate limiting)", cfg.Bucket))
	}
	if !(cfg.Refill > 0) {
		errs = append(errs, fmt.Errorf("refill %g: must be positive (--bucket 0 turns rate limiting off)", cfg.Refill))
	}
	if cfg.Service < 0 || cfg.Jitter < 0 {
		errs = append(errs, fmt.Errorf("service %s, jitter %s: must not be negative (0 = none)", cfg.Service, cfg.Jitter))
	}
	if cfg.Seed == 0 {
		errs = append(errs, errors.New("seed 0: want 1 or more"))
	}
	if cfg.SerialService <= 0 {
		errs = append(errs, fmt.Errorf("serial-service %s: must be positive", cfg.SerialService))
	}
	return errors.Join(errs...)
}

// withDefaults fills zero fields in.
func (cfg Config) withDefaults() Config {
	if cfg.Listen == "" {
		cfg.Listen = DefaultListen
	}
	if cfg.Bucket == 0 {
		cfg.Bucket = DefaultBucket
	}
	if cfg.Refill == 0 {
		cfg.Refill = DefaultRefill
	}
	if cfg.Service == 0 {
		cfg.Service = DefaultService
	}
	if cfg.Jitter == 0 {
		cfg.Jitter = DefaultJitter
	}
	if cfg.Seed == 0 {
		cfg.Seed = DefaultSeed
	}
	if cfg.SerialService == 0 {
		cfg.SerialService = DefaultSerialService
	}
	return cfg
}

// validate checks a Config with its defaults filled in.
func (cfg Config) validate() error {
	var errs []error
	if !(cfg.Refill > 0) || cfg.Refill > 1e9 {
		errs = append(errs, fmt.Errorf("refill %g: want a positive rate, at most 1e9 tokens/s", cfg.Refill))
	}
	if cfg.SerialService < 0 {
		errs = append(errs, fmt.Errorf("serial-service %s: must be positive", cfg.SerialService))
	}
	errs = append(errs, cfg.validateTruth()...)
	return errors.Join(errs...)
}

// MaxMessage is the largest message the gateway reads: 16 MiB. A larger
// one closes its connection with 1009 (message too big).
const MaxMessage = 16 << 20

// Serve listens on cfg.Listen, calls ready with the bound address
// (host:port) once connections are accepted, and serves until ctx is
// done; then it shuts down gracefully and returns nil: it stops reading
// messages, lets in-flight replies leave and sends every connection Close
// 1001 "going away", and after 1 s closes whatever is left. Errors: an
// invalid cfg, a failed listen, or the server failing on its own.
//
// Endpoints, all on one port:
//   - GET /healthz: 200 "ok\n".
//   - GET /stats: the counters as a flat JSON object of integers.
//   - /serial: a WebSocket in serial mode (see below).
//   - any other path: a WebSocket to the normal gateway. A request that is
//     not a WebSocket upgrade gets 400.
//
// Messages are text or binary frames holding a JSON object with an "id"
// member, any JSON value, which the reply repeats byte for byte; a reply
// has the frame type of its message. Replies:
//   - {"id":<id>,"ok":true} once the message has been served;
//   - {"id":<id>,"ok":false,"code":"RATE_LIMITED"} at once when the
//     connection's token bucket has no token (normal gateway only);
//   - {"ok":false,"code":"BAD_REQUEST"} at once for a frame that is not a
//     JSON object with an id (counted in bad_messages only);
//   - {"cmd":"stats","stats":{…}} at once for the control message
//     {"cmd":"stats"} (any object whose cmd is "stats"): the /stats
//     counters, not counted as a message.
//
// Normal gateway: each connection has a token bucket of Bucket tokens
// (full at the start) refilled continuously at Refill tokens/s on the
// monotonic clock. A message that takes a token is served concurrently
// with the others: its reply leaves Service + X after its arrival, X
// exponential with mean Jitter drawn in arrival order from the
// connection's own PCG source (seeded with Seed and the connection's
// number), so a run is reproducible.
//
// Serial mode (/serial): one message at a time per connection, FIFO, each
// taking exactly SerialService (no bucket, no jitter). Message k starts at
// max(its arrival, the end of message k−1) and ends SerialService later;
// the waits end at these absolute instants, so timer lateness never
// accumulates. At 12 ms a connection serves at most 83.3 messages/s.
//
// Counters (/stats), atomic, starting at zero: messages (messages with an
// id received and processed, both modes), ok and limited (their replies,
// counted when made), dropped_replies (messages never answered: all of
// them with NeverAnswer, and those still in service when their connection
// ended or was cut), serial_messages (the /serial part of messages),
// bad_messages, replies (frames written: ok, limited, BAD_REQUEST,
// duplicates and unknown-id extras; not control replies), duplicates_sent,
// unknown_sent, connections (WebSocket connections accepted, minus control
// connections), control_connections (those whose first message was a
// control message: the runner's own counter fetches, kept apart so that
// connections reconciles with the client's; one that later carries a
// normal message moves back to connections), control_messages,
// closes_sent, closes_clean, closes_abrupt (CloseAfter). When no message
// is in service, messages == ok + limited + dropped_replies.
func Serve(ctx context.Context, cfg Config, ready func(addr string)) error {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return err
	}
	ln, err := targets.Listen(cfg.Listen)
	if err != nil {
		return err
	}
	g := &gateway{cfg: cfg, conns: map[*conn]struct{}{}}
	srv := &nethttp.Server{
		Handler:           g,
		ConnContext:       g.connContext,
		ReadHeaderTimeout: time.Minute,
	}
	err = targets.ServeUntil(ctx, ln, ready,
		func() error { return srv.Serve(ln) },
		func() {
			shut := make(chan struct{})
			go func() {
				defer close(shut)
				targets.ShutdownHTTP(srv)
			}()
			g.shutdown()
			<-shut
		})
	if err != nil {
		g.shutdown()
	}
	return err
}

// gateway is the HTTP handler, its counters and its live connections.
type gateway struct {
	cfg Config

	connSeq  atomic.Uint64 // numbers WebSocket connections, from 1 (the jitter's seeds)
	replySeq atomic.Int64  // numbers replies to messages (DuplicateEvery, UnknownIDEvery)
	// messages also numbers messages across the gateway (SlowEvery).

	messages           atomic.Int64
	ok                 atomic.Int64
	limited            atomic.Int64
	replies            atomic.Int64
	badMessages        atomic.Int64
	connections        atomic.Int64
	controlConnections atomic.Int64
	controlMessages    atomic.Int64
	closesSent         atomic.Int64
	closesClean        atomic.Int64
	closesAbrupt       atomic.Int64
	duplicatesSent     atomic.Int64
	unknownSent        atomic.Int64
	droppedReplies     atomic.Int64
	serialMessages     atomic.Int64

	mu       sync.Mutex
	closing  bool               // shutting down: no new connections
	conns    map[*conn]struct{} // live WebSocket connections
	handlers sync.WaitGroup     // their handlers; Add only under mu while !closing
}

type netConnKey struct{}

// connContext keeps the TCP connection in its requests' context, so that
// a WebSocket can be dropped (CloseAbrupt) or cut (timeouts) at the socket.
func (g *gateway) connContext(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, netConnKey{}, c)
}

var okBody = []byte("ok\n")

// ServeHTTP routes /healthz and /stats and upgrades everything else.
func (g *gateway) ServeHTTP(w nethttp.ResponseWriter, r *nethttp.Request) {
	switch r.URL.Path {
	case "/healthz", "/stats":
		if r.Method != nethttp.MethodGet && r.Method != nethttp.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			nethttp.Error(w, "method not allowed", nethttp.StatusMethodNotAllowed)
			return
		}
		if r.URL.Path == "/healthz" {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.Write(okBody)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(append(g.stats(), '\n'))
		return
	}
	if !headerHas(r.Header, "Connection", "upgrade") || !headerHas(r.Header, "Upgrade", "websocket") {
		nethttp.Error(w, "this is a WebSocket gateway: upgrade to WebSocket, or GET /healthz or /stats", nethttp.StatusBadRequest)
		return
	}
	nc, _ := r.Context().Value(netConnKey{}).(net.Conn)
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		return // Accept has answered the request
	}
	// The library's default of 32 KiB would close on a 64 KiB message
	// (1009) before any counter saw it; a gateway takes up to 16 MiB.
	ws.SetReadLimit(MaxMessage)
	c := g.newConn(ws, nc, r.URL.Path == "/serial")
	g.mu.Lock()
	if g.closing {
		g.mu.Unlock()
		ws.Close(websocket.StatusGoingAway, "going away")
		return
	}
	g.conns[c] = struct{}{}
	g.handlers.Add(1)
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		delete(g.conns, c)
		g.mu.Unlock()
		g.handlers.Done()
	}()
	c.run()
}

// headerHas reports whether a comma-separated header of h contains token,
// case-insensitively.
func headerHas(h nethttp.Header, key, token string) bool {
	for _, v := range h.Values(key) {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// shutdown closes every connection gracefully, in-flight replies first,
// cuts them all after shutdownGrace, and waits for their handlers.
func (g *gateway) shutdown() {
	g.mu.Lock()
	g.closing = true
	live := make([]*conn, 0, len(g.conns))
	for c := range g.conns {
		live = append(live, c)
	}
	g.mu.Unlock()
	for _, c := range live {
		go c.startClose(websocket.StatusGoingAway, "going away", false)
	}
	cut := time.AfterFunc(shutdownGrace, func() {
		for _, c := range live {
			c.cut()
		}
	})
	defer cut.Stop()
	done := make(chan struct{})
	go func() { g.handlers.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(shutdownGrace + time.Second):
		// A handler still stuck after its socket was cut: leave it.
	}
}

// stats renders the counters as a flat JSON object with sorted keys.
func (g *gateway) stats() []byte {
	b, _ := json.Marshal(g.counters()) // a map of int64 always marshals
	return b
}

func (g *gateway) counters() map[string]int64 {
	return map[string]int64{
		"messages":            g.messages.Load(),
		"ok":                  g.ok.Load(),
		"limited":             g.limited.Load(),
		"replies":             g.replies.Load(),
		"bad_messages":        g.badMessages.Load(),
		"connections":         g.connections.Load(),
		"control_connections": g.controlConnections.Load(),
		"control_messages":    g.controlMessages.Load(),
		"closes_sent":         g.closesSent.Load(),
		"closes_clean":        g.closesClean.Load(),
		"closes_abrupt":       g.closesAbrupt.Load(),
		"duplicates_sent":     g.duplicatesSent.Load(),
		"unknown_sent":        g.unknownSent.Load(),
		"dropped_replies":     g.droppedReplies.Load(),
		"serial_messages":     g.serialMessages.Load(),
	}
}

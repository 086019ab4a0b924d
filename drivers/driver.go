// Package drivers is the protocol stage of the pipeline, between the
// engine's plan and measure: it defines the contract between the engine and
// a protocol driver (http, websocket, frame), and the outcome classes every
// request ends in. The engine decides when a request starts and stamps every
// time; a driver only sends one request on a connection and says how it
// ended.
package drivers

import (
	"context"
	"time"
)

// Driver opens connections to the target. Dial is safe for concurrent use.
type Driver interface {
	// Dial opens one connection. Its error is classified with Classify;
	// the engine books it as a connect failure, never as a request outcome
	// unless a request was waiting on it.
	Dial(ctx context.Context) (Conn, error)
}

// Conn is one connection to the target. Do is called by one goroutine at
// a time unless the driver reports MaxInflight > 1. Close may be called
// concurrently with Do and makes it return promptly.
type Conn interface {
	// Do sends one request and waits for its outcome. ctx carries the
	// request deadline (timeout) and cancellation (end of phase, Ctrl-C);
	// when ctx ends first, Do returns promptly with Class Timeout or
	// Cancelled. Do never decides latency: the engine stamps the send just
	// before calling it and the completion just after it returns (a
	// multiplexing driver may move the send later, to when it wrote the
	// request after waiting for a stream: Outcome.Sent).
	// A connection the server closed is re-dialled inside the next Do and
	// counted in Outcome.Dialed.
	Do(ctx context.Context, r Request) Outcome
	// Close releases the connection.
	Close() error
}

// Prober is implemented by connections that can tell, without sending
// anything and without blocking, whether they are still usable: a server
// can accept a connection and close or reset it at once (a full accept
// queue, a connection limit, a proxy with no backend), and its Dial
// succeeds all the same. The engine calls Alive on every connection at a
// phase's barrier, just before the release and never concurrently with
// Do; a connection that reports an error is closed, re-dialled once, and
// not counted as established if still dead. Conns without it count as
// established when their Dial succeeded.
type Prober interface {
	// Alive returns nil when nothing says the server closed or reset the
	// connection, and otherwise an error saying how it ended. It looks
	// only at what already arrived: a close still on its way is missed.
	Alive() error
}

// StreamCapper is implemented by drivers whose servers can cap the
// requests in flight per connection below the phase's inflight: HTTP/2's
// SETTINGS_MAX_CONCURRENT_STREAMS. Requests past the cap wait in the
// client for a stream (Request.QueueEnd, Outcome.Unsent). The engine
// reads it after a phase's dial-in and at its end, warns when the cap is
// below the phase's inflight, and names it when arrivals waited.
type StreamCapper interface {
	// StreamCap returns the smallest cap a server announced on the
	// connections dialled so far, and whether any announced one (a cap
	// of 0 is announced: nothing can be sent). It is safe for concurrent
	// use.
	StreamCap() (limit int, announced bool)
}

// Inflighter is implemented by drivers whose connections carry more than
// one request at a time (WebSocket, binary frames). HTTP/1.x does not.
type Inflighter interface {
	// MaxInflight is the largest in-flight cap per connection the driver supports.
	MaxInflight() int
}

// StrayCounter is implemented by drivers whose connections can receive
// what no request waits for (WebSocket, binary frames): replies after
// their request's timeout, replies with an id never sent or already
// answered, and closes the server started. The engine reads the totals
// when a phase starts and ends and books the differences to the phase:
// counted apart, never as ok and never dropped silently.
type StrayCounter interface {
	// Strays returns running totals since the driver was made. It is
	// safe for concurrent use.
	Strays() Strays
}

// Strays are running totals of a driver's unsolicited events.
type Strays struct {
	// Late counts replies that arrived after their request had timed out.
	Late int64
	// UnknownID counts replies whose id matches no request sent on their
	// connection (or whose id could not be read).
	UnknownID int64
	// DuplicateID counts further replies to an already answered request.
	DuplicateID int64
	// Closes counts connections the server closed, by close code: "1000"
	// for a clean close handshake, "1006" for a connection dropped without
	// one (abnormal closure), or the code the server sent.
	Closes map[string]int64
}

// DeadlineKeeper is implemented by drivers whose Do enforces
// Request.Deadline on its own (as socket deadlines). The engine then
// passes the phase's context, which carries only cancellation, instead
// of making a context with the deadline for every request: no timer, no
// allocation and no registration with the parent context per request.
// Drivers without it get a per-request context whose deadline is
// Request.Deadline.
type DeadlineKeeper interface {
	// KeepsDeadline marks the driver; it has no other effect.
	KeepsDeadline()
}

// Request identifies one request. Drivers render their templates from it.
type Request struct {
	// Seq is the request's sequence number, 1-based and unique within a
	// run; in a flow, the iteration's, the same for each of its steps.
	Seq uint64
	// Deadline is when the request times out (its send plus the
	// scenario's timeout). Zero: the driver uses ctx's deadline, or its
	// own timeout from the start of Do.
	Deadline time.Time
	// Flow and Step index the flow (FlowDriver.Flows) and its step this
	// request sends; 0 for drivers without flows.
	Flow, Step int
	// Vars carries the iteration's captured values (FlowDriver); nil for
	// drivers without flows.
	Vars Vars
	// Slot is the 0-based connection slot the engine sends on: one
	// virtual user, the same for every request its connection carries
	// (through re-dials), in [0, connections). It is global across
	// scale-out segments as Seq is: segment K of N numbers its local
	// slot k as k·N + K, so the segments' slots are those of one
	// generator. Drivers read it for data_order: connection.
	Slot int
	// Lane is the 0-based in-flight slot of connection Slot that sends
	// the request, in [0, inflight): one open-model worker, which sends
	// one request (or one flow iteration, all its steps) at a time. 0 in
	// the closed model. A multiplexing driver keeps a virtual user's
	// state (the HTTP/2 cookie jar) per (Slot, Lane).
	Lane int
	// QueueEnd, when not nil, is closed when a request that has not been
	// written yet may no longer be: the phase's drain ran out, or the run
	// was interrupted. A driver that waits inside Do before writing
	// anything, for what is the client's own queueing (HTTP/2's wait for
	// a stream under the server's SETTINGS_MAX_CONCURRENT_STREAMS), stops
	// waiting then and returns an Outcome with Unsent set. Nil: only ctx
	// ends such a wait.
	QueueEnd <-chan struct{}
}

// Class is a request's outcome class. Every request ends in exactly one.
type Class string

// Outcome classes (docs/design.md, "Outcomes"). Transport: Connect,
// Reset, Timeout, EOF, ShortRead. Protocol: BadFrame, UnknownID,
// DuplicateID. Semantic: Status, RuleFailed, Capture. Client-side ends
// that are not target errors: Cancelled (interrupted or still open after
// the end-of-phase grace).
const (
	OK          Class = "ok"
	Connect     Class = "connect"
	Reset       Class = "reset"
	Timeout     Class = "timeout"
	EOF         Class = "eof"
	ShortRead   Class = "short-read"
	BadFrame    Class = "bad-frame"
	UnknownID   Class = "unknown-id"
	DuplicateID Class = "duplicate-id"
	Status      Class = "status"
	RuleFailed  Class = "rule-failed"
	// Capture is a flow step whose response lacked a value a capture
	// takes (drivers/internal/capture: no such JSON path, header or
	// match, or a body cut before the capture could read it); its code
	// is CaptureCode of the capture's name. The iteration ends there.
	Capture   Class = "capture"
	Cancelled Class = "cancelled"
	// ClientError is a request the client could not make (e.g. code
	// id-in-use): the client's problem, not the target's.
	ClientError Class = "client"
)

// CaptureCode is the code of a Capture failure of the capture name:
// "capture:" + name. The prefix keeps a capture named like another code
// (timeout, 503, ECONNRESET) apart from it in errors_by; no other code
// has a colon, and a capture name is an identifier (letters, digits, _).
func CaptureCode(name string) string { return "capture:" + name }

// Outcome is how one request ended, as told by the driver. It carries no
// body: only what the recorder needs.
type Outcome struct {
	// Class is OK or an error class.
	Class Class
	// Code refines the class: the HTTP status ("503"), an errno name
	// ("ECONNREFUSED", "EADDRNOTAVAIL"), or a code read from the response.
	// Empty when there is none.
	Code string
	// Err describes a failure for humans; nil on OK.
	Err error
	// Responded is true when a complete response arrived (ok, status and
	// rule-failed outcomes), false for transport failures.
	Responded bool
	// BytesOut and BytesIn count the bytes written and read on the wire for
	// this request, headers included.
	BytesOut, BytesIn int64
	// Dialed counts connections this request had to open (re-dial after a
	// close, or every request with keep-alive off).
	Dialed int
	// Connect is the time spent dialling (TCP + TLS) inside Do; zero when
	// the connection was reused.
	Connect time.Duration
	// FirstByte is the time from the start of Do to the first response
	// byte; zero when no byte arrived.
	FirstByte time.Duration
	// Sent, when not zero, is the instant the request went to the wire
	// after waiting inside Do for something that is the client's own
	// queueing, not the request's service: a multiplexing driver (HTTP/2)
	// sets it once the request has a stream under the server's limit and
	// its turn to write. The engine then takes it as the request's send
	// (service time = done − Sent; the response time still runs from the
	// intended start). Zero: the engine's own stamp just before Do, which
	// includes any dial.
	Sent time.Time
	// Unsent is true when Do ended before any byte of the request was
	// written, while it waited for the client's own queueing (an HTTP/2
	// stream under the server's limit): the target never saw it. Class
	// is Cancelled. The engine books it as the open model books an
	// arrival still queued for a free slot: left over at the drain's end,
	// cancelled before sending on an interrupt; never as a request.
	Unsent bool
	// Resent is 1 when the request was sent a second time because the
	// server said it had not processed the first (HTTP/2 GOAWAY with a
	// lower last-stream-id, RFC 9113 §6.8); its outcome is the second
	// send's, its times run from its first. 0 otherwise.
	Resent int
}

// ConfigError is a problem in a driver's configuration, found before any
// traffic. Key locates it in the scenario: a key path relative to the
// driver's own mapping ("tls.ca_file", "headers.X-Id"), or an absolute one
// when it starts with "target." ("target.url"). Error is the message alone.
type ConfigError struct {
	Key string
	Err error
}

// Error returns the message.
func (e *ConfigError) Error() string { return e.Err.Error() }

// Unwrap returns the message's error.
func (e *ConfigError) Unwrap() error { return e.Err }

// Looper is implemented by drivers that can carry a closed-model phase's
// connections in event loops of their own, each waiting on all its
// sockets at once (epoll, its P held while it waits), instead of the engine's
// goroutine per connection: the same requests, outcomes and stamps for a
// fraction of the client's CPU (docs/design.md, "Event loop").
type Looper interface {
	// CanLoop reports whether this driver's connections can be carried by
	// RunClosed (HTTP/1.x: plain TCP, keep-alive, one request per
	// iteration), and if not, why not in a few words.
	CanLoop() (ok bool, why string)
	// RunClosed carries the closed model on conns, slot k's connection at
	// conns[k] (nil: not dialled yet, or its dial failed), in at most
	// loops event loops, and returns when every slot has stopped: slot k
	// sends a request when h.Next(k) gives one, again as soon as its
	// response is booked with h.Done (after h.Think), until Next says no.
	// stop closed (the phase's time is up) ends the waits of think time;
	// ctx's end cancels what is in flight, each booked with Done as Do
	// would return it (Cancelled with ctx's cause). It returns the
	// connections to keep per slot (a slot re-dialled, or dialled for the
	// first time, holds a new one; nil where none is left), usable again
	// by Do, and an error only when no loop could be started (nothing was
	// sent: the caller can fall back to Do). It runs exactly loops
	// loops (at least 1) when loops ≤ len(conns).
	RunClosed(ctx context.Context, stop <-chan struct{}, conns []Conn, loops int, h LoopHooks) ([]Conn, error)
	// RunOpen carries the open model on conns (as RunClosed's) in one
	// event loop, which keeps the phase's timetable itself: it takes
	// each arrival off the timetable when it comes due (h.Arrival,
	// h.Arrived), sends it on a free connection (h.Send), queues it for
	// the first to free up when none is (or drops it, when h.Drops), and
	// books every outcome with h.Done. drained closed (the drain's bound
	// passed) or ctx's end stops the timetable: what is still queued is
	// given back unsent (h.Unsent); ctx's end cancels what is in flight
	// too, each booked with Done as Do would return it. It returns when
	// the timetable has ended and nothing is queued or in flight, with
	// the connections to keep per slot, and an error only when the loop
	// could not start (nothing was sent: the caller can fall back to
	// goroutines).
	RunOpen(ctx context.Context, drained <-chan struct{}, conns []Conn, h OpenHooks) ([]Conn, error)
}

// OpenHooks is the engine's side of a Looper's open-model loop: its
// timetable (which arrival comes due when, how late each was taken),
// the numbering and stamps of its requests, and the booking of their
// outcomes. The loop calls every hook from its one goroutine.
type OpenHooks interface {
	// Start, Timeout and Done are LoopHooks'; Done's slot k is the
	// connection the request was sent on.
	Start() time.Time
	Timeout() time.Duration
	Done(loop, k int, r Request, out Outcome, done time.Duration)
	// Arrival returns the timetable's next arrival: its intended start
	// at and the instant due at which the loop takes it (at, or up to
	// the phase's dispatch window before it, to send a group of
	// arrivals on one wake-up), offsets from Start; false when no more
	// arrivals come (the phase's time or count is reached). Each call
	// moves on to the next arrival.
	Arrival() (at, due time.Duration, ok bool)
	// Arrived books the arrival intended at at, taken off the timetable
	// at now (an offset from Start): one more arrival, and how late the
	// generator took it.
	Arrived(at, now time.Duration)
	// Drops reports whether an arrival that finds every connection busy
	// is dropped (true) or queued for the first one to free up.
	Drops() bool
	// Dropped books an arrival dropped at now for want of a free
	// connection.
	Dropped(at, now time.Duration)
	// Send numbers and stamps the request of the arrival intended at at,
	// sent now on slot k's connection: the request (its Deadline left
	// zero: the send plus Timeout) and its send's offset from Start.
	Send(k int, at time.Duration) (r Request, sent time.Duration)
	// Unsent books the arrivals that were taken off the timetable and
	// never sent (queued, intended at the offsets given, in order), and
	// every later one that came due before the phase stopped: the
	// drain's bound passed or the run was cancelled. pending says the
	// arrival Arrival returned last was not taken (Arrived) yet: the
	// later ones start with it. The loop takes no arrival after it.
	Unsent(queued []time.Duration, pending bool)
}

// LoopHooks is the engine's side of a Looper's closed-model loop: it
// decides whether a slot sends, numbers and stamps its requests, and
// books their outcomes. A loop calls the hooks of one slot from one
// goroutine; different loops call them concurrently.
type LoopHooks interface {
	// Start is the instant the loop's offsets count from (sent, done).
	Start() time.Time
	// Timeout is every request's timeout, from its send: its deadline
	// is its send plus Timeout.
	Timeout() time.Duration
	// Next returns slot k's next request and its send's stamp, an offset
	// from Start (its Deadline left zero: see Timeout), or false when
	// the slot sends no more: the phase's time is up, its count reached,
	// or it was cancelled.
	Next(k int) (r Request, sent time.Duration, ok bool)
	// Done books the outcome of slot k's request r, which loop (0-based)
	// carried and which ended at done, an offset from Start: the loop's
	// reading of the clock when the read that completed it (or the
	// failure) returned.
	Done(loop, k int, r Request, out Outcome, done time.Duration)
	// Think is the time slot k waits after a response before its next
	// Next: the scenario's think_time, 0 for none.
	Think() time.Duration
}

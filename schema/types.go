package schema

import "time"

// Scenario is one load-test scenario file after loading and validation.
// Zero values of optional fields mean the documented default; Load fills
// the defaults in, so consumers never re-derive them.
type Scenario struct {
	// Version of the scenario format; only 1 exists.
	Version int `yaml:"version" json:"version" jsonschema:"enum=1"`
	// Name identifies the scenario in reports; default: file name without extension.
	Name string `yaml:"name,omitempty" json:"name,omitempty"`
	// Description is free text shown in reports.
	Description string `yaml:"description,omitempty" json:"description,omitempty"`
	// Target says where the load goes: a URL or a reference target to spawn.
	Target Target `yaml:"target" json:"target"`
	// Driver says which protocol is spoken and what each request is.
	Driver Driver `yaml:"driver" json:"driver"`
	// Phases run in order, once per repeat. At least one.
	Phases []Phase `yaml:"phases" json:"phases" jsonschema:"minItems=1"`
	// Repeats is how many times all phases run; default 1.
	Repeats int `yaml:"repeats,omitempty" json:"repeats,omitempty" jsonschema:"minimum=1"`
	// Reconcile fetches target counters before and after each phase.
	Reconcile *Reconcile `yaml:"reconcile,omitempty" json:"reconcile,omitempty"`
	// Assert lists the rules judged on every non-warmup phase of every repeat.
	Assert []Rule `yaml:"assert,omitempty" json:"assert,omitempty"`
	// Outputs says where result files go.
	Outputs Outputs `yaml:"outputs,omitempty" json:"outputs,omitempty"`

	// File is the path the scenario was loaded from; not part of the format.
	File string `yaml:"-" json:"-"`
	// Secrets lists the values that came from ${ENV} interpolation into
	// string fields, so that everything runner writes (reports, logs,
	// file names) can redact them (internal/redact); not part of the
	// format.
	Secrets []string `yaml:"-" json:"-"`

	// pos locates the value of every key path written in the file (Pos).
	pos map[string]position
}

// position is a line and column in a scenario file, both 1-based.
type position struct{ line, col int }

// Target is the system under test: exactly one of URL or Serve.
type Target struct {
	// URL of a running server, e.g. http://127.0.0.1:8080. Scheme http or
	// https, port 1 to 65535, no user info (send an Authorization header).
	URL string `yaml:"url,omitempty" json:"url,omitempty"`
	// Serve names a reference target (`runner serve KIND`) that the runner
	// spawns as a separate child process on a free loopback port. Kinds:
	// http, ws-gateway, frame.
	Serve string `yaml:"serve,omitempty" json:"serve,omitempty"`
	// Args are extra command-line flags for the spawned reference target.
	Args []string `yaml:"args,omitempty" json:"args,omitempty"`
	// Pid is the process id of a url target running on this machine,
	// ≥ 1: its CPU (whole process and busiest thread) and RSS are sampled
	// from /proc per phase, as for a spawned target (target.cpu, …). The
	// process itself, not its children: for a server that forks workers
	// (nginx), give a worker's pid. The process must exist when the run
	// starts.
	Pid int `yaml:"pid,omitempty" json:"pid,omitempty" jsonschema:"minimum=1"`
}

// Driver selects the protocol; exactly one field is set.
type Driver struct {
	// HTTP drives HTTP/1.x requests.
	HTTP *HTTP `yaml:"http,omitempty" json:"http,omitempty"`
	// WebSocket drives messages over WebSocket connections (ws:// or wss://).
	WebSocket *WebSocket `yaml:"websocket,omitempty" json:"websocket,omitempty"`
	// Frame drives length-prefixed binary frames over TCP (tcp://).
	Frame *Frame `yaml:"frame,omitempty" json:"frame,omitempty"`
}

// Frame describes a binary protocol of length-prefixed frames over TCP:
// every request is one frame (header and payload, written at once), and
// its reply is the frame that carries its request id, in any order.
// Exactly one of Preset or Layout.
type Frame struct {
	// Preset names a built-in layout: lkdf (16-byte header: magic u32
	// 0x4C4B4446, version u8 1, type u8 (request 1, response 2), flags
	// u16, requestId u32, length u32 of the payload; big-endian; payload
	// at most 1 MiB).
	Preset string `yaml:"preset,omitempty" json:"preset,omitempty" jsonschema:"enum=lkdf"`
	// Layout declares a frame header field by field.
	Layout *FrameLayout `yaml:"layout,omitempty" json:"layout,omitempty"`
	// Payload is the template of each request's payload: {{seq}},
	// {{bytes N}} (N filler bytes), {{data.NAME}}; default empty (or the
	// layout's parts).
	Payload string `yaml:"payload,omitempty" json:"payload,omitempty"`
	// PayloadFile sends a file's bytes as every request's payload
	// (relative to the scenario file); instead of Payload.
	PayloadFile string `yaml:"payload_file,omitempty" json:"payload_file,omitempty"`
	// Data is a .csv or .json file for {{data.NAME}} (in payload or the
	// layout's parts) and the layout's column fields, as for websocket.
	Data string `yaml:"data,omitempty" json:"data,omitempty"`
	// DataOrder is how requests pick their row of Data: rows (default:
	// request seq reads row (seq−1) mod n, in turn), connection (the
	// connection slot s, one virtual user, reads row s mod n for the
	// whole run) or random (a row drawn from DataSeed and seq: the same
	// seed repeats the run). In a flow every step of an iteration reads
	// the iteration's row.
	DataOrder string `yaml:"data_order,omitempty" json:"data_order,omitempty" jsonschema:"enum=rows,enum=connection,enum=random"`
	// DataSeed seeds data_order: random (required with it, any integer
	// but 0; no other order takes one).
	DataSeed int64 `yaml:"data_seed,omitempty" json:"data_seed,omitempty"`
	// Timeout bounds each request from its send to its reply; default 10s.
	Timeout Duration `yaml:"timeout,omitempty" json:"timeout,omitempty"`
}

// FrameLayout is a frame header: its fields in wire order, then the
// payload.
type FrameLayout struct {
	// ByteOrder of every multi-byte field: big (default) or little.
	ByteOrder string `yaml:"byte_order,omitempty" json:"byte_order,omitempty" jsonschema:"enum=big,enum=little"`
	// Fields of the header in wire order (at most 64 bytes in all).
	Fields []FrameField `yaml:"fields" json:"fields"`
	// LengthIncludesHeader: the length field counts the header too.
	LengthIncludesHeader bool `yaml:"length_includes_header,omitempty" json:"length_includes_header,omitempty"`
	// RequestType and ResponseType are the type field's values of a
	// request and of its reply (with a field of role type).
	RequestType  int64 `yaml:"request_type,omitempty" json:"request_type,omitempty"`
	ResponseType int64 `yaml:"response_type,omitempty" json:"response_type,omitempty"`
	// MaxPayload bounds a reply's payload; a reply declaring more is a
	// bad frame, found before any of it is read. Default 1MiB, at most
	// 64MiB.
	MaxPayload Size `yaml:"max_payload,omitempty" json:"max_payload,omitempty"`
	// Parts declare the payload in named parts, sent in order (instead of
	// the driver's payload or payload_file; at most 8). A header field
	// with length_of carries a part's length in bytes; in a reply it
	// says how long that part is, and the one part without such a field
	// (at most one) is the rest of the payload.
	Parts []FramePart `yaml:"parts,omitempty" json:"parts,omitempty"`
}

// FramePart is one named part of a request's payload.
type FramePart struct {
	// Name names the part for length_of (extras, key, value, …).
	Name string `yaml:"name" json:"name"`
	// Template renders the part for each request, as the driver's
	// payload does ({{seq}}, {{bytes N}}, {{data.NAME}}); empty sends
	// nothing.
	Template string `yaml:"template,omitempty" json:"template,omitempty"`
}

// FrameField is one header field.
type FrameField struct {
	// Name names the field in messages (magic, version, …).
	Name string `yaml:"name" json:"name"`
	// Size is u8, u16, u32 or u64.
	Size string `yaml:"size" json:"size" jsonschema:"enum=u8,enum=u16,enum=u32,enum=u64"`
	// Value makes the field a constant: sent as is, and a reply with
	// another value is a bad frame (code bad-<name>).
	Value *int64 `yaml:"value,omitempty" json:"value,omitempty"`
	// RequestValue is sent in every request; alone it leaves replies
	// unchecked (memcached's vbucket, at the place of the reply's status).
	RequestValue *int64 `yaml:"request_value,omitempty" json:"request_value,omitempty"`
	// ResponseValue is what every reply must carry (else a bad frame,
	// code bad-<name>); with RequestValue a constant that differs by
	// direction (memcached's magic: request 0x80, response 0x81).
	ResponseValue *int64 `yaml:"response_value,omitempty" json:"response_value,omitempty"`
	// Role is id (the request id: the request's sequence number), length
	// (the payload length), type (request_type sent, response_type
	// expected), status (the reply's status: a value outside success ends
	// that request as an error with code status-0x<value>) or empty
	// (sent as 0, not checked in replies).
	Role string `yaml:"role,omitempty" json:"role,omitempty" jsonschema:"enum=id,enum=length,enum=type,enum=status"`
	// Success lists the status values of a successful reply (role
	// status only); default [0].
	Success []int64 `yaml:"success,omitempty" json:"success,omitempty"`
	// LengthOf names a part of layout.parts: the field is that part's
	// length in bytes, sent as rendered and read from replies to split
	// their payload (memcached's key length and extras length).
	LengthOf string `yaml:"length_of,omitempty" json:"length_of,omitempty"`
	// Column sends the request's data row's column of that name (a whole
	// number, decimal without a leading zero or 0x hexadecimal, that fits
	// the field; every row is checked before any traffic); replies are
	// not checked (memcached's opcode, to mix GET and SET rows).
	Column string `yaml:"column,omitempty" json:"column,omitempty"`
}

// WebSocket describes the message every arrival sends over a WebSocket
// connection and how its reply is found and judged. A connection carries
// up to the phase's in-flight cap of messages at once; replies may come
// in any order.
type WebSocket struct {
	// Path is the handshake request path; default "/".
	Path string `yaml:"path,omitempty" json:"path,omitempty"`
	// Headers are sent with the opening handshake.
	Headers map[string]string `yaml:"headers,omitempty" json:"headers,omitempty"`
	// Message is the template of each message (required): {{seq}}, the
	// request's sequence number; {{bytes N}}, N filler bytes [a-z0-9];
	// {{data.NAME}}, a column of the data file.
	Message string `yaml:"message" json:"message"`
	// Binary sends binary frames; default text frames.
	Binary bool `yaml:"binary,omitempty" json:"binary,omitempty"`
	// Data is a .csv (header row) or .json (array of objects) file whose
	// rows {{data.NAME}} reads (see DataOrder); relative to the scenario
	// file.
	Data string `yaml:"data,omitempty" json:"data,omitempty"`
	// DataOrder is how requests pick their row of Data: rows (default:
	// request seq reads row (seq−1) mod n, in turn), connection (the
	// connection slot s, one virtual user, reads row s mod n for the
	// whole run) or random (a row drawn from DataSeed and seq: the same
	// seed repeats the run). In a flow every step of an iteration reads
	// the iteration's row.
	DataOrder string `yaml:"data_order,omitempty" json:"data_order,omitempty" jsonschema:"enum=rows,enum=connection,enum=random"`
	// DataSeed seeds data_order: random (required with it, any integer
	// but 0; no other order takes one).
	DataSeed int64 `yaml:"data_seed,omitempty" json:"data_seed,omitempty"`
	// Correlate is the dot path of the reply field that carries the
	// request id (e.g. id, meta.request_id): the message's own field at
	// that path must be {{seq}}. Replies are then paired by id, in any
	// order; a reply with an id never sent is unknown-id, a second reply
	// to the same id duplicate-id, a reply after its request timed out
	// late: counted apart, never ok. Empty: one message in flight per
	// connection, and the next reply answers it.
	Correlate string `yaml:"correlate,omitempty" json:"correlate,omitempty"`
	// Success is an expr rule over `resp`, the reply decoded from JSON
	// (nil when it is not JSON), e.g. `resp.ok == true`; default: any
	// reply is a success. A reply that fails it is a rule-failed error.
	Success string `yaml:"success,omitempty" json:"success,omitempty"`
	// ErrorCode is an expr over `resp` whose value is the code of a
	// failed reply (errors_by[code]), e.g. `resp.code`; nil or "" leaves
	// the code empty.
	ErrorCode string `yaml:"error_code,omitempty" json:"error_code,omitempty"`
	// Timeout bounds each message from its send to its reply; default 10s.
	Timeout Duration `yaml:"timeout,omitempty" json:"timeout,omitempty"`
	// MaxMessage bounds a reply's size; a larger one closes the
	// connection (close 1009). Default 1MiB.
	MaxMessage Size `yaml:"max_message,omitempty" json:"max_message,omitempty"`
	// TLS configures wss:// targets.
	TLS *TLS `yaml:"tls,omitempty" json:"tls,omitempty"`
}

// HTTP describes the request every arrival sends.
type HTTP struct {
	// Method is the request method; default GET.
	Method string `yaml:"method,omitempty" json:"method,omitempty"`
	// Path is the request target, a template: `{{seq}}` expands to the
	// request's sequence number (1-based within the run), `{{data.NAME}}`
	// to column NAME of the request's row of Data. Default "/".
	Path string `yaml:"path,omitempty" json:"path,omitempty"`
	// Headers are sent with every request; values are templates, as Path.
	Headers map[string]string `yaml:"headers,omitempty" json:"headers,omitempty"`
	// Body is a template for the request body, as Path; empty means no body.
	Body string `yaml:"body,omitempty" json:"body,omitempty"`
	// BodySize, when set, sends that many filler bytes as the body instead of Body.
	BodySize Size `yaml:"body_size,omitempty" json:"body_size,omitempty"`
	// Version is "1.1" (default), "1.0" or "2": HTTP/2 over TLS with
	// ALPN h2 for https:// targets, cleartext with prior knowledge (h2c)
	// for http:// ones; a connection then carries up to the phase's
	// inflight requests at once, each on its own stream.
	Version string `yaml:"version,omitempty" json:"version,omitempty" jsonschema:"enum=1.1,enum=1.0,enum=2"`
	// KeepAlive reuses connections; default true. With version 1.0 it sends
	// `Connection: keep-alive` as `ab -k` does.
	KeepAlive *bool `yaml:"keep_alive,omitempty" json:"keep_alive,omitempty"`
	// Timeout bounds each request from send to the last response byte; default 10s.
	Timeout Duration `yaml:"timeout,omitempty" json:"timeout,omitempty"`
	// Success is an expr rule over `status` (int), `headers` (map of
	// canonical name to first value) and `body` (string); default: a 2xx
	// status or 304 Not Modified (a successful conditional GET).
	Success string `yaml:"success,omitempty" json:"success,omitempty"`
	// TLS configures https:// targets.
	TLS *TLS `yaml:"tls,omitempty" json:"tls,omitempty"`
	// Data is a .csv (header row) or .json (array of objects) file whose
	// rows {{data.NAME}} reads in path, header values and body (see
	// DataOrder); relative to the scenario file.
	Data string `yaml:"data,omitempty" json:"data,omitempty"`
	// DataOrder is how requests pick their row of Data: rows (default:
	// request seq reads row (seq−1) mod n, in turn), connection (the
	// connection slot s, one virtual user, reads row s mod n for the
	// whole run) or random (a row drawn from DataSeed and seq: the same
	// seed repeats the run). In a flow every step of an iteration reads
	// the iteration's row.
	DataOrder string `yaml:"data_order,omitempty" json:"data_order,omitempty" jsonschema:"enum=rows,enum=connection,enum=random"`
	// DataSeed seeds data_order: random (required with it, any integer
	// but 0; no other order takes one).
	DataSeed int64 `yaml:"data_seed,omitempty" json:"data_seed,omitempty"`
	// Cookies keeps a cookie jar per connection slot (one virtual user),
	// RFC 6265 (net/http/cookiejar with the public suffix list): the
	// Set-Cookie fields of every complete response are stored, whatever
	// its status and the success rule say (as a browser does), and each
	// request carries the Cookie header the jar holds for its URL (the
	// target's scheme, host and the request's path). The jar outlives
	// re-dials, so with keep_alive: false a virtual user still keeps its
	// cookies across its new connections; it is never shared between
	// virtual users, and starts empty for each run. Default: on with
	// flows, off for a single request.
	Cookies *bool `yaml:"cookies,omitempty" json:"cookies,omitempty"`
	// Flows, when given, make each arrival one iteration of a flow (a
	// list of steps on one connection) from this weighted mix, instead
	// of one request; method, path, body, body_size and success are then
	// given per step. Headers, timeout, version, keep_alive and tls
	// apply to every step.
	Flows []Flow `yaml:"flows,omitempty" json:"flows,omitempty"`
}

// TLS configures certificate verification for https:// targets.
// Verification is on by default.
type TLS struct {
	// CAFile is a PEM file of extra trusted roots.
	CAFile string `yaml:"ca_file,omitempty" json:"ca_file,omitempty"`
	// InsecureSkipVerify turns verification off; every report says so.
	InsecureSkipVerify bool `yaml:"insecure_skip_verify,omitempty" json:"insecure_skip_verify,omitempty"`
	// ServerName overrides the name checked in the certificate.
	ServerName string `yaml:"server_name,omitempty" json:"server_name,omitempty"`
	// CertFile is the client certificate (PEM, its chain after it)
	// presented to a server that asks for one (mutual TLS); with KeyFile,
	// both or neither. Its path may appear in reports.
	CertFile string `yaml:"cert_file,omitempty" json:"cert_file,omitempty"`
	// KeyFile is the client certificate's private key (PEM); with
	// CertFile, both or neither. Its path may appear in reports, its
	// contents never.
	KeyFile string `yaml:"key_file,omitempty" json:"key_file,omitempty"`
}

// Phase is one stage of a repeat. Exactly one of Closed, Open or Ramp is
// set. A phase is bounded by Duration, by Requests, or (Ramp only) by its
// staircase; at least one bound must exist.
type Phase struct {
	// Name identifies the phase in reports and rule scopes; default "phase-N" (1-based).
	Name string `yaml:"name,omitempty" json:"name,omitempty"`
	// Warmup phases are measured and reported apart and never judged.
	Warmup bool `yaml:"warmup,omitempty" json:"warmup,omitempty"`
	// Closed is the closed model: fixed connections, next request after the response.
	Closed *Closed `yaml:"closed,omitempty" json:"closed,omitempty"`
	// Open is the open model: arrivals on a schedule, whatever the target does.
	Open *Open `yaml:"open,omitempty" json:"open,omitempty"`
	// Ramp steps the closed model's connections up as a staircase.
	Ramp *Ramp `yaml:"ramp,omitempty" json:"ramp,omitempty"`
	// Duration bounds the phase in time; no new request starts after it.
	Duration Duration `yaml:"duration,omitempty" json:"duration,omitempty"`
	// Requests bounds the phase by count of requests (closed) or arrivals (open).
	Requests int `yaml:"requests,omitempty" json:"requests,omitempty" jsonschema:"minimum=1"`
}

// Closed is the closed model.
type Closed struct {
	// Connections is the number of connections (virtual users), ≥ 1.
	Connections int `yaml:"connections" json:"connections" jsonschema:"minimum=1"`
	// ThinkTime is the pause after each response before the next request.
	ThinkTime Duration `yaml:"think_time,omitempty" json:"think_time,omitempty"`
	// ExpectedRate, when set, adds a coordinated-omission-corrected
	// histogram (HdrHistogram's corrected recording with interval 1/rate
	// per connection), reported apart.
	ExpectedRate Rate `yaml:"expected_rate,omitempty" json:"expected_rate,omitempty"`
}

// Open is the open model.
type Open struct {
	// Rate is the offered arrival rate: a constant (`300/s`) or a linear
	// ramp (`{from: 10/s, to: 100/s}`) over the phase duration. `0/s` is
	// a pause: nothing is sent for the phase's duration (which it needs),
	// and the connections stay open. Either end of a ramp may be 0/s: a
	// ramp from 0/s sends its first request once one request's worth of
	// rate has built up, √(2/slope) in.
	Rate RateSpec `yaml:"rate" json:"rate"`
	// Connections that carry the arrivals; default 1.
	Connections int `yaml:"connections,omitempty" json:"connections,omitempty" jsonschema:"minimum=1"`
	// Inflight caps requests in flight per connection; default 1.
	Inflight int `yaml:"inflight,omitempty" json:"inflight,omitempty" jsonschema:"minimum=1"`
	// Arrivals is "uniform" (default: evenly spaced) or "poisson"
	// (exponential gaps from a seeded generator).
	Arrivals string `yaml:"arrivals,omitempty" json:"arrivals,omitempty" jsonschema:"enum=uniform,enum=poisson"`
	// Seed seeds the Poisson generator: any integer but 0; default 1, so
	// runs are reproducible.
	Seed int64 `yaml:"seed,omitempty" json:"seed,omitempty"`
	// OnSaturation says what an arrival does when every connection is at
	// its in-flight cap: "queue" (default; it waits and its response time
	// counts from its intended start) or "drop" (it is counted as dropped).
	OnSaturation string `yaml:"on_saturation,omitempty" json:"on_saturation,omitempty" jsonschema:"enum=queue,enum=drop"`
	// DispatchWindow groups arrivals to save the generator's CPU: when an
	// arrival comes due, every later one due less than this long after it
	// is sent with it, up to the window early. 0 sends each arrival at its
	// own instant; at most 10ms. Unset (nil), it is DefaultDispatchWindow
	// for a phase whose rate goes above AutoDispatchAbove, else 0. An
	// early request's response time counts from its send, never from its
	// later intended instant; the result records how early.
	DispatchWindow *Duration `yaml:"dispatch_window,omitempty" json:"dispatch_window,omitempty"`
}

// MaxDispatchWindow bounds Open.DispatchWindow: how early an arrival may
// be sent with the group it joins. Past a millisecond or so the groups are
// bursts a target queues for (README, "Performance": the measured cost of
// each window); 10 ms is far past the point where grouping saves more.
const MaxDispatchWindow = 10 * time.Millisecond

// DefaultDispatchWindow is an open phase's dispatch window when the
// scenario gives none and its rate goes above AutoDispatchAbove: about
// the granularity at which Go timers (and so the peers built on them)
// wake anyway, and where grouping has saved most of what it can (README,
// "Performance").
const DefaultDispatchWindow = time.Millisecond

// AutoDispatchAbove is the arrival rate (per second) above which an open
// phase without dispatch_window groups its arrivals by
// DefaultDispatchWindow. At or below it an arrival at a time costs the
// generator at most about a sixth of a core (27–36 µs of CPU each on our
// 2-core VM) and stays precise; above it, one core paces less and less
// precisely (at 20,000/s the pacer alone filled half a core and, in some
// runs, sent p99 0.5 ms late).
const AutoDispatchAbove = 5000

// RateSpec is a constant rate or a linear ramp between two rates.
// When Ramp is false, From is the constant rate and To equals From.
type RateSpec struct {
	// From is the rate at the start of the phase (the constant rate when Ramp is false).
	From Rate `json:"from"`
	// To is the rate at the end of the phase's duration.
	To Rate `json:"to"`
	// Ramp is true when the file wrote {from, to}.
	Ramp bool `json:"-"`
}

// Ramp is a staircase of connections in the closed model:
// from, from+step, … up to `to`, one step every `every`.
type Ramp struct {
	// Connections is the staircase of connections (virtual users).
	Connections Staircase `yaml:"connections" json:"connections"`
	// ThinkTime is as in Closed.
	ThinkTime Duration `yaml:"think_time,omitempty" json:"think_time,omitempty"`
}

// Staircase steps a count from From up to To by Step every Every.
// The phase lasts ceil((To-From)/Step) steps of Every unless the phase
// sets its own Duration, in which case it holds at To until the end.
// It only climbs: a descending staircase (To below From) is an error.
type Staircase struct {
	// From is the count on the first step, ≥ 0; 0 means no connection
	// until the first step.
	From int `yaml:"from" json:"from" jsonschema:"minimum=0"`
	// To is the count on the last step, > From (so ≥ 1).
	To int `yaml:"to" json:"to" jsonschema:"minimum=1"`
	// Step is added on each step, ≥ 1.
	Step int `yaml:"step" json:"step" jsonschema:"minimum=1"`
	// Every is the time between steps, > 0.
	Every Duration `yaml:"every" json:"every"`
}

// Reconcile fetches the target's own counters before and after each
// phase and checks their deltas against the client's counts.
type Reconcile struct {
	// Fetch says how to read the counters.
	Fetch Fetch `yaml:"fetch" json:"fetch"`
	// Expect are rules over `server.<counter>` (deltas) and the phase metrics.
	Expect []Rule `yaml:"expect" json:"expect"`
}

// Fetch locates the target's counters: an HTTP GET of Path on the target
// answered with a flat JSON object of numbers. Fetches are never counted
// as requests of the run.
type Fetch struct {
	// Path is an HTTP GET path answering the counters as a JSON object,
	// e.g. /stats (on the target's host; http:// for a ws:// target), or
	// an absolute http(s) URL of an endpoint elsewhere.
	Path string `yaml:"path,omitempty" json:"path,omitempty"`
	// Prometheus is an HTTP GET path answering the Prometheus text format,
	// e.g. /metrics on the target's host, or an absolute http(s) URL of
	// an exporter elsewhere (http://127.0.0.1:8405/metrics). Each counter,
	// untyped sample, and summary or histogram _sum and _count is a
	// counter named as exposed (`name` or `name{label="v",…}` with labels
	// sorted); a gauge only when a rule names it.
	Prometheus string `yaml:"prometheus,omitempty" json:"prometheus,omitempty"`
	// Message is a WebSocket control message, e.g. '{"cmd":"stats"}',
	// sent on a connection of its own to the driver's path; the reply is
	// a JSON object of counters (websocket driver only).
	Message string `yaml:"message,omitempty" json:"message,omitempty"`
	// MemcachedStats reads memcached's own counters: "stats" sent over
	// the text protocol on a connection of its own to the target's
	// tcp:// address, each "STAT name value" line with a number a counter
	// (cmd_get, get_hits, get_misses, cmd_set, …), until END.
	MemcachedStats bool `yaml:"memcached_stats,omitempty" json:"memcached_stats,omitempty"`
	// Field is the dot path of the counters object inside a JSON reply
	// (path or message), e.g. stats; default the whole reply.
	Field string `yaml:"field,omitempty" json:"field,omitempty"`
}

// Rule is one assertion: an expr-lang expression over the metrics, with
// duration literals (`20ms`) and `a ≈ b`. In YAML it is a plain string or
// `{rule: ..., phase: NAME}`.
type Rule struct {
	// Expr is the rule's source text.
	Expr string `json:"rule"`
	// Phase scopes the rule to one phase by name; empty means every non-warmup phase.
	Phase string `json:"phase,omitempty"`
	// Line and Col locate Expr in the file (1-based) for error messages.
	Line int `json:"-"`
	Col  int `json:"-"`
}

// Outputs lists result files. Paths may contain `{run_id}` and
// `{scenario}`. Empty means not written.
type Outputs struct {
	// TSV rows are appended, one per (repeat, phase), header once.
	TSV string `yaml:"tsv,omitempty" json:"tsv,omitempty"`
	// JSON holds everything about the run.
	JSON string `yaml:"json,omitempty" json:"json,omitempty"`
	// Markdown is a report for a pull-request comment or a CI summary.
	Markdown string `yaml:"markdown,omitempty" json:"markdown,omitempty"`
	// JUnit is JUnit XML: one test case per rule (per phase).
	JUnit string `yaml:"junit,omitempty" json:"junit,omitempty"`
	// HTML is one self-contained page with charts (opens offline).
	HTML string `yaml:"html,omitempty" json:"html,omitempty"`
	// HDR is an HdrHistogram interval log of every phase's latencies.
	HDR string `yaml:"hdr,omitempty" json:"hdr,omitempty"`
}

// Duration is a time.Duration written with an explicit unit in YAML:
// `250us`, `5ms`, `2s`, `1m` (Go duration syntax; ns|us|µs|ms|s|m|h).
type Duration time.Duration

// Rate is an arrival rate in requests per second, written `N/s` or `N/m`
// in YAML; at most MaxRate.
type Rate float64

// Size is a byte count written `N B|KiB|MiB|GiB` in YAML (`512KiB`, `1MiB`).
type Size int64

// Package websocket is the WebSocket driver of the drivers stage: each
// request is one message rendered from a template, answered by one reply,
// paired to it by an id field in any order (or, without `correlate`, the
// next reply on its connection), decoded from JSON where a rule or the id
// needs it, and judged by a success rule. Replies no request waits for
// (late, unknown id, duplicate id) and closes the server starts are counted
// apart (drivers.StrayCounter).
//
// It is built on github.com/coder/websocket. A connection carries up to
// MaxInflight messages at once; one goroutine per connection reads the
// replies. Under the library, frameGuard (guard.go) reads the server's
// frame headers: a message past max_message and a masked frame are
// refused before their payload is read; a text reply that is not UTF-8
// is refused after it. Each fails the connection as bad-frame.
package websocket

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	nethttp "net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/coder/websocket"
	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"

	"github.com/runner-dev/runner/drivers"
	"github.com/runner-dev/runner/drivers/internal/correlate"
	"github.com/runner-dev/runner/drivers/internal/template"
	"github.com/runner-dev/runner/schema"
)

// Defaults of zero fields of schema.WebSocket.
const (
	DefaultPath       = "/"
	DefaultTimeout    = 10 * time.Second
	DefaultMaxMessage = 1 << 20
	// MaxCorrelated is the in-flight cap per connection with correlate.
	MaxCorrelated = 1 << 16
	// closeWait bounds our own close handshake when a connection is
	// released; then the socket is closed regardless.
	closeWait = time.Second
)

// Driver sends WebSocket messages to one target. It is immutable after
// New apart from its counters; Dial is safe for concurrent use.
type Driver struct {
	url       string // ws:// or wss:// URL with the path
	opts      websocket.DialOptions
	insecure  bool
	msg       *template.Template
	typ       websocket.MessageType
	correlate []string // dot path of the reply's id; nil: FIFO, one in flight
	success   *vm.Program
	errorCode *vm.Program
	needJSON  bool // a rule or correlate reads the reply
	timeout   time.Duration
	maxMsg    int64

	counts correlate.Counts // replies no request waited for, connections the target ended
}

var (
	_ drivers.Driver         = (*Driver)(nil)
	_ drivers.Inflighter     = (*Driver)(nil)
	_ drivers.StrayCounter   = (*Driver)(nil)
	_ drivers.DeadlineKeeper = (*Driver)(nil)
)

// New builds a driver for cfg against baseURL (ws:// or wss://, host and
// port). dir is the directory relative file names (data) are read from.
// Every problem is reported at once (errors.Join), each a
// drivers.ConfigError with its key: a bad URL, a template action it does
// not know, an unreadable data file, a success or error_code rule that
// does not compile, a correlate path the message does not carry {{seq}}
// at, an unreadable tls.ca_file.
func New(cfg schema.WebSocket, baseURL, dir string) (*Driver, error) {
	var errs []error
	d := &Driver{
		timeout: time.Duration(cfg.Timeout),
		maxMsg:  int64(cfg.MaxMessage),
		typ:     websocket.MessageText,
	}
	if d.timeout <= 0 {
		d.timeout = DefaultTimeout
	}
	if d.maxMsg <= 0 {
		d.maxMsg = DefaultMaxMessage
	}
	if cfg.Binary {
		d.typ = websocket.MessageBinary
	}
	path := cfg.Path
	if path == "" {
		path = DefaultPath
	}
	u, err := url.Parse(baseURL)
	switch {
	case err != nil:
		errs = append(errs, bad("target.url", fmt.Errorf("target url: %w", err)))
	case u.Scheme != "ws" && u.Scheme != "wss":
		errs = append(errs, bad("target.url", fmt.Errorf("target url %q: scheme must be ws or wss", baseURL)))
	case u.Hostname() == "":
		errs = append(errs, bad("target.url", fmt.Errorf("target url %q: no host", baseURL)))
	default:
		d.url = u.Scheme + "://" + u.Host + strings.TrimSuffix(u.EscapedPath(), "/") + path
		tr := &nethttp.Transport{
			DialContext:       (&net.Dialer{Timeout: d.timeout}).DialContext,
			ForceAttemptHTTP2: false,
			MaxIdleConns:      -1,
		}
		if u.Scheme == "wss" {
			conf, err := drivers.TLSConfig(cfg.TLS, u.Hostname(), []string{"http/1.1"})
			if err != nil {
				errs = append(errs, err) // a *drivers.ConfigError keyed by its file
			}
			tr.TLSClientConfig = conf
			d.insecure = cfg.TLS != nil && cfg.TLS.InsecureSkipVerify
		}
		d.opts.HTTPClient = &nethttp.Client{Transport: &guardTransport{base: tr, maxMsg: d.maxMsg}, Timeout: d.timeout}
	}
	if len(cfg.Headers) > 0 {
		d.opts.HTTPHeader = nethttp.Header{}
		for k, v := range cfg.Headers {
			d.opts.HTTPHeader.Set(k, v)
		}
	}

	var data *template.Data
	if cfg.Data != "" {
		p := cfg.Data
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if data, err = template.LoadData(p); err != nil {
			errs = append(errs, bad("data", err))
		}
	}
	if cfg.Data == "" || data != nil { // else the data file's error says it
		if err := template.SetOrder(data, cfg.DataOrder, cfg.DataSeed); err != nil {
			errs = append(errs, err)
		}
	}
	if cfg.Message == "" {
		errs = append(errs, bad("message", errors.New("message: empty; expected a template such as '{\"id\": {{seq}}}'")))
	} else if t, err := template.Parse(cfg.Message, data); err != nil {
		if cfg.Data == "" || data != nil { // else the data file's error says it
			errs = append(errs, bad("message", fmt.Errorf("message: %w", err)))
		}
	} else {
		d.msg = t
	}

	if cfg.Correlate != "" {
		d.correlate = strings.Split(cfg.Correlate, ".")
		d.needJSON = true
		if d.msg != nil {
			if err := d.checkCorrelate(cfg); err != nil {
				errs = append(errs, bad("correlate", err))
			}
		}
	}
	if cfg.Success != "" {
		p, err := compileRule(cfg.Success, true)
		if err != nil {
			errs = append(errs, bad("success", fmt.Errorf("success rule `%s`: %w", cfg.Success, err)))
		}
		d.success, d.needJSON = p, true
	}
	if cfg.ErrorCode != "" {
		p, err := compileRule(cfg.ErrorCode, false)
		if err != nil {
			errs = append(errs, bad("error_code", fmt.Errorf("error_code `%s`: %w", cfg.ErrorCode, err)))
		}
		d.errorCode, d.needJSON = p, true
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return d, nil
}

// checkCorrelate renders the message for two sequence numbers and checks
// that the field at the correlate path carries each one: the request id
// every reply is paired by must be {{seq}}.
func (d *Driver) checkCorrelate(cfg schema.WebSocket) error {
	for _, seq := range []uint64{1, 42} {
		var v any
		if err := json.Unmarshal(d.msg.Render(nil, seq, 0), &v); err != nil {
			return fmt.Errorf("correlate %s: the message is not JSON (%v), so it has no id field to pair replies by", cfg.Correlate, err)
		}
		id, ok := field(v, d.correlate)
		if !ok {
			return fmt.Errorf("correlate %s: the message has no field %s; put the request id there, e.g. '{\"id\": {{seq}}}'", cfg.Correlate, cfg.Correlate)
		}
		if id != strconv.FormatUint(seq, 10) {
			return fmt.Errorf("correlate %s: the message's %s is %q for request %d; it must be {{seq}}", cfg.Correlate, cfg.Correlate, id, seq)
		}
	}
	return nil
}

// compileRule compiles an expr over `resp` (any: the decoded reply);
// asBool requires a boolean result.
func compileRule(src string, asBool bool) (*vm.Program, error) {
	opts := []expr.Option{expr.Env(ruleEnv{})}
	if asBool {
		opts = append(opts, expr.AsBool())
	}
	return expr.Compile(src, opts...)
}

// ruleEnv is what success and error_code rules see: the reply decoded
// from JSON (objects map[string]any, arrays []any, numbers float64; nil
// when the reply was not decoded).
type ruleEnv struct {
	Resp any `expr:"resp"`
}

func bad(key string, err error) error { return &drivers.ConfigError{Key: key, Err: err} }

// MaxInflight is MaxCorrelated with correlate, else 1: without ids, the
// next reply can only answer the one message in flight.
func (d *Driver) MaxInflight() int {
	if d.correlate == nil {
		return 1
	}
	return MaxCorrelated
}

// KeepsDeadline implements drivers.DeadlineKeeper: Do keeps
// Request.Deadline (the wait for the link's writer, the re-dial and the
// wait for the reply end with it), so the engine makes no context per
// request.
func (d *Driver) KeepsDeadline() {}

// Insecure reports whether certificate verification is off.
func (d *Driver) Insecure() bool { return d.insecure }

// Timeout is the per-message timeout.
func (d *Driver) Timeout() time.Duration { return d.timeout }

// Strays returns the running totals of late, unknown-id and duplicate-id
// replies and of server-initiated closes by code.
func (d *Driver) Strays() drivers.Strays { return d.counts.Strays() }

// dial opens one WebSocket connection (TCP, TLS, handshake) bounded by
// ctx and the timeout.
func (d *Driver) dial(ctx context.Context) (*websocket.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	ws, resp, err := websocket.Dial(ctx, d.url, &d.opts)
	if err != nil {
		if resp != nil {
			return nil, fmt.Errorf("handshake: %s: %w", resp.Status, errHandshake)
		}
		return nil, err
	}
	ws.SetReadLimit(d.maxMsg)
	return ws, nil
}

// errHandshake is a handshake the server refused with an HTTP status.
var errHandshake = errors.New("the server refused the WebSocket upgrade")

// Dial opens one connection. Errors are classified with drivers.Classify
// (a refused upgrade is Connect with code "HANDSHAKE").
func (d *Driver) Dial(ctx context.Context) (drivers.Conn, error) {
	c := &conn{d: d}
	l, err := c.open(ctx)
	if err != nil {
		return nil, err
	}
	c.slot.Set(l)
	return c, nil
}

// Control sends one control message on a connection of its own and
// returns the first reply, for reconcile.fetch.message. The connection is
// closed after it; it is never one of the run's.
func (d *Driver) Control(ctx context.Context, message string) ([]byte, error) {
	ws, err := d.dial(ctx)
	if err != nil {
		return nil, err
	}
	defer ws.CloseNow()
	// At least 5 s: a scenario's short message timeout is no reason to
	// lose the counters.
	ctx, cancel := context.WithTimeout(ctx, max(d.timeout, 5*time.Second))
	defer cancel()
	if err := ws.Write(ctx, websocket.MessageText, []byte(message)); err != nil {
		return nil, err
	}
	_, b, err := ws.Read(ctx)
	if err != nil {
		return nil, err
	}
	ws.Close(websocket.StatusNormalClosure, "")
	return b, nil
}

// field walks a decoded JSON value along path and returns the value there
// as text: a string as is, a number in decimal without exponent (exact
// for integers below 2^53), anything else as JSON.
func field(v any, path []string) (string, bool) {
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return "", false
		}
		if v, ok = m[k]; !ok {
			return "", false
		}
	}
	switch x := v.(type) {
	case string:
		return x, true
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), true
	case nil:
		return "", false
	default:
		b, _ := json.Marshal(x)
		return string(b), true
	}
}

// codeText renders an error_code value: nil is "", a string as is,
// anything else with fmt.
func codeText(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	default:
		b, err := json.Marshal(x) // an object or a list: as JSON
		if err != nil {
			return fmt.Sprint(x)
		}
		return string(b)
	}
}

package http

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/runner-dev/runner/drivers"
	"github.com/runner-dev/runner/drivers/internal/template"
	"github.com/runner-dev/runner/schema"
)

// Defaults applied by New when a schema.HTTP field is zero. Load normally
// fills them in already; New repeats them so a hand-built config works.
const (
	DefaultMethod  = "GET"
	DefaultPath    = "/"
	DefaultVersion = "1.1"
	DefaultTimeout = 10 * time.Second
	// MaxRuleBody is the most response body bytes a success rule sees in
	// `body`; the rest is read and discarded.
	MaxRuleBody = 1 << 20
	// MaxHeaderBytes caps a response's header block: status line, header
	// fields and the blank line, interim 1xx responses included. A larger
	// one ends the request as bad-frame and closes the connection, so a
	// hostile or broken server cannot make the client buffer it (the same
	// default as net/http's Server.MaxHeaderBytes). A line longer than
	// the 16 KiB read buffer is kept only when its value is read
	// (Content-Length, Transfer-Encoding, Connection, or any field when
	// the success rule reads headers); others are read past, not kept.
	MaxHeaderBytes = 1 << 20
	// MaxCaptured bounds a value a flow step captures (8 KiB): it goes
	// into the requests after it.
	MaxCaptured = 8 << 10
	// userAgent is sent unless the scenario sets its own User-Agent header.
	userAgent = "runner"
)

// Driver speaks HTTP/1.x to one target. It owns its TCP (and TLS)
// connections so that keep-alive and the connections opened are exactly
// what the scenario says; it never pipelines and never retries.
// A Driver is immutable after New apart from its counter; Dial is safe for
// concurrent use.
type Driver struct {
	addr     string      // host:port dialled
	tls      *tls.Config // nil for http://
	insecure bool
	timeout  time.Duration
	dialer   net.Dialer

	method    string
	head      tmpl           // request line and headers, without Content-Length and the blank line
	body      tmpl           // body text; unused when filler is set
	data      *template.Data // rows {{data.NAME}} reads; nil without a data file
	filler    []byte         // body_size filler bytes, sent as is
	sendLen   bool           // send Content-Length (a body, or a method that expects one)
	keepAlive bool           // ask to keep the connection open

	// cookies gives every connection (virtual user) a cookie jar; the
	// jar's URL of a request is scheme://jarHost + target rendered.
	cookies bool
	scheme  string
	jarHost string
	target  tmpl // the request target: the URL's path prefix, then cfg.Path

	rule *rule // nil: success is 2xx

	opened atomic.Int64

	// h2 is version "2": Dial returns HTTP/2 connection slots (h2.go).
	h2 bool
	goAwayCounts

	// flow is the mix of a flow driver (flow.go); nil for one request.
	flow *flowSet
	// captures are what a flow step's response gives later steps;
	// captureBody and captureHeaders say the reader must keep them.
	captures                    []namedCapture
	captureBody, captureHeaders bool
}

var _ drivers.Driver = (*Driver)(nil)

// New builds a driver for cfg against baseURL (http:// or https://, with
// an optional path prefix that is put before cfg.Path). dir is the
// directory a relative data file name is read from (the scenario's).
// Zero fields of
// cfg mean the documented defaults (GET, "/", HTTP/1.1, keep-alive,
// 10 s). Templates are split and the success rule is compiled here, so
// no request is ever parsed at run time. Without a success rule a
// response succeeds when its status is 2xx or 304 Not Modified.
//
// Every request carries Host (from the URL unless the scenario sets it),
// User-Agent "runner" (unless set), the scenario's headers in name order,
// Connection when keep-alive differs from the version's default, and
// Content-Length when there is a body (or for POST, PUT and PATCH).
// Connection, Content-Length and Transfer-Encoding belong to the driver
// and are rejected in cfg.Headers, as is Cookie with cfg.Cookies.
//
// With cfg.Cookies every Conn (one virtual user) keeps a cookie jar of
// its own, RFC 6265 (net/http/cookiejar with the public suffix list of
// golang.org/x/net/publicsuffix; an IP host, as 127.0.0.1, takes only
// host-only cookies or a Domain equal to it): the Set-Cookie fields of
// every complete response are stored, ok or not (a non-2xx status and a
// failed success rule included; a response cut short stores nothing),
// and each request carries one Cookie header with what the jar holds
// for its URL: the target URL's scheme and host (not a Host header the
// scenario sets) and the request's path. The jar outlives the re-dials
// of its Conn, so with keep-alive off a virtual user keeps its cookies
// from one connection to the next. The jar is bounded (MaxCookies,
// MaxCookieSize, MaxCookieHeader): a response that sets more fails its
// request as drivers.ClientError, code drivers.CodeCookieLimit, whatever
// its status, and a request whose cookies would go past the bounds is
// not sent (the same class and code). Without cfg.Cookies nothing is
// stored and no Cookie is sent, and a request allocates nothing.
//
// Path, header values and body are templates of {{seq}} and
// {{data.NAME}}, a column of the request's row of cfg.Data picked as
// cfg.DataOrder says (template.Order); every value a path or header reads
// from the data file is checked at New as the literal text is.
//
// New reports every problem it finds at once (errors.Join): a bad URL or
// scheme, an unknown HTTP version, a malformed method, path or header
// (literal or from the data file), a template action other than {{seq}}
// and {{data.NAME}}, an unreadable data file or one without the column
// named, a data_order or data_seed template.SetOrder refuses, a success
// rule that does not compile to a bool (the message quotes the rule),
// and an unreadable or empty tls.ca_file.
//
// With cfg.Flows the driver is a drivers.FlowDriver (newFlows): each flow
// step is a request of its own, and cookies are on unless cfg.Cookies
// says false.
func New(cfg schema.HTTP, baseURL, dir string) (*Driver, error) {
	if len(cfg.Flows) > 0 {
		return newFlows(cfg, baseURL, dir)
	}
	return newSpec(cfg, baseURL, dir, nil, nil)
}

// newSpec builds a driver for one request template, cfg without flows;
// captured names the values earlier steps of a flow capture, which the
// templates may read as {{NAME}}.
//
// shared, when not nil, is cfg.Data already loaded (a flow's steps share
// the driver's rows rather than read the file once each).
func newSpec(cfg schema.HTTP, baseURL, dir string, captured []string, shared *template.Data) (*Driver, error) {
	var errs []error
	d := &Driver{
		cookies:   cookiesOn(cfg),
		method:    cfg.Method,
		timeout:   time.Duration(cfg.Timeout),
		keepAlive: cfg.KeepAlive == nil || *cfg.KeepAlive,
	}
	if d.method == "" {
		d.method = DefaultMethod
	}
	if d.timeout <= 0 {
		d.timeout = DefaultTimeout
	}
	d.dialer.Timeout = d.timeout

	u, err := url.Parse(baseURL)
	var prefix, host string
	switch {
	case err != nil:
		errs = append(errs, bad("target.url", fmt.Errorf("target url: %w", err)))
	case u.Scheme != "http" && u.Scheme != "https":
		errs = append(errs, bad("target.url", fmt.Errorf("target url %q: scheme must be http or https", baseURL)))
	case u.Hostname() == "":
		errs = append(errs, bad("target.url", fmt.Errorf("target url %q: no host", baseURL)))
	case u.RawQuery != "" || u.Fragment != "":
		errs = append(errs, bad("target.url", fmt.Errorf("target url %q: query and fragment belong in driver.http.path", baseURL)))
	case u.User != nil:
		errs = append(errs, bad("target.url", fmt.Errorf("target url %q: user info is not supported; send an Authorization header", baseURL)))
	default:
		host = u.Host
		d.scheme, d.jarHost = u.Scheme, u.Host
		port := u.Port()
		if port == "" {
			port = "80"
			if u.Scheme == "https" {
				port = "443"
			}
		}
		d.addr = net.JoinHostPort(u.Hostname(), port)
		prefix = strings.TrimSuffix(u.EscapedPath(), "/")
		if u.Scheme == "https" {
			alpn := []string{"http/1.1"}
			if cfg.Version == "2" {
				// h2 alone: a server that cannot speak it must say so
				// at the handshake, not fall back unseen.
				alpn = []string{"h2"}
			}
			conf, err := drivers.TLSConfig(cfg.TLS, u.Hostname(), alpn)
			if err != nil {
				errs = append(errs, err) // a *drivers.ConfigError keyed by its file
			}
			d.tls = conf
			d.insecure = cfg.TLS != nil && cfg.TLS.InsecureSkipVerify
		}
	}

	version := cfg.Version
	if version == "" {
		version = DefaultVersion
	}
	switch version {
	case "1.1", "1.0":
	case "2":
		d.h2 = true
		if !d.keepAlive {
			errs = append(errs, bad("keep_alive", errors.New("keep_alive: false with version 2: an HTTP/2 connection carries many requests and has no per-request close")))
		}
	default:
		errs = append(errs, bad("version", fmt.Errorf("version %q: want 1.1, 1.0 or 2", version)))
	}
	if !isToken(d.method) {
		errs = append(errs, bad("method", fmt.Errorf("method %q: not an HTTP token", d.method)))
	}

	// Data: a template that reads it and finds none is the data file's
	// problem when it could not be read, so said once.
	dataOK := true
	if shared != nil {
		d.data = shared
	} else if cfg.Data != "" {
		p := cfg.Data
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if d.data, err = template.LoadData(p); err != nil {
			errs = append(errs, bad("data", err))
			dataOK = false
		}
	}
	if dataOK {
		if err := template.SetOrder(d.data, cfg.DataOrder, cfg.DataSeed); err != nil {
			errs = append(errs, err)
		}
	}
	parse := func(key, what, s string) (tmpl, bool) {
		t, err := parseTemplate(s, d.data, captured...)
		if err != nil && dataOK {
			errs = append(errs, bad(key, fmt.Errorf("%s: %w", what, err)))
		}
		return t, err == nil
	}

	path := cfg.Path
	if path == "" {
		path = DefaultPath
	}
	pathT, ok := parse("path", "path", path)
	if ok && !strings.HasPrefix(path, "/") && !(path == "*" && prefix == "") {
		errs = append(errs, bad("path", fmt.Errorf("path %q: must start with /", path)))
	} else if ok {
		if err := pathT.each(checkPath, d.data); err != nil {
			errs = append(errs, bad("path", fmt.Errorf("path %q: %w", path, err)))
		}
	}

	// Request line and Host.
	d.head = literal(d.method + " " + prefix)
	d.head.concat(pathT)
	d.target = literal(prefix)
	d.target.concat(pathT)
	d.head.concat(literal(" HTTP/" + version + "\r\n"))
	if _, ok := headerKey(cfg.Headers, "Host"); !ok {
		d.head.concat(literal("Host: " + host + "\r\n"))
	}
	if _, ok := headerKey(cfg.Headers, "User-Agent"); !ok {
		d.head.concat(literal("User-Agent: " + userAgent + "\r\n"))
	}

	// Scenario headers, in name order so every request is byte-identical
	// but for {{seq}}.
	names := make([]string, 0, len(cfg.Headers))
	for name := range cfg.Headers {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		value := cfg.Headers[name]
		switch {
		case !isToken(name):
			errs = append(errs, bad("headers."+name, fmt.Errorf("header %q: not an HTTP token", name)))
			continue
		case strings.EqualFold(name, "Connection"):
			errs = append(errs, bad("headers."+name, fmt.Errorf("header %q: set by the driver from keep_alive", name)))
			continue
		case strings.EqualFold(name, "Content-Length") || strings.EqualFold(name, "Transfer-Encoding"):
			errs = append(errs, bad("headers."+name, fmt.Errorf("header %q: set by the driver from body or body_size", name)))
			continue
		case d.h2 && h2Forbidden(name):
			errs = append(errs, bad("headers."+name, fmt.Errorf("header %q: connection-specific, not allowed in HTTP/2 (RFC 9113 §8.2.2)", name)))
			continue
		case cookiesOn(cfg) && strings.EqualFold(name, "Cookie"):
			errs = append(errs, bad("headers."+name, fmt.Errorf("header %q: set by the driver from its cookie jar when cookies is true", name)))
			continue
		}
		vt, ok := parse("headers."+name, "header "+name, value)
		if !ok {
			continue
		}
		if err := vt.each(checkHeaderValue, d.data); err != nil {
			errs = append(errs, bad("headers."+name, fmt.Errorf("header %s: %w", name, err)))
			continue
		}
		d.head.concat(literal(name + ": "))
		d.head.concat(vt)
		d.head.concat(literal("\r\n"))
	}

	// Keep-alive: HTTP/1.1 keeps by default and says `close` to opt out;
	// HTTP/1.0 closes by default and says `keep-alive` to opt in, as ab -k.
	switch {
	case version == "1.1" && !d.keepAlive:
		d.head.concat(literal("Connection: close\r\n"))
	case version == "1.0" && d.keepAlive:
		d.head.concat(literal("Connection: keep-alive\r\n"))
	}

	// Body.
	switch {
	case cfg.BodySize < 0:
		errs = append(errs, bad("body_size", fmt.Errorf("body_size %d: must not be negative", cfg.BodySize)))
	case cfg.BodySize > 0:
		d.filler = make([]byte, cfg.BodySize)
		for i := range d.filler {
			d.filler[i] = 'x'
		}
		d.sendLen = true
	case cfg.Body != "":
		d.body, _ = parse("body", "body", cfg.Body)
		d.sendLen = true
	default:
		d.body = literal("")
		// RFC 9110 §8.6: a user agent sends Content-Length: 0 for a method
		// that expects content and has none; some servers demand it.
		d.sendLen = d.method == "POST" || d.method == "PUT" || d.method == "PATCH"
	}

	if cfg.Success != "" {
		r, err := compileRule(cfg.Success)
		if err != nil {
			errs = append(errs, bad("success", err))
		}
		d.rule = r
	}

	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return d, nil
}

// cookiesOn says whether cfg keeps cookies: cfg.Cookies, or when unset,
// whether it has flows.
func cookiesOn(cfg schema.HTTP) bool {
	if cfg.Cookies != nil {
		return *cfg.Cookies
	}
	return len(cfg.Flows) > 0
}

// h2Forbidden reports whether a header name is connection-specific,
// which HTTP/2 forbids (RFC 9113 §8.2.2); Connection and
// Transfer-Encoding are refused for every version already.
func h2Forbidden(name string) bool {
	for _, f := range []string{"Keep-Alive", "Proxy-Connection", "Upgrade", "TE"} {
		if strings.EqualFold(name, f) {
			return true
		}
	}
	return false
}

// Dial opens one connection (TCP, then the TLS handshake for https://),
// bounded by ctx and by the request timeout. It counts in Opened as soon
// as the TCP connection is established, even when the TLS handshake then
// fails, because the target has seen it. Errors are classified with
// drivers.Classify: Connect with an errno name, "TLS", "DNS" or
// "ETIMEDOUT"; Cancelled when ctx was cancelled. Dial is safe for
// concurrent use.
func (d *Driver) Dial(ctx context.Context) (drivers.Conn, error) {
	if d.h2 {
		c := newH2Conn(d)
		s, _, err := d.dialH2(ctx)
		if err != nil {
			return nil, err
		}
		c.sess = s
		return c, nil
	}
	nc, _, err := d.dial(ctx)
	if err != nil {
		return nil, err
	}
	c := newConn(d)
	c.attach(nc)
	return c, nil
}

// Opened is the number of TCP connections this driver has established,
// by Dial and by re-dials inside Do. It equals the target's count of
// accepted connections. Safe for concurrent use.
func (d *Driver) Opened() int64 { return d.opened.Load() }

// MaxInflight is 1 for HTTP/1.x: a connection carries one request at a
// time (no pipelining), so the engine never calls Do concurrently on one
// connection. For HTTP/2 it is MaxH2Inflight: each request in flight is a
// stream, and the server's SETTINGS_MAX_CONCURRENT_STREAMS may cap it
// further (requests past it wait for a stream to end).
func (d *Driver) MaxInflight() int {
	if d.h2 {
		return MaxH2Inflight
	}
	return 1
}

// HTTP2 reports whether the driver speaks HTTP/2 (version "2").
func (d *Driver) HTTP2() bool { return d.h2 }

// KeepsDeadline implements drivers.DeadlineKeeper: no read or write of a
// Do outlives Request.Deadline, a socket deadline (for HTTP/1.x, an
// earlier request's while it is well ahead, the I/O it cuts short
// resumed up to Request.Deadline: conn.arm).
func (d *Driver) KeepsDeadline() {}

// Insecure reports whether certificate verification is off
// (tls.insecure_skip_verify), so reports can say so.
func (d *Driver) Insecure() bool { return d.insecure }

// dial opens a connection. tcp reports whether the TCP connection was
// established (and counted), even when the TLS handshake failed.
func (d *Driver) dial(ctx context.Context) (nc net.Conn, tcp bool, err error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d.timeout)
		defer cancel()
	}
	nc, err = d.dialer.DialContext(ctx, "tcp", d.addr)
	if err != nil {
		return nil, false, err
	}
	d.opened.Add(1)
	if d.tls == nil {
		return nc, true, nil
	}
	// tlsBase lets Do look at the idle connection through the TLS layer.
	tc := tls.Client(newTLSBase(nc), d.tls)
	if err := tc.HandshakeContext(ctx); err != nil {
		nc.Close()
		return nil, true, fmt.Errorf("tls handshake with %s: %w", d.addr, err)
	}
	return tc, true, nil
}

// headerKey finds name in h case-insensitively.
func headerKey(h map[string]string, name string) (string, bool) {
	for k := range h {
		if strings.EqualFold(k, name) {
			return k, true
		}
	}
	return "", false
}

// isToken reports whether s is an RFC 9110 token (method or header name).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// checkPath rejects bytes that would break or reshape the request line
// (RFC 9112 §3.2: the request target is ASCII without white space or
// controls; RFC 3986 §3.5: a fragment is never sent): a space, a
// control, DEL, '#', and any byte of 0x80 or above.
func checkPath(s string) error {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f || c == '#' {
			return fmt.Errorf("byte %s is not allowed in a path (at byte %d): escape it as %%%02X", quoteByte(c), i, c)
		}
	}
	return nil
}

// quoteByte quotes b for a message: a printable ASCII byte as itself,
// any other as \xNN.
func quoteByte(b byte) string {
	if b >= ' ' && b < 0x7f {
		return strconv.QuoteRune(rune(b))
	}
	return fmt.Sprintf("'\\x%02x'", b)
}

// checkHeaderValue rejects bytes that would split or end the header block.
func checkHeaderValue(s string) error {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '\r' || c == '\n' || c == 0 {
			return fmt.Errorf("byte %s is not allowed in a header value", strconv.QuoteRune(rune(c)))
		}
	}
	return nil
}

// bad places a configuration problem at its key (drivers.ConfigError).
func bad(key string, err error) error { return &drivers.ConfigError{Key: key, Err: err} }

// Timeout is the per-request timeout (DefaultTimeout when the scenario
// sets none).
func (d *Driver) Timeout() time.Duration { return d.timeout }

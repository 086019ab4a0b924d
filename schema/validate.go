package schema

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/runner-dev/runner/internal/suggest"
)

// Closed sets of values; the JSON Schema's enums agree (see types.go).
var (
	serveKinds         = []string{"http", "ws-gateway", "frame"}
	httpVersions       = []string{"1.1", "1.0", "2"}
	arrivalKinds       = []string{"uniform", "poisson"}
	saturationPolicies = []string{"queue", "drop"}
	dataOrders         = []string{"rows", "connection", "random"}
)

// ServeKinds returns the names of the reference targets that target.serve
// takes (`runner serve KIND`), in the order messages list them; a new
// slice on every call.
func ServeKinds() []string { return slices.Clone(serveKinds) }

// ok reports whether path was written in the file and decoded without a
// problem, so that validation neither misses a value nor reports a bad
// one twice.
func (l *loader) ok(path string) bool {
	return l.has(path) && !l.invalid[path]
}

// show renders the value at path for a message: quoted, or as the text
// written in the file when it came from the environment (it may be secret).
func (l *loader) show(path, value string) string {
	if src, ok := l.sources[path]; ok {
		return quote(src) + " (interpolated)"
	}
	return quote(value)
}

// validate checks what the types cannot say: exactly-one-of choices,
// ranges, bounds, enumerations and references between parts of the file.
// It also names unnamed phases, which rule scopes refer to.
func (l *loader) validate(s *Scenario) {
	if l.ok("version") && s.Version != 1 {
		l.failf("version", "unsupported version %d; expected 1", s.Version)
	}
	if l.ok("name") {
		l.checkName("name", s.Name)
	}
	if l.ok("repeats") && s.Repeats < 1 {
		l.failf("repeats", "expected at least 1 repeat, found %d", s.Repeats)
	}
	l.validateTarget(&s.Target, s.Driver)
	l.validateDriver(s)
	l.validatePhases(s.Phases)
	if s.Reconcile != nil {
		l.validateFetch(&s.Reconcile.Fetch, s.Driver)
		if l.ok("reconcile.expect") && len(s.Reconcile.Expect) == 0 {
			l.failf("reconcile.expect", "no rules; expected at least one, e.g. [server.requests == requests]")
		}
		// Without fetch, reconcile is missing a required key, reported as such.
		l.validateRules("reconcile.expect", s.Reconcile.Expect, s.Phases, true)
		l.checkFrameCodes("reconcile.expect", s.Reconcile.Expect, s.Driver)
	}
	l.validateRules("assert", s.Assert, s.Phases, s.Reconcile != nil && l.has("reconcile.fetch"))
	l.checkFrameCodes("assert", s.Assert, s.Driver)
	l.validateOutputs(s.Outputs)
}

// schemesOf are the url schemes a driver reaches its target by.
func schemesOf(d Driver) []string {
	switch {
	case d.HTTP != nil && d.WebSocket == nil && d.Frame == nil:
		return []string{"http", "https"}
	case d.WebSocket != nil && d.HTTP == nil && d.Frame == nil:
		return []string{"ws", "wss"}
	case d.Frame != nil && d.HTTP == nil && d.WebSocket == nil:
		return []string{"tcp"}
	}
	return []string{"http", "https", "ws", "wss", "tcp"}
}

func (l *loader) validateTarget(t *Target, d Driver) {
	if !l.ok("target") {
		return
	}
	hasURL, hasServe := l.has("target.url"), l.has("target.serve")
	switch {
	case hasURL && hasServe:
		l.failf("target", "both url and serve; expected exactly one: the url of a running server, or serve to spawn a reference target")
	case !hasURL && !hasServe:
		l.failf("target", "neither url nor serve; expected exactly one: the url of a running server (url: http://127.0.0.1:8080), or serve to spawn a reference target (serve: http)")
	}
	if l.ok("target.url") {
		u, err := url.Parse(t.URL)
		switch {
		case l.refuseNonPrinting("target.url", t.URL):
		case err != nil || u.Scheme == "" || u.Host == "":
			l.failf("target.url", "expected a URL such as http://127.0.0.1:8080, found %s", l.show("target.url", t.URL))
		case !slices.Contains(schemesOf(d), u.Scheme):
			l.failf("target.url", "unsupported scheme %s in %s; expected %s", quote(u.Scheme), l.show("target.url", t.URL), strings.Join(schemesOf(d), " or "))
		case nonASCII(u.Hostname()) >= 0:
			l.failf("target.url", "host %s has a character that is not ASCII (character %d): a look-alike or invisible character (U+3164, a combining mark, a full-width digit) would turn 127.0.0.1 into a name looked up in DNS, off the loopback; write an international name in its ASCII form (xn--…)", quote(u.Hostname()), nonASCII(u.Hostname())+1)
		case u.User != nil:
			// The url is not shown: it holds a password.
			l.failf("target.url", "user info (user:password@) in the url is not supported; send an Authorization header (driver.http.headers)")
		case u.Path != "" && u.Path != "/" || u.RawQuery != "" || u.Fragment != "":
			l.failf("target.url", "the url names the server only, e.g. http://127.0.0.1:8080; put the request path in the driver (driver.http.path), found %s", l.show("target.url", t.URL))
		case u.Port() != "":
			if p, err := strconv.Atoi(u.Port()); err != nil || p < 1 || p > 65535 {
				l.failf("target.url", "port out of range in %s; expected a port from 1 to 65535", l.show("target.url", t.URL))
			}
		}
	}
	if l.ok("target.serve") && !slices.Contains(serveKinds, t.Serve) {
		l.failf("target.serve", "unknown reference target %s; %s", quote(t.Serve), oneOf(t.Serve, serveKinds))
	}
	if l.ok("target.args") && hasURL && !hasServe {
		l.failf("target.args", "args apply only to a spawned reference target (serve), not to a url")
	}
	if _, set := l.nodes["target.pid"]; set && l.ok("target.pid") {
		switch {
		case t.Pid < 1:
			l.failf("target.pid", "expected a process id ≥ 1, found %d", t.Pid)
		case hasServe:
			l.failf("target.pid", "a spawned target (serve) is measured by its own pid; pid is for a url target")
		}
	}
}

func (l *loader) validateDriver(s *Scenario) {
	if !l.ok("driver") {
		return
	}
	var set, all []string
	d := reflect.ValueOf(s.Driver)
	for _, f := range fieldsOf(d.Type()) {
		all = append(all, f.key)
		if !d.Field(f.index).IsNil() {
			set = append(set, f.key)
		}
	}
	switch {
	case len(set) == 0 && len(l.nodes["driver"].Content) == 0:
		l.failf("driver", "no protocol; expected one of: %s", strings.Join(all, ", "))
	case len(set) > 1:
		l.failf("driver", "more than one protocol (%s); expected exactly one", strings.Join(set, ", "))
	}
	if h := s.Driver.HTTP; h != nil {
		l.validateHTTP(h, s.Target)
	}
	if w := s.Driver.WebSocket; w != nil {
		l.validateWebSocket(w, s.Target)
	}
	if f := s.Driver.Frame; f != nil {
		l.validateFrame(f)
	}
}

// validateFrame checks the frame driver's choices; the layout's own
// consistency (roles, sizes, constants) is the driver's to check.
func (l *loader) validateFrame(f *Frame) {
	const p = "driver.frame"
	hasPreset, hasLayout := l.has(p+".preset"), l.has(p+".layout")
	switch {
	case hasPreset && hasLayout:
		l.failf(p, "both preset and layout; expected exactly one")
	case !hasPreset && !hasLayout && l.ok(p):
		l.failf(p, "neither preset nor layout; expected preset: lkdf, or a layout with its fields")
	}
	if hasPreset && l.ok(p+".preset") && f.Preset != "lkdf" {
		l.failf(p+".preset", "unknown preset %s; %s", quote(f.Preset), oneOf(f.Preset, []string{"lkdf"}))
	}
	if l.has(p+".payload") && l.has(p+".payload_file") {
		l.failf(p+".payload_file", "both payload and payload_file; expected at most one")
	} else if l.has(p+".data") && !l.has(p+".payload") && (f.Layout == nil || len(f.Layout.Parts) == 0 && !hasColumn(f.Layout.Fields)) {
		l.failf(p+".data", "data is read by {{data.NAME}} in payload (or in layout.parts, or by a layout field's column), and there is none")
	}
	if lay := f.Layout; lay != nil && len(lay.Parts) > 0 && l.ok(p+".layout.parts") {
		for _, k := range []string{"payload", "payload_file"} {
			if l.has(p + "." + k) {
				l.failf(p+"."+k, "layout.parts make the payload; leave %s out", k)
			}
		}
	}
	if l.has(p+".timeout") && l.ok(p+".timeout") && f.Timeout <= 0 {
		l.failf(p+".timeout", "expected a positive duration, found %s", f.Timeout)
	}
	for k, v := range map[string]string{"payload_file": f.PayloadFile, "data": f.Data} {
		if l.has(p+"."+k) && l.ok(p+"."+k) && strings.TrimSpace(v) == "" {
			l.failf(p+"."+k, "empty; leave %s out for the default", k)
		}
	}
	l.checkDataOrder(p, f.DataOrder, f.DataSeed)
	if lay := f.Layout; lay != nil && l.ok(p+".layout") {
		if l.has(p+".layout.byte_order") && l.ok(p+".layout.byte_order") && lay.ByteOrder != "big" && lay.ByteOrder != "little" {
			l.failf(p+".layout.byte_order", "expected big or little, found %s", quote(lay.ByteOrder))
		}
		if l.ok(p+".layout.fields") && len(lay.Fields) == 0 {
			l.failf(p+".layout.fields", "no fields; a header needs at least an id and a length field")
		}
		for i, fd := range lay.Fields {
			fp := fmt.Sprintf("%s.layout.fields[%d]", p, i)
			if l.ok(fp+".size") && !slices.Contains([]string{"u8", "u16", "u32", "u64"}, fd.Size) {
				l.failf(fp+".size", "expected u8, u16, u32 or u64, found %s", quote(fd.Size))
			}
			if l.has(fp+".role") && l.ok(fp+".role") && !slices.Contains([]string{"id", "length", "type", "status"}, fd.Role) {
				l.failf(fp+".role", "expected id, length, type or status, found %s", quote(fd.Role))
			}
		}
		if l.has(p+".layout.max_payload") && l.ok(p+".layout.max_payload") && (lay.MaxPayload <= 0 || lay.MaxPayload > 64<<20) {
			l.failf(p+".layout.max_payload", "expected a size from 1B to 64MiB, found %s", lay.MaxPayload)
		}
	}
}

// hasColumn reports whether a layout field is sent from a data column.
func hasColumn(fields []FrameField) bool {
	return slices.ContainsFunc(fields, func(f FrameField) bool { return f.Column != "" })
}

func (l *loader) validateWebSocket(w *WebSocket, t Target) {
	const p = "driver.websocket"
	if l.has(p+".path") && l.ok(p+".path") {
		l.checkPath(p+".path", w.Path)
	}
	if l.ok(p+".message") && w.Message == "" {
		l.failf(p+".message", "empty message; expected a template such as '{\"id\": {{seq}}}'")
	}
	if l.has(p+".timeout") && l.ok(p+".timeout") && w.Timeout <= 0 {
		l.failf(p+".timeout", "expected a positive duration, found %s", w.Timeout)
	}
	if l.has(p+".max_message") && l.ok(p+".max_message") && w.MaxMessage <= 0 {
		l.failf(p+".max_message", "expected a positive size, found %s", w.MaxMessage)
	}
	for k, v := range map[string]string{"success": w.Success, "error_code": w.ErrorCode, "correlate": w.Correlate, "data": w.Data} {
		if l.has(p+"."+k) && l.ok(p+"."+k) && strings.TrimSpace(v) == "" {
			l.failf(p+"."+k, "empty; leave %s out for the default", k)
		}
	}
	l.checkDataOrder(p, w.DataOrder, w.DataSeed)
	if l.ok(p+".correlate") && w.Correlate != "" {
		for _, seg := range strings.Split(w.Correlate, ".") {
			if seg == "" {
				l.failf(p+".correlate", "expected a dot path of field names such as id or meta.id, found %s", quote(w.Correlate))
				break
			}
		}
	}
	l.checkHeaders(p, w.Headers)
	if w.TLS != nil {
		if l.ok(p+".tls.ca_file") && w.TLS.CAFile == "" {
			l.failf(p+".tls.ca_file", "expected a PEM file name, found an empty string")
		}
		l.checkServerName(p+".tls.server_name", w.TLS.ServerName)
		l.checkClientCert(p+".tls", w.TLS)
		if u, err := url.Parse(t.URL); t.Serve != "" || err == nil && u.Scheme == "ws" {
			l.failf(p+".tls", "tls applies only to wss:// targets")
		}
	}
}

// refuseCookieHeader refuses a Cookie entry in the headers under p: with
// cookies: true the Cookie header is the cookie jar's.
func (l *loader) refuseCookieHeader(p string, headers map[string]string) {
	for _, k := range slices.Sorted(maps.Keys(headers)) {
		if strings.EqualFold(k, "Cookie") {
			l.failf(p+".headers."+k, "the Cookie header is the cookie jar's when cookies is true; let the target set the cookie, or turn cookies off")
		}
	}
}

// checkDataOrder checks a driver's data_order and data_seed under p: a
// known order, a nonzero seed with random and none with another order
// (no silent default seed: a random order names it so the run repeats),
// and a data file for either to apply to.
func (l *loader) checkDataOrder(p, order string, seed int64) {
	hasOrder, hasSeed := l.has(p+".data_order"), l.has(p+".data_seed")
	if l.ok(p+".data_order") && !slices.Contains(dataOrders, order) {
		l.failf(p+".data_order", "unknown data_order %s; %s", quote(order), oneOf(order, dataOrders))
		return
	}
	switch {
	case (hasOrder || hasSeed) && !l.has(p+".data"):
		key := p + ".data_order"
		if !hasOrder {
			key = p + ".data_seed"
		}
		l.failf(key, "%s applies to the rows of a data file, and there is no data (data: FILE)", key[len(p)+1:])
	case order == "random" && !hasSeed:
		l.failf(p+".data_order", "data_order random needs data_seed, a nonzero integer, so that the run can be repeated")
	case order == "random" && l.ok(p+".data_seed") && seed == 0:
		l.failf(p+".data_seed", "expected a nonzero integer, found 0")
	case hasSeed && order != "random" && l.ok(p+".data_order"):
		l.failf(p+".data_seed", "data_seed seeds data_order: random; the order here is %s", order)
	case hasSeed && !hasOrder:
		l.failf(p+".data_seed", "data_seed seeds data_order: random, and data_order is not given (default rows)")
	}
}

// validateFetch checks that reconcile.fetch names exactly one channel.
func (l *loader) validateFetch(f *Fetch, d Driver) {
	const p = "reconcile.fetch"
	if !l.ok(p) {
		return
	}
	var set []string
	for _, k := range []string{"path", "prometheus", "message", "memcached_stats"} {
		if l.has(p + "." + k) {
			set = append(set, k)
		}
	}
	switch {
	case len(set) == 0:
		l.failf(p, "no channel; expected one of path (GET, JSON), prometheus (GET, Prometheus text), message (WebSocket control message) or memcached_stats (memcached's stats command)")
	case len(set) > 1:
		l.failf(p, "more than one channel (%s); expected exactly one", strings.Join(set, ", "))
	}
	if l.has(p+".path") && l.ok(p+".path") {
		l.checkFetchPath(p+".path", f.Path)
	}
	if l.has(p+".prometheus") && l.ok(p+".prometheus") {
		l.checkFetchPath(p+".prometheus", f.Prometheus)
	}
	if l.has(p+".message") && l.ok(p+".message") {
		switch {
		case f.Message == "":
			l.failf(p+".message", "empty message; expected e.g. '{\"cmd\":\"stats\"}'")
		case d.WebSocket == nil:
			l.failf(p+".message", "a control message needs the websocket driver; use path (GET, JSON) or prometheus")
		}
	}
	if l.has(p+".memcached_stats") && l.ok(p+".memcached_stats") {
		switch {
		case !f.MemcachedStats:
			l.failf(p+".memcached_stats", "false reads nothing; leave memcached_stats out, or set it to true")
		case d.Frame == nil:
			l.failf(p+".memcached_stats", "memcached_stats reads memcached at the target's tcp:// address: it needs the frame driver")
		}
	}
	if l.has(p+".field") && l.ok(p+".field") {
		switch {
		case l.has(p + ".memcached_stats"):
			l.failf(p+".field", "field applies to a JSON reply (path or message), not to memcached_stats")
		case l.has(p + ".prometheus"):
			l.failf(p+".field", "field applies to a JSON reply (path or message), not to prometheus")
		case f.Field == "" || strings.Contains(f.Field, ".."):
			l.failf(p+".field", "expected a dot path of field names such as stats, found %s", quote(f.Field))
		}
	}
}

// checkFetchPath checks where reconcile.fetch reads the counters: a path
// on the target's host (/metrics), or an absolute http:// or https:// URL
// of an endpoint of their own (http://127.0.0.1:8405/metrics: an
// exporter on another port), without user info.
func (l *loader) checkFetchPath(path, v string) {
	if !strings.Contains(v, "://") {
		l.checkPath(path, v)
		return
	}
	u, err := url.Parse(v)
	switch {
	case l.refuseNonPrinting(path, v):
	case err != nil || u.Host == "":
		l.failf(path, "expected a path such as /metrics or a URL such as http://127.0.0.1:8405/metrics, found %s", l.show(path, v))
	case u.Scheme != "http" && u.Scheme != "https":
		l.failf(path, "unsupported scheme %s in %s; the counters are read over http or https", quote(u.Scheme), l.show(path, v))
	case nonASCII(u.Hostname()) >= 0:
		l.failf(path, "host %s has a character that is not ASCII (character %d); write an international name in its ASCII form (xn--…)", quote(u.Hostname()), nonASCII(u.Hostname())+1)
	case u.User != nil:
		// The url is not shown: it holds a password.
		l.failf(path, "user info (user:password@) in the url is not supported")
	case u.Port() != "":
		if p, err := strconv.Atoi(u.Port()); err != nil || p < 1 || p > 65535 {
			l.failf(path, "port out of range in %s; expected a port from 1 to 65535", l.show(path, v))
		}
	}
}

var standardMethods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "CONNECT"}

func (l *loader) validateHTTP(h *HTTP, t Target) {
	const p = "driver.http"
	l.checkMethod(p+".method", h.Method)
	if l.ok(p + ".path") {
		l.checkPath(p+".path", h.Path)
	}
	if l.ok(p+".version") && !slices.Contains(httpVersions, h.Version) {
		l.failf(p+".version", "expected \"1.1\", \"1.0\" or \"2\", found %s", quote(h.Version))
	}
	if h.Version == "2" && h.KeepAlive != nil && !*h.KeepAlive && l.ok(p+".keep_alive") {
		l.failf(p+".keep_alive", "keep_alive: false with version \"2\": an HTTP/2 connection carries many requests and has no per-request close; use version \"1.1\" for a connection per request")
	}
	if l.ok(p+".timeout") && h.Timeout <= 0 {
		l.failf(p+".timeout", "expected a positive duration, found %s", h.Timeout)
	}
	if l.has(p+".body") && l.has(p+".body_size") {
		l.failf(p+".body_size", "both body and body_size; expected at most one")
	}
	if l.ok(p+".body_size") && h.BodySize <= 0 {
		l.failf(p+".body_size", "expected a positive size, found %s", h.BodySize)
	}
	if l.ok(p+".success") && strings.TrimSpace(h.Success) == "" {
		l.failf(p+".success", "empty rule; leave success out to use the default (a successful status)")
	}
	l.checkHeaders(p, h.Headers)
	if l.ok(p+".data") && strings.TrimSpace(h.Data) == "" {
		l.failf(p+".data", "empty; leave data out for no data file")
	}
	l.checkDataOrder(p, h.DataOrder, h.DataSeed)
	if h.Cookies != nil && *h.Cookies || h.Cookies == nil && len(h.Flows) > 0 {
		l.refuseCookieHeader(p, h.Headers)
		for i, f := range h.Flows {
			for j, st := range f.Steps {
				l.refuseCookieHeader(index(index(p+".flows", i)+".steps", j), st.Headers)
			}
		}
	}
	if h.Flows != nil || l.has(p+".flows") {
		l.validateFlows(h)
	}
	if h.TLS != nil {
		if l.ok(p+".tls.ca_file") && h.TLS.CAFile == "" {
			l.failf(p+".tls.ca_file", "expected a PEM file name, found an empty string")
		}
		l.checkServerName(p+".tls.server_name", h.TLS.ServerName)
		l.checkClientCert(p+".tls", h.TLS)
		if u, err := url.Parse(t.URL); t.Serve != "" || err == nil && u.Scheme == "http" {
			l.failf(p+".tls", "tls applies only to https:// targets")
		}
	}
}

// checkMethod checks a request method at path, when given.
func (l *loader) checkMethod(path, method string) {
	if !l.ok(path) {
		return
	}
	switch upper := strings.ToUpper(method); {
	case !isToken(method):
		l.failf(path, "expected an HTTP method such as GET or POST, found %s", l.show(path, method))
	case upper != method && slices.Contains(standardMethods, upper):
		l.failf(path, "methods are case-sensitive; did you mean %q?", upper)
	}
}

// checkHeaders checks header names and values under p + ".headers".
func (l *loader) checkHeaders(p string, headers map[string]string) {
	seen := map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(headers)) {
		path := p + ".headers." + name
		switch {
		case !isToken(name):
			l.failf(path, "invalid header name %s; expected letters, digits and !#$%%&'*+-.^_`|~", quote(name))
		case strings.ContainsAny(headers[name], "\r\n\x00"):
			l.failf(path, "header value contains a line break or NUL; expected a single line")
		}
		if other, dup := seen[strings.ToLower(name)]; dup {
			l.failf(path, "header %s given twice (also as %s); header names are case-insensitive", quote(name), quote(other))
		}
		seen[strings.ToLower(name)] = name
	}
}

// checkPath checks a request path: origin form, one line, no spaces, no
// character that does not print.
func (l *loader) checkPath(path, v string) {
	switch {
	case !strings.HasPrefix(v, "/"):
		l.failf(path, "expected a path starting with \"/\", e.g. /hello; found %s", l.show(path, v))
	case strings.IndexFunc(v, func(r rune) bool { return r == ' ' || unicode.IsControl(r) }) >= 0:
		l.failf(path, "path contains a space or a control character; percent-encode it (space is %%20)")
	case l.refuseNonPrinting(path, v):
	}
}

// checkClientCert checks a client certificate's files at path (a tls
// mapping): both cert_file and key_file, or neither, and neither empty.
// Their contents are read by the driver, which reports a file that does
// not hold a PEM certificate and its matching key.
func (l *loader) checkClientCert(path string, t *TLS) {
	cert, key := l.has(path+".cert_file"), l.has(path+".key_file")
	for _, f := range []struct {
		key string
		set bool
		v   string
	}{{"cert_file", cert, t.CertFile}, {"key_file", key, t.KeyFile}} {
		if f.set && l.ok(path+"."+f.key) && f.v == "" {
			l.failf(path+"."+f.key, "expected a PEM file name, found an empty string")
		}
	}
	switch {
	case cert && !key:
		l.failf(path+".cert_file", "cert_file without key_file; a client certificate needs both")
	case key && !cert:
		l.failf(path+".key_file", "key_file without cert_file; a client certificate needs both")
	}
}

// checkServerName checks a TLS server name, a host name: one that holds
// a character that does not print is refused.
func (l *loader) checkServerName(path, v string) {
	if l.ok(path) && !l.refuseNonPrinting(path, v) && nonASCII(v) >= 0 {
		l.failf(path, "server name %s has a character that is not ASCII (character %d); write an international name in its ASCII form (xn--…)", quote(v), nonASCII(v)+1)
	}
}

// nonASCII returns the 0-based position, in characters, of the first
// character of host that is not ASCII, or -1. Hosts are ASCII: an
// international name is written in its ASCII form (xn--…, RFC 5890), so
// that nothing that merely looks like a loopback address reaches DNS.
func nonASCII(host string) int {
	at := 0
	for _, c := range host {
		if c >= 0x80 {
			return at
		}
		at++
	}
	return -1
}

// nonPrinting returns the first character of v that does not print
// (unicode.IsPrint is false: a control or format character such as
// U+FEFF or U+200B, a space other than U+0020, an unassigned code point)
// and its 1-based position in characters; ok is false when every
// character prints.
func nonPrinting(v string) (r rune, at int, ok bool) {
	for _, c := range v {
		at++
		if !unicode.IsPrint(c) {
			return c, at, true
		}
	}
	return 0, 0, false
}

// refuseNonPrinting reports the value v at path when it holds a character
// that does not print, and tells whether it did. Such a character is
// invisible in an editor and in messages, yet it is part of the value: in
// a host it becomes a DNS lookup of another name (one that leaves the
// loopback), in a path another resource.
func (l *loader) refuseNonPrinting(path, v string) bool {
	r, at, bad := nonPrinting(v)
	if bad {
		l.failf(path, "character %d is %U, which does not print (an invisible, control or format character, often pasted along); remove it, or percent-encode it in a path", at, r)
	}
	return bad
}

// checkName checks a scenario or phase name, which goes into TSV rows and
// file names.
func (l *loader) checkName(path, v string) {
	switch {
	case strings.TrimSpace(v) == "":
		l.failf(path, "expected a non-empty name")
	case strings.IndexFunc(v, unicode.IsControl) >= 0:
		l.failf(path, "name contains a tab, line break or other control character; it goes into TSV rows")
	}
}

func (l *loader) validatePhases(phases []Phase) {
	if l.ok("phases") && len(phases) == 0 {
		l.failf("phases", "no phases; expected at least one, e.g. [{open: {rate: 100/s}, duration: 10s}]")
	}
	byName := map[string]int{}
	for i := range phases {
		ph, p := &phases[i], index("phases", i)
		if l.ok(p + ".name") {
			l.checkName(p+".name", ph.Name)
		}
		if ph.Name == "" {
			ph.Name = fmt.Sprintf("phase-%d", i+1)
		}
		if j, dup := byName[ph.Name]; dup {
			l.failf(p+".name", "duplicate phase name %s; phases[%d] has it too", quote(ph.Name), j)
		} else {
			byName[ph.Name] = i
		}
		if !l.ok(p) {
			continue // not a mapping; already reported
		}
		var models []string
		for _, m := range []string{"closed", "open", "ramp"} {
			if l.has(p + "." + m) {
				models = append(models, m)
			}
		}
		switch len(models) {
		case 0:
			l.failf(p, "no load model; expected exactly one of closed, open or ramp")
		case 1:
		default:
			l.failf(p, "more than one load model (%s); expected exactly one of closed, open or ramp", strings.Join(models, ", "))
		}
		if l.ok(p+".duration") && ph.Duration <= 0 {
			l.failf(p+".duration", "expected a positive duration, found %s", ph.Duration)
		}
		if l.ok(p+".requests") && ph.Requests < 1 {
			l.failf(p+".requests", "expected at least 1 request, found %d", ph.Requests)
		}
		if !l.has(p+".duration") && !l.has(p+".requests") && !l.has(p+".ramp") {
			l.failf(p, "unbounded phase; expected duration (e.g. duration: 30s) or requests")
		}
		if ph.Closed != nil {
			l.validateClosed(p+".closed", ph.Closed)
		}
		if ph.Open != nil {
			l.validateOpen(p, ph.Open)
		}
		if ph.Ramp != nil {
			l.validateRamp(p+".ramp", ph.Ramp)
		}
	}
}

func (l *loader) validateClosed(p string, c *Closed) {
	if l.ok(p+".connections") && c.Connections < 1 {
		l.failf(p+".connections", "expected at least 1 connection, found %d", c.Connections)
	}
	l.checkThinkTime(p+".think_time", c.ThinkTime)
	if l.ok(p+".expected_rate") && c.ExpectedRate <= 0 {
		l.failf(p+".expected_rate", "expected a positive rate, found %s", c.ExpectedRate)
	}
}

func (l *loader) checkThinkTime(path string, d Duration) {
	if l.ok(path) && d < 0 {
		l.failf(path, "expected a duration of 0s or more, found %s", d)
	}
}

// validateOpen checks the open model of phase p.
func (l *loader) validateOpen(p string, o *Open) {
	rate := p + ".open.rate"
	switch {
	case !o.Rate.Ramp:
		switch {
		case !l.ok(rate):
		case o.Rate.From < 0:
			l.failf(rate, "expected a rate of 0/s or more (0/s is a pause), found %s", o.Rate.From)
		case o.Rate.From == 0 && !l.has(p+".duration"):
			// A count bound alone would never be reached.
			l.failf(rate, "0/s is a pause, and a pause needs the phase's duration (e.g. duration: 5s); requests alone would never be reached")
		}
	case l.ok(rate+".from") && l.ok(rate+".to"):
		for _, end := range []struct {
			key string
			r   Rate
		}{{"from", o.Rate.From}, {"to", o.Rate.To}} {
			if end.r < 0 {
				l.failf(rate+"."+end.key, "expected a rate of 0/s or more, found %s", end.r)
			}
		}
		if o.Rate.From == o.Rate.To {
			l.failf(rate, "a ramp that goes nowhere: from and to are both %s; write rate: %s for a constant rate", o.Rate.From, o.Rate.From)
		} else if !l.has(p + ".duration") {
			l.failf(rate, "a rate ramp needs the phase's duration, over which the rate goes from %s to %s", o.Rate.From, o.Rate.To)
		}
	}
	if l.ok(p+".open.connections") && o.Connections < 1 {
		l.failf(p+".open.connections", "expected at least 1 connection, found %d", o.Connections)
	}
	if l.ok(p+".open.inflight") && o.Inflight < 1 {
		l.failf(p+".open.inflight", "expected at least 1 request in flight per connection, found %d", o.Inflight)
	}
	if l.ok(p+".open.arrivals") && !slices.Contains(arrivalKinds, o.Arrivals) {
		l.failf(p+".open.arrivals", "unknown arrivals %s; %s", quote(o.Arrivals), oneOf(o.Arrivals, arrivalKinds))
	}
	if l.ok(p+".open.on_saturation") && !slices.Contains(saturationPolicies, o.OnSaturation) {
		l.failf(p+".open.on_saturation", "unknown on_saturation %s; %s", quote(o.OnSaturation), oneOf(o.OnSaturation, saturationPolicies))
	}
	if w := p + ".open.dispatch_window"; l.ok(w) && o.DispatchWindow != nil {
		switch d := time.Duration(*o.DispatchWindow); {
		case d < 0 || d > MaxDispatchWindow || (d > 0 && d < time.Microsecond):
			l.failf(w, "expected 0s (each arrival at its own instant) or a duration from 1us to %s, found %s", MaxDispatchWindow, d)
		case d > 0 && o.OnSaturation == "drop":
			// An early send frees its slot early and changes which later
			// arrivals find every slot busy: the drop count would not be
			// the schedule's.
			l.failf(w, "a dispatch window sends arrivals early, which frees their slots early and changes which arrivals on_saturation: drop drops; with drop, leave dispatch_window out (each arrival is paced at its own instant)")
		}
	}
	if l.ok(p+".open.seed") && o.Seed == 0 {
		// 0 is the Go zero value, which means "the default seed" to a
		// scenario built in Go; an explicit 0 must not silently become 1.
		l.failf(p+".open.seed", "expected a non-zero seed: any integer from %d to %d except 0 (leaving seed out means 1)", int64(math.MinInt64), int64(math.MaxInt64))
	}
}

func (l *loader) validateRamp(p string, r *Ramp) {
	c, sc := r.Connections, p+".connections"
	if l.ok(sc+".from") && c.From < 0 {
		l.failf(sc+".from", "expected 0 or more connections, found %d", c.From)
	}
	if l.ok(sc+".to") && c.To < 1 {
		l.failf(sc+".to", "expected at least 1 connection, found %d (a staircase steps connections up; for a stretch without traffic write a pause, open: {rate: 0/s})", c.To)
	}
	if l.ok(sc+".step") && c.Step < 1 {
		l.failf(sc+".step", "expected a step of at least 1 connection, found %d", c.Step)
	}
	if l.ok(sc+".every") && c.Every <= 0 {
		l.failf(sc+".every", "expected a positive duration, found %s", c.Every)
	}
	if l.ok(sc+".from") && l.ok(sc+".to") && c.From >= c.To {
		l.failf(sc, "from %d is not below to %d; a ramp steps connections up, never down (for fewer connections, follow it with a closed phase of fewer connections)", c.From, c.To)
	} else if c.From < c.To && c.Step > 0 && c.Every > 0 {
		// The staircase lasts ceil((to-from)/step) × every; keep it in range of a time.Duration.
		steps := (int64(c.To) - int64(c.From) + int64(c.Step) - 1) / int64(c.Step)
		if steps > math.MaxInt64/int64(c.Every) {
			l.failf(sc, "the staircase lasts longer than %s; expected fewer steps or a shorter every", time.Duration(math.MaxInt64).Round(time.Hour))
		}
	}
	l.checkThinkTime(p+".think_time", r.ThinkTime)
}

// validateRules checks the phase scopes of rules and, when fetched is
// false, that no rule reads the target's counters; the expressions are
// the engine's to compile (Options.CheckRule).
// MaxRules bounds the rules of assert, and of reconcile.expect, in one
// scenario.
const MaxRules = 256

func (l *loader) validateRules(path string, rules []Rule, phases []Phase, fetched bool) {
	if len(rules) > MaxRules {
		// Each rule is compiled (a few ms at its bounds): 2,644 rules of
		// 128 operators took validate 17 s and 580 MB.
		l.failf(index(path, MaxRules), "%d rules: at most %d in %s; a scenario states a few conditions, not a generated list", len(rules), MaxRules, path)
		return
	}
	var names []string
	byName := map[string]int{}
	judged := 0
	for i, ph := range phases {
		if _, dup := byName[ph.Name]; !dup {
			byName[ph.Name] = i
			names = append(names, ph.Name)
		}
		if !ph.Warmup {
			judged++
		}
	}
	unscoped := false
	for i, r := range rules {
		p := index(path, i)
		if expr := cmp.Or(l.pathIf(p+".rule"), p); !fetched && l.reads != nil && l.ok(expr) {
			for _, m := range l.reads(r.Expr) {
				if c, ok := serverCounter(m); ok {
					l.failf(expr, "%s needs reconcile.fetch to read the target's counters, e.g. reconcile: {fetch: {path: /stats}, expect: [...]}", c)
					break
				}
			}
		}
		if r.Phase == "" {
			unscoped = true
			continue
		}
		if !l.ok(p + ".phase") {
			continue
		}
		j, found := byName[r.Phase]
		switch {
		case !found:
			l.failf(p+".phase", "unknown phase %s; %s", quote(r.Phase), oneOf(r.Phase, names))
		case phases[j].Warmup:
			l.failf(p+".phase", "phase %s is a warmup phase, and warmup phases are never judged; scope the rule to a measured phase", quote(r.Phase))
		}
	}
	if unscoped && len(phases) > 0 && judged == 0 {
		l.failf(path, "every phase is a warmup phase, so these rules would judge nothing; make a phase measured (warmup: false)")
	}
}

// pathIf returns path if it was written in the file, else "".
func (l *loader) pathIf(path string) string {
	if l.has(path) {
		return path
	}
	return ""
}

// serverCounter returns the target counter that metric m (as
// Options.RuleReads writes it) reads, if it reads one: "server.requests"
// for server.requests and median(server.requests), "server.<counter>"
// for server[key].
func serverCounter(m string) (string, bool) {
	for _, view := range []string{"median(", "worst("} {
		if inner, ok := strings.CutPrefix(m, view); ok && strings.HasSuffix(inner, ")") {
			m = strings.TrimSuffix(inner, ")")
		}
	}
	switch {
	case m == "fetches":
		// The runner's own fetches inside the counters' deltas: without
		// a fetch there are none to subtract.
		return m, true
	case m == "server":
		return "server.<counter>", true
	case strings.HasPrefix(m, "server.") || strings.HasPrefix(m, "server["):
		return m, true
	}
	return "", false
}

var placeholder = regexp.MustCompile(`\{[^{}]*\}`)

func (l *loader) validateOutputs(o Outputs) {
	for _, out := range []struct{ key, file string }{{"tsv", o.TSV}, {"json", o.JSON}, {"markdown", o.Markdown}, {"junit", o.JUnit}, {"html", o.HTML}, {"hdr", o.HDR}} {
		path := "outputs." + out.key
		if !l.ok(path) {
			continue
		}
		for _, ph := range placeholder.FindAllString(out.file, -1) {
			if ph != "{run_id}" && ph != "{scenario}" {
				l.failf(path, "unknown placeholder %s; expected {run_id} or {scenario}", ph)
			}
		}
	}
	if o.TSV != "" && o.TSV == o.JSON {
		l.failf("outputs.json", "tsv and json name the same file %s", quote(o.JSON))
	}
}

// oneOf lists the valid values, leading with the nearest one to v.
func oneOf(v string, valid []string) string {
	list := "expected one of: " + strings.Join(valid, ", ")
	for _, k := range valid {
		if len(v) > len(k) && strings.HasPrefix(strings.ToLower(v), k) { // "dropped" for "drop"
			return fmt.Sprintf("did you mean %q? (%s)", k, list)
		}
	}
	if k, ok := nearest(v, valid, suggest.Limit(v)); ok {
		return fmt.Sprintf("did you mean %q? (%s)", k, list)
	}
	return list
}

// isToken reports whether s is an HTTP token (RFC 9110 §5.6.2), as
// method and header names must be.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// fillDefaults writes the documented defaults into the fields left out.
func fillDefaults(s *Scenario) {
	if s.Repeats == 0 {
		s.Repeats = 1
	}
	if h := s.Driver.HTTP; h != nil && h.Data != "" {
		h.DataOrder = cmp.Or(h.DataOrder, "rows")
	}
	if w := s.Driver.WebSocket; w != nil && w.Data != "" {
		w.DataOrder = cmp.Or(w.DataOrder, "rows")
	}
	if f := s.Driver.Frame; f != nil && f.Data != "" {
		f.DataOrder = cmp.Or(f.DataOrder, "rows")
	}
	if h := s.Driver.HTTP; h != nil {
		if h.Cookies == nil {
			on := len(h.Flows) > 0 // a virtual user's session, as a browser keeps
			h.Cookies = &on
		}
		if len(h.Flows) == 0 {
			h.Method = cmp.Or(h.Method, "GET")
			h.Path = cmp.Or(h.Path, "/")
		}
		for i := range h.Flows {
			f := &h.Flows[i]
			f.Weight = cmp.Or(f.Weight, 1)
			for j := range f.Steps {
				f.Steps[j].Method = cmp.Or(f.Steps[j].Method, "GET")
				f.Steps[j].Path = cmp.Or(f.Steps[j].Path, "/")
			}
		}
		h.Version = cmp.Or(h.Version, "1.1")
		if h.KeepAlive == nil {
			on := true
			h.KeepAlive = &on
		}
		if h.Timeout == 0 {
			h.Timeout = Duration(10 * time.Second)
		}
	}
	for i := range s.Phases {
		if o := s.Phases[i].Open; o != nil {
			o.Connections = cmp.Or(o.Connections, 1)
			o.Inflight = cmp.Or(o.Inflight, 1)
			o.Arrivals = cmp.Or(o.Arrivals, "uniform")
			o.Seed = cmp.Or(o.Seed, 1)
			o.OnSaturation = cmp.Or(o.OnSaturation, "queue")
		}
	}
}

package schema

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testEnv is the environment the tests interpolate from.
func testEnv(name string) (string, bool) {
	v, ok := map[string]string{
		"HOST":  "127.0.0.1:8080",
		"TOKEN": "s3cr3t",
		"CONNS": "5",
		"EMPTY": "",
		"WORD":  "five",
		"DELAY": "2ms",
		// Values out of range.
		"BIGRATE": "20000000",
		"HUGE":    "99999999999999999999",
	}[name]
	return v, ok
}

// problems parses src as s.yaml and returns its problems, one per line;
// none if it is valid.
func problems(t *testing.T, src string) []string {
	t.Helper()
	_, err := Parse("s.yaml", []byte(src), testEnv)
	if err == nil {
		return nil
	}
	var errs *Errors
	if !errors.As(err, &errs) {
		t.Fatalf("Parse returned %T %v, want *Errors", err, err)
	}
	return strings.Split(errs.Error(), "\n")
}

// wantProblems checks that src is invalid with exactly the problems that
// contain want[0], want[1], … in order.
func wantProblems(t *testing.T, src string, want ...string) {
	t.Helper()
	got := problems(t, src)
	if len(got) != len(want) {
		t.Fatalf("got %d problems, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i := range want {
		if !strings.Contains(got[i], want[i]) {
			t.Errorf("problem %d:\n got: %s\nwant: …%s…", i, got[i], want[i])
		}
	}
}

func mustParse(t *testing.T, src string) *Scenario {
	t.Helper()
	s, err := Parse("s.yaml", []byte(src), testEnv)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return s
}

// head is the valid start of a scenario for snippets that only need phases.
const head = `version: 1
target: {serve: http}
driver: {http: {}}
`

func TestLoadQuickstart(t *testing.T) {
	s, err := Load("testdata/quickstart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "quickstart" || s.File != "testdata/quickstart.yaml" || s.Repeats != 2 {
		t.Errorf("name %q file %q repeats %d", s.Name, s.File, s.Repeats)
	}
	if got := s.Target.Args; len(got) != 2 || got[1] != "2ms" {
		t.Errorf("args %q", got)
	}
	if h := s.Driver.HTTP; h.Timeout.D() != 2*time.Second || h.Path != "/hello" {
		t.Errorf("http %+v", h)
	}
	if len(s.Phases) != 3 {
		t.Fatalf("%d phases", len(s.Phases))
	}
	if o := s.Phases[1].Open; o.Rate.From != 500 || o.Rate.Ramp || o.Connections != 8 {
		t.Errorf("steady open %+v", o)
	}
	if c := s.Phases[2].Ramp.Connections; c != (Staircase{From: 0, To: 16, Step: 4, Every: Duration(250 * time.Millisecond)}) {
		t.Errorf("ramp %+v", c)
	}
	if r := s.Assert[2]; r.Expr != "achieved_rate ≈ offered_rate" || r.Phase != "steady" || r.Line != 17 || r.Col != 12 {
		t.Errorf("scoped rule %+v", r)
	}
	if r := s.Assert[0]; r.Line != 15 || r.Col != 5 {
		t.Errorf("rule position %d:%d, want 15:5", r.Line, r.Col)
	}
}

func TestLoadFileErrors(t *testing.T) {
	_, err := Load("testdata/does-not-exist.yaml")
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	big := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(big, make([]byte, maxFileSize+1), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(big); err == nil || !strings.Contains(err.Error(), "file larger than") {
		t.Errorf("big file: %v", err)
	}
}

func TestDefaults(t *testing.T) {
	s, err := Parse("dir/smoke.test.yaml", []byte(head+`phases:
  - {closed: {connections: 2}, duration: 1s}
  - {open: {rate: 600/m}, requests: 10}
`), testEnv)
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "smoke.test" || s.Repeats != 1 {
		t.Errorf("name %q repeats %d", s.Name, s.Repeats)
	}
	h := s.Driver.HTTP
	if h.Method != "GET" || h.Path != "/" || h.Version != "1.1" || h.KeepAlive == nil || !*h.KeepAlive || h.Timeout.D() != 10*time.Second {
		t.Errorf("http defaults %+v", h)
	}
	if s.Phases[0].Name != "phase-1" || s.Phases[1].Name != "phase-2" {
		t.Errorf("phase names %q %q", s.Phases[0].Name, s.Phases[1].Name)
	}
	want := Open{Rate: RateSpec{From: 10, To: 10}, Connections: 1, Inflight: 1, Arrivals: "uniform", Seed: 1, OnSaturation: "queue"}
	if o := *s.Phases[1].Open; o != want {
		t.Errorf("open defaults\n got %+v\nwant %+v", o, want)
	}
}

func TestExplicitValuesKept(t *testing.T) {
	s := mustParse(t, `version: 1
target: {url: "https://example.test:8443"}
driver:
  http:
    method: POST
    version: 1.0
    keep_alive: false
    body_size: 1MiB
    headers: {X-Id: 42, Accept: text/plain}
    tls: {insecure_skip_verify: true}
phases:
  - open: {rate: {from: 0/s, to: 100/s}, arrivals: poisson, seed: 7, on_saturation: drop, inflight: 4}
    duration: 10s
`)
	h := s.Driver.HTTP
	if h.Version != "1.0" || *h.KeepAlive || h.BodySize != 1<<20 || h.Headers["X-Id"] != "42" || !h.TLS.InsecureSkipVerify {
		t.Errorf("http %+v", h)
	}
	o := s.Phases[0].Open
	if !o.Rate.Ramp || o.Rate.From != 0 || o.Rate.To != 100 || o.Seed != 7 || o.OnSaturation != "drop" || o.Inflight != 4 {
		t.Errorf("open %+v", o)
	}
}

func TestAnchorsAndMergeKeys(t *testing.T) {
	s := mustParse(t, head+`phases:
  - &base {name: a, open: {rate: 10/s}, duration: 1s}
  - <<: *base
    name: b
  - <<: [*base]
    name: c
    duration: 2s
`)
	if len(s.Phases) != 3 || s.Phases[1].Open.Rate.From != 10 || s.Phases[2].Duration.D() != 2*time.Second || s.Phases[2].Name != "c" {
		t.Errorf("phases %+v", s.Phases)
	}
	// A problem inside an anchor used many times is reported once, at the anchor.
	wantProblems(t, head+`phases:
  - &base {name: a, open: {rate: 10/s, rat: 1}, duration: 1s}
  - {<<: *base, name: b}
  - *base
`,
		// An alias has no position of its own: the copy's name is at the anchor.
		`s.yaml:5:18: phases[2].name: duplicate phase name "a"; phases[0] has it too`,
		`s.yaml:5:40: phases[0].open.rat: unknown key; did you mean "rate"?`,
	)
}

func TestErrorRendering(t *testing.T) {
	for _, tc := range []struct {
		e    Error
		want string
	}{
		{Error{File: "a.yaml", Line: 3, Col: 7, Path: "phases[0].open", Msg: "m"}, "a.yaml:3:7: phases[0].open: m"},
		{Error{File: "a.yaml", Line: 3, Msg: "invalid YAML: x"}, "a.yaml:3: invalid YAML: x"},
		{Error{File: "a.yaml", Msg: "empty file"}, "a.yaml: empty file"},
		{Error{Line: 1, Col: 2, Path: "p", Msg: "m"}, "1:2: p: m"},
	} {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
}

// TestEveryProblemReported: one load lists every problem of the file, in
// file order, each as an *Error with its position.
func TestEveryProblemReported(t *testing.T) {
	src := `version: 1
target: {serve: http}
driver: {http: {timeout: 0s}}
phases:
  - {closed: {connections: 0}, duration: 1s}
  - {open: {rate: 10/s}}
`
	_, err := Parse("s.yaml", []byte(src), testEnv)
	var errs *Errors
	if !errors.As(err, &errs) {
		t.Fatalf("got %v, want *Errors", err)
	}
	want := []Error{
		{File: "s.yaml", Line: 3, Col: 26, Path: "driver.http.timeout", Msg: "expected a positive duration, found 0s"},
		{File: "s.yaml", Line: 5, Col: 28, Path: "phases[0].closed.connections", Msg: "expected at least 1 connection, found 0"},
		{File: "s.yaml", Line: 6, Col: 5, Path: "phases[1]", Msg: "unbounded phase; expected duration (e.g. duration: 30s) or requests"},
	}
	if len(errs.List) != len(want) {
		t.Fatalf("got %d problems, want %d:\n%v", len(errs.List), len(want), err)
	}
	for i := range want {
		if *errs.List[i] != want[i] {
			t.Errorf("problem %d:\n got %+v\nwant %+v", i, *errs.List[i], want[i])
		}
	}
	var one *Error
	if !errors.As(err, &one) || one.Path != "driver.http.timeout" {
		t.Errorf("errors.As(*Error) = %+v", one)
	}
}

func TestProblems(t *testing.T) {
	for _, tc := range []struct {
		name string
		src  string
		want []string
	}{
		{"empty file", ``, []string{"s.yaml: empty file; expected a scenario with version, target, driver and phases"}},
		{"not a mapping", `[1, 2]`, []string{"s.yaml:1:1: expected a mapping with keys version, name, description, target, driver, phases, repeats, reconcile, assert, outputs, found a list"}},
		{"syntax error", "version: 1\nphases: [\n", []string{"s.yaml:2: invalid YAML: did not find expected node content"}},
		// yaml.v3 gives no line for a problem on the first line.
		{"syntax error on line 1", `"`, []string{"s.yaml:1: invalid YAML: found unexpected end of stream"}},
		{"two documents", head + "phases: [{open: {rate: 1/s}, duration: 1s}]\n---\nversion: 1\n", []string{"s.yaml:5:1: a second YAML document; a scenario file holds exactly one"}},
		{"required keys", "name: x\n", []string{
			"s.yaml:1:1: version: required key missing; write version: 1",
			"s.yaml:1:1: target: required key missing; expected a mapping with keys url, serve, args",
			"s.yaml:1:1: driver: required key missing; expected a mapping with keys http",
			"s.yaml:1:1: phases: required key missing; expected a list of phases",
		}},
		{"version", "version: 2\ntarget: {serve: http}\ndriver: {http: {}}\nphases: [{closed: {connections: 1}, duration: 1s}]\n",
			[]string{"s.yaml:1:10: version: unsupported version 2; expected 1"}},
		{"version type", "version: one\ntarget: {serve: http}\ndriver: {http: {}}\nphases: [{closed: {connections: 1}, duration: 1s}]\n",
			[]string{`s.yaml:1:10: version: expected an integer, found string "one"`}},
		{"no phases", head + "phases: []\n", []string{"s.yaml:4:9: phases: no phases; expected at least one"}},
		{"target both", "version: 1\ntarget: {serve: http, url: http://x}\ndriver: {http: {}}\nphases: [{closed: {connections: 1}, duration: 1s}]\n",
			[]string{"s.yaml:2:9: target: both url and serve; expected exactly one"}},
		{"target neither", "version: 1\ntarget: {args: [-v]}\ndriver: {http: {}}\nphases: [{closed: {connections: 1}, duration: 1s}]\n",
			[]string{"s.yaml:2:9: target: neither url nor serve; expected exactly one"}},
		{"url scheme", "version: 1\ntarget: {url: \"ws://127.0.0.1:9\"}\ndriver: {http: {}}\nphases: [{closed: {connections: 1}, duration: 1s}]\n",
			[]string{`s.yaml:2:15: target.url: unsupported scheme "ws" in "ws://127.0.0.1:9"; expected http or https`}},
		{"url with path", "version: 1\ntarget: {url: \"http://127.0.0.1:9/api\"}\ndriver: {http: {}}\nphases: [{closed: {connections: 1}, duration: 1s}]\n",
			[]string{`s.yaml:2:15: target.url: the url names the server only`}},
		{"serve kind", "version: 1\ntarget: {serve: htp}\ndriver: {http: {}}\nphases: [{closed: {connections: 1}, duration: 1s}]\n",
			[]string{`s.yaml:2:17: target.serve: unknown reference target "htp"; did you mean "http"? (expected one of: http, ws-gateway, frame)`}},
		{"args with url", "version: 1\ntarget: {url: \"http://x:1\", args: [-v]}\ndriver: {http: {}}\nphases: [{closed: {connections: 1}, duration: 1s}]\n",
			[]string{"s.yaml:2:35: target.args: args apply only to a spawned reference target (serve)"}},
		{"pid with serve", "version: 1\ntarget: {serve: http, pid: 7}\ndriver: {http: {}}\nphases: [{closed: {connections: 1}, duration: 1s}]\n",
			[]string{"s.yaml:2:28: target.pid: a spawned target (serve) is measured by its own pid; pid is for a url target"}},
		{"pid zero", "version: 1\ntarget: {url: \"http://x:1\", pid: 0}\ndriver: {http: {}}\nphases: [{closed: {connections: 1}, duration: 1s}]\n",
			[]string{"s.yaml:2:34: target.pid: expected a process id ≥ 1, found 0"}},
		{"no protocol", "version: 1\ntarget: {serve: http}\ndriver: {}\nphases: [{closed: {connections: 1}, duration: 1s}]\n",
			[]string{"s.yaml:3:9: driver: no protocol; expected one of: http"}},
		{"unknown protocol", "version: 1\ntarget: {serve: http}\ndriver: {grpc: {path: /}}\nphases: [{closed: {connections: 1}, duration: 1s}]\n",
			[]string{"s.yaml:3:10: driver.grpc: unknown key; expected one of: http, websocket"}},
		{"websocket fields", "version: 1\ntarget: {url: \"http://127.0.0.1:9\"}\ndriver:\n  websocket: {path: x, message: '', correlate: 'a..b', success: ' ', timeout: 0s, max_message: 0B}\nphases: [{closed: {connections: 1}, duration: 1s}]\n", []string{
			`s.yaml:2:15: target.url: unsupported scheme "http" in "http://127.0.0.1:9"; expected ws or wss`,
			`s.yaml:4:21: driver.websocket.path: expected a path starting with "/"`,
			`s.yaml:4:33: driver.websocket.message: empty message`,
			`s.yaml:4:48: driver.websocket.correlate: expected a dot path of field names such as id or meta.id, found "a..b"`,
			`s.yaml:4:65: driver.websocket.success: empty; leave success out for the default`,
			`s.yaml:4:79: driver.websocket.timeout: expected a positive duration, found 0s`,
			`s.yaml:4:96: driver.websocket.max_message: expected a positive size, found 0B`,
		}},
		{"fetch channels", "version: 1\ntarget: {serve: http}\ndriver: {http: {}}\nphases: [{closed: {connections: 1}, duration: 1s}]\nreconcile: {fetch: {path: /s, message: x, field: ''}, expect: [errors == 0]}\n", []string{
			`s.yaml:5:20: reconcile.fetch: more than one channel (path, message); expected exactly one`,
			`s.yaml:5:40: reconcile.fetch.message: a control message needs the websocket driver`,
			`s.yaml:5:50: reconcile.fetch.field: expected a dot path of field names such as stats, found ""`,
		}},
		{"frame fields", "version: 1\ntarget: {url: \"ws://127.0.0.1:9\"}\ndriver:\n  frame:\n    preset: lkdx\n    layout: {byte_order: middle, fields: [{name: a, size: u24, role: idx}]}\n    payload: x\n    payload_file: y\n    timeout: 0s\nphases: [{closed: {connections: 1}, duration: 1s}]\n", []string{
			`s.yaml:2:15: target.url: unsupported scheme "ws" in "ws://127.0.0.1:9"; expected tcp`,
			`s.yaml:5:5: driver.frame: both preset and layout; expected exactly one`,
			`s.yaml:5:13: driver.frame.preset: unknown preset "lkdx"; did you mean "lkdf"?`,
			`s.yaml:6:26: driver.frame.layout.byte_order: expected big or little, found "middle"`,
			`s.yaml:6:59: driver.frame.layout.fields[0].size: expected u8, u16, u32 or u64, found "u24"`,
			`s.yaml:6:70: driver.frame.layout.fields[0].role: expected id, length, type or status, found "idx"`,
			`s.yaml:8:19: driver.frame.payload_file: both payload and payload_file; expected at most one`,
			`s.yaml:9:14: driver.frame.timeout: expected a positive duration, found 0s`,
		}},
		{"data orders", "version: 1\ntarget: {serve: http}\ndriver:\n  http: {data: u.csv, data_order: rnd, data_seed: 4, cookies: true, headers: {cookie: a=b}}\nphases: [{closed: {connections: 1}, duration: 1s}]\n", []string{
			`s.yaml:4:35: driver.http.data_order: unknown data_order "rnd"; expected one of: rows, connection, random`,
			`s.yaml:4:87: driver.http.headers.cookie: the Cookie header is the cookie jar's when cookies is true; let the target set the cookie, or turn cookies off`,
		}},
		{"random needs a seed", "version: 1\ntarget: {serve: http}\ndriver:\n  http: {data: u.csv, data_order: random}\nphases: [{closed: {connections: 1}, duration: 1s}]\n", []string{
			`s.yaml:4:35: driver.http.data_order: data_order random needs data_seed, a nonzero integer, so that the run can be repeated`,
		}},
		{"seed without random", "version: 1\ntarget: {url: \"ws://127.0.0.1:9\"}\ndriver:\n  websocket: {message: x, data: u.csv, data_order: connection, data_seed: 3}\nphases: [{closed: {connections: 1}, duration: 1s}]\n", []string{
			`s.yaml:4:75: driver.websocket.data_seed: data_seed seeds data_order: random; the order here is connection`,
		}},
		{"seed without order", "version: 1\ntarget: {url: \"ws://127.0.0.1:9\"}\ndriver:\n  websocket: {message: x, data: u.csv, data_seed: 3}\nphases: [{closed: {connections: 1}, duration: 1s}]\n", []string{
			`s.yaml:4:51: driver.websocket.data_seed: data_seed seeds data_order: random, and data_order is not given (default rows)`,
		}},
		// Column numbers: line 5 is "reconcile: {fetch: {memcached_stats: true, field: x}, …":
		// memcached_stats' value is at column 38, field's at 51.
		{"fetch memcached without frame", "version: 1\ntarget: {serve: http}\ndriver: {http: {}}\nphases: [{closed: {connections: 1}, duration: 1s}]\nreconcile: {fetch: {memcached_stats: true, field: x}, expect: [errors == 0]}\n", []string{
			`s.yaml:5:38: reconcile.fetch.memcached_stats: memcached_stats reads memcached at the target's tcp:// address: it needs the frame driver`,
			`s.yaml:5:51: reconcile.fetch.field: field applies to a JSON reply (path or message), not to memcached_stats`,
		}},
		{"fetch memcached false", "version: 1\ntarget: {url: \"tcp://127.0.0.1:9\"}\ndriver: {frame: {preset: lkdf}}\nphases: [{closed: {connections: 1}, duration: 1s}]\nreconcile: {fetch: {memcached_stats: false}, expect: [errors == 0]}\n", []string{
			`s.yaml:5:38: reconcile.fetch.memcached_stats: false reads nothing; leave memcached_stats out, or set it to true`,
		}},
		// Line 4 is "  frame: {payload: x, layout: {…, parts: [{name: k}]}}":
		// payload's value at column 20.
		{"frame parts and payload", "version: 1\ntarget: {url: \"tcp://127.0.0.1:9\"}\ndriver:\n  frame: {payload: x, layout: {fields: [{name: i, size: u32, role: status}], parts: [{name: k}]}}\nphases: [{closed: {connections: 1}, duration: 1s}]\n", []string{
			`s.yaml:4:20: driver.frame.payload: layout.parts make the payload; leave payload out`,
		}},
		{"order without data", "version: 1\ntarget: {url: \"tcp://127.0.0.1:9\"}\ndriver:\n  frame: {preset: lkdf, payload: x, data_order: connection}\nphases: [{closed: {connections: 1}, duration: 1s}]\n", []string{
			`s.yaml:4:49: driver.frame.data_order: data_order applies to the rows of a data file, and there is no data (data: FILE)`,
		}},
		{"fetch none", "version: 1\ntarget: {serve: http}\ndriver: {http: {}}\nphases: [{closed: {connections: 1}, duration: 1s}]\nreconcile: {fetch: {}, expect: [errors == 0]}\n", []string{
			`s.yaml:5:20: reconcile.fetch: no channel; expected one of path (GET, JSON), prometheus (GET, Prometheus text), message (WebSocket control message) or memcached_stats (memcached's stats command)`,
		}},
		// The counters may live at a URL of their own (an exporter's port),
		// over http or https, without user info.
		{"fetch url", "version: 1\ntarget: {serve: http}\ndriver: {http: {}}\nphases: [{closed: {connections: 1}, duration: 1s}]\nreconcile: {fetch: {prometheus: 'ftp://127.0.0.1:8405/metrics'}, expect: [errors == 0]}\n", []string{
			`s.yaml:5:33: reconcile.fetch.prometheus: unsupported scheme "ftp" in "ftp://127.0.0.1:8405/metrics"; the counters are read over http or https`,
		}},
		{"fetch url user", "version: 1\ntarget: {serve: http}\ndriver: {http: {}}\nphases: [{closed: {connections: 1}, duration: 1s}]\nreconcile: {fetch: {path: 'http://u:secret@127.0.0.1:99999/stats'}, expect: [errors == 0]}\n", []string{
			`s.yaml:5:27: reconcile.fetch.path: user info (user:password@) in the url is not supported`,
		}},
		{"fetch url port", "version: 1\ntarget: {serve: http}\ndriver: {http: {}}\nphases: [{closed: {connections: 1}, duration: 1s}]\nreconcile: {fetch: {path: 'http://127.0.0.1:99999/stats'}, expect: [errors == 0]}\n", []string{
			`s.yaml:5:27: reconcile.fetch.path: port out of range in "http://127.0.0.1:99999/stats"; expected a port from 1 to 65535`,
		}},
		{"fetch url host", "version: 1\ntarget: {serve: http}\ndriver: {http: {}}\nphases: [{closed: {connections: 1}, duration: 1s}]\nreconcile: {fetch: {prometheus: 'http:///metrics'}, expect: [errors == 0]}\n", []string{
			`s.yaml:5:33: reconcile.fetch.prometheus: expected a path such as /metrics or a URL such as http://127.0.0.1:8405/metrics, found "http:///metrics"`,
		}},
		{"http fields", "version: 1\ntarget: {serve: http}\ndriver:\n  http: {method: post, path: hello, version: 3, body: x, body_size: 1KiB, success: \"\", tls: {}}\nphases: [{closed: {connections: 1}, duration: 1s}]\n", []string{
			`s.yaml:4:18: driver.http.method: methods are case-sensitive; did you mean "POST"?`,
			`s.yaml:4:30: driver.http.path: expected a path starting with "/", e.g. /hello; found "hello"`,
			`s.yaml:4:46: driver.http.version: expected "1.1", "1.0" or "2", found "3"`,
			`s.yaml:4:69: driver.http.body_size: both body and body_size; expected at most one`,
			`s.yaml:4:84: driver.http.success: empty rule`,
			`s.yaml:4:93: driver.http.tls: tls applies only to https:// targets`,
		}},
		{"http version 1", "version: 1\ntarget: {serve: http}\ndriver: {http: {version: 1}}\nphases: [{closed: {connections: 1}, duration: 1s}]\n",
			[]string{`s.yaml:3:26: driver.http.version: expected "1.1", "1.0" or "2", found "1"`}},
		{"http2 without keep-alive", "version: 1\ntarget: {serve: http}\ndriver: {http: {version: 2, keep_alive: false}}\nphases: [{closed: {connections: 1}, duration: 1s}]\n",
			[]string{`s.yaml:3:41: driver.http.keep_alive: keep_alive: false with version "2"`}},
		{"client cert alone", "version: 1\ntarget: {url: \"https://127.0.0.1:1\"}\ndriver: {http: {tls: {cert_file: c.pem}}}\nphases: [{closed: {connections: 1}, duration: 1s}]\n",
			[]string{`s.yaml:3:34: driver.http.tls.cert_file: cert_file without key_file; a client certificate needs both`}},
		{"client key alone, empty cert", "version: 1\ntarget: {url: \"wss://127.0.0.1:1\"}\ndriver: {websocket: {message: x, tls: {key_file: k.pem, cert_file: \"\"}}}\nphases: [{closed: {connections: 1}, duration: 1s}]\n",
			[]string{`driver.websocket.tls.cert_file: expected a PEM file name, found an empty string`}},
		{"headers", "version: 1\ntarget: {serve: http}\ndriver: {http: {headers: {\"X Bad\": a, accept: b, Accept: c}}}\nphases: [{closed: {connections: 1}, duration: 1s}]\n", []string{
			`s.yaml:3:36: driver.http.headers.X Bad: invalid header name "X Bad"`,
			`s.yaml:3:47: driver.http.headers.accept: header "accept" given twice (also as "Accept")`,
		}},
		{"size unit", "version: 1\ntarget: {serve: http}\ndriver: {http: {body_size: 512}}\nphases: [{closed: {connections: 1}, duration: 1s}]\n",
			[]string{"s.yaml:3:28: driver.http.body_size: expected a size with unit (B|KiB|MiB|GiB), e.g. 512KiB; found 512"}},
		{"no model", head + "phases:\n  - {duration: 1s}\n",
			[]string{"s.yaml:5:5: phases[0]: no load model; expected exactly one of closed, open or ramp"}},
		{"two models", head + "phases:\n  - {closed: {connections: 1}, open: {rate: 1/s}, duration: 1s}\n",
			[]string{"s.yaml:5:5: phases[0]: more than one load model (closed, open); expected exactly one"}},
		{"unbounded", head + "phases:\n  - {closed: {connections: 1}}\n",
			[]string{"s.yaml:5:5: phases[0]: unbounded phase; expected duration (e.g. duration: 30s) or requests"}},
		{"ramp is bounded by its staircase", head + "phases:\n  - {ramp: {connections: {from: 0, to: 4, step: 1, every: 1s}}}\n", nil},
		{"zero and negative", head + "phases:\n  - {closed: {connections: -1, think_time: -1s}, duration: -5s, requests: 0}\n", []string{
			"s.yaml:5:28: phases[0].closed.connections: expected at least 1 connection, found -1",
			"s.yaml:5:44: phases[0].closed.think_time: expected a duration of 0s or more, found -1s",
			"s.yaml:5:60: phases[0].duration: expected a positive duration, found -5s",
			"s.yaml:5:75: phases[0].requests: expected at least 1 request, found 0",
		}},
		{"open fields", head + "phases:\n  - {open: {rate: -5/s, connections: 0, inflight: 0, arrivals: poison, on_saturation: dropped, seed: 0}, duration: 1s}\n", []string{
			"s.yaml:5:19: phases[0].open.rate: expected a rate of 0/s or more (0/s is a pause), found -5/s",
			"s.yaml:5:38: phases[0].open.connections: expected at least 1 connection, found 0",
			"s.yaml:5:51: phases[0].open.inflight: expected at least 1 request in flight per connection, found 0",
			`s.yaml:5:64: phases[0].open.arrivals: unknown arrivals "poison"; did you mean "poisson"? (expected one of: uniform, poisson)`,
			`s.yaml:5:87: phases[0].open.on_saturation: unknown on_saturation "dropped"; did you mean "drop"?`,
			"s.yaml:5:102: phases[0].open.seed: expected a non-zero seed",
		}},
		{"dispatch window", head + "phases:\n  - {open: {rate: 5/s, dispatch_window: 11ms}, duration: 1s}\n  - {open: {rate: 5/s, dispatch_window: -1ms}, duration: 1s}\n  - {open: {rate: 5/s, dispatch_window: 10ms}, duration: 1s}\n  - {open: {rate: 5/s, dispatch_window: 1ns}, duration: 1s}\n  - {open: {rate: 5/s, dispatch_window: 1ms, on_saturation: drop}, duration: 1s}\n  - {open: {rate: 5/s, dispatch_window: 0s, on_saturation: drop}, duration: 1s}\n", []string{
			"s.yaml:5:41: phases[0].open.dispatch_window: expected 0s (each arrival at its own instant) or a duration from 1us to 10ms, found 11ms",
			"s.yaml:6:41: phases[1].open.dispatch_window: expected 0s (each arrival at its own instant) or a duration from 1us to 10ms, found -1ms",
			"s.yaml:8:41: phases[3].open.dispatch_window: expected 0s (each arrival at its own instant) or a duration from 1us to 10ms, found 1ns",
			"s.yaml:9:41: phases[4].open.dispatch_window: a dispatch window sends arrivals early, which frees their slots early and changes which arrivals on_saturation: drop drops",
		}},
		{"rate ramp nowhere", head + "phases:\n  - {open: {rate: {from: 10/s, to: 10/s}}, duration: 1s}\n",
			[]string{"s.yaml:5:19: phases[0].open.rate: a ramp that goes nowhere: from and to are both 10/s; write rate: 10/s for a constant rate"}},
		{"rate ramp needs duration", head + "phases:\n  - {open: {rate: {from: 1/s, to: 10/s}}, requests: 100}\n",
			[]string{"s.yaml:5:19: phases[0].open.rate: a rate ramp needs the phase's duration"}},
		{"rate ramp keys", head + "phases:\n  - {open: {rate: {from: 1/s, too: 10/s}}, duration: 1s}\n", []string{
			`s.yaml:5:19: phases[0].open.rate.to: required key missing; expected a rate with unit (N/s|N/m), e.g. 10/s`,
			`s.yaml:5:31: phases[0].open.rate.too: unknown key; did you mean "to"?`,
		}},
		{"staircase", head + "phases:\n  - {ramp: {connections: {from: 8, to: 4, step: 0, every: 0s}}}\n", []string{
			"s.yaml:5:26: phases[0].ramp.connections: from 8 is not below to 4; a ramp steps connections up",
			"s.yaml:5:49: phases[0].ramp.connections.step: expected a step of at least 1 connection, found 0",
			"s.yaml:5:59: phases[0].ramp.connections.every: expected a positive duration, found 0s",
		}},
		{"staircase too long", head + "phases:\n  - {ramp: {connections: {from: 0, to: 9000000000, step: 1, every: 1h}}}\n",
			[]string{"s.yaml:5:26: phases[0].ramp.connections: the staircase lasts longer than"}},
		{"repeats", head + "phases: [{closed: {connections: 1}, duration: 1s}]\nrepeats: 0\n",
			[]string{"s.yaml:5:10: repeats: expected at least 1 repeat, found 0"}},
		{"phase names", head + "phases:\n  - {name: a, closed: {connections: 1}, duration: 1s}\n  - {name: a, closed: {connections: 1}, duration: 1s}\n  - {name: phase-1, closed: {connections: 1}, duration: 1s}\n  - {name: \"\", closed: {connections: 1}, duration: 1s}\n", []string{
			`s.yaml:6:12: phases[1].name: duplicate phase name "a"; phases[0] has it too`,
			`s.yaml:8:12: phases[3].name: expected a non-empty name`,
		}},
		{"default name collides", head + "phases:\n  - {closed: {connections: 1}, duration: 1s}\n  - {name: phase-1, closed: {connections: 1}, duration: 1s}\n",
			[]string{`s.yaml:6:12: phases[1].name: duplicate phase name "phase-1"; phases[0] has it too`}},
		{"rules", head + "phases:\n  - {name: steady, closed: {connections: 1}, duration: 1s}\nassert:\n  - \"\"\n  - {rule: x > 1, phase: stedy}\n  - {phase: steady}\n  - [a]\n  - 42\n", []string{
			"s.yaml:7:5: assert[0]: empty rule; expected an expression such as p99 < 20ms",
			`s.yaml:8:26: assert[1].phase: unknown phase "stedy"; did you mean "steady"? (expected one of: steady)`,
			"s.yaml:9:5: assert[2].rule: required key missing; expected the rule's expression",
			"s.yaml:10:5: assert[3]: expected a rule: a string such as p99 < 20ms, or {rule: ..., phase: NAME}; found a list",
			"s.yaml:11:5: assert[4]: expected a rule: a string such as p99 < 20ms, or {rule: ..., phase: NAME}; found 42 (quote it to make it a string)",
		}},
		{"assert not a list", head + "phases: [{closed: {connections: 1}, duration: 1s}]\nassert: errors == 0\n",
			[]string{`s.yaml:5:9: assert: expected a list of rules, e.g. [p99 < 20ms, errors == 0], found string "errors == 0"`}},
		{"rule tag", head + "phases: [{closed: {connections: 1}, duration: 1s}]\nassert:\n  - !ok errors == 0\n",
			[]string{`s.yaml:6:5: assert[0]: unsupported YAML tag "!ok"; expected a rule`}},
		{"all warmup", head + "phases: [{warmup: true, closed: {connections: 1}, duration: 1s}]\nassert: [errors == 0]\n",
			[]string{"s.yaml:5:9: assert: every phase is a warmup phase, so these rules would judge nothing"}},
		{"reconcile", head + "phases: [{closed: {connections: 1}, duration: 1s}]\nreconcile: {fetch: {path: stats}, expect: []}\n", []string{
			`s.yaml:5:27: reconcile.fetch.path: expected a path starting with "/", e.g. /hello; found "stats"`,
			`s.yaml:5:43: reconcile.expect: no rules; expected at least one`,
		}},
		{"outputs", head + "phases: [{closed: {connections: 1}, duration: 1s}]\noutputs: {tsv: \"r/{runid}.tsv\", json: \"r/{run_id}-{scenario}.json\"}\n",
			[]string{"s.yaml:5:16: outputs.tsv: unknown placeholder {runid}; expected {run_id} or {scenario}"}},
		{"null values", head + "phases: [{closed: {connections: 1}, duration: 1s}]\nname:\ndescription: ~\n", []string{
			"s.yaml:5:6: name: expected a string, found an empty value",
			"s.yaml:6:14: description: expected a string, found null",
		}},
		{"booleans are true or false", head + "phases: [{warmup: yes, closed: {connections: 1}, duration: 1s}]\n",
			[]string{`s.yaml:4:19: phases[0].warmup: expected a boolean (true or false), found string "yes"`}},
		{"integer forms", head + "phases: [{closed: {connections: 0x10}, duration: 1s}, {closed: {connections: 2.5}, duration: 1s}, {closed: {connections: 99999999999999999999}, duration: 1s}]\n", []string{
			"s.yaml:4:78: phases[1].closed.connections: expected an integer, found 2.5",
			"s.yaml:4:122: phases[2].closed.connections: out of range: 99999999999999999999; expected an integer from -9223372036854775808 to 9223372036854775807",
		}},
		{"key that is not a name", head + "phases: [{closed: {connections: 1}, duration: 1s}]\n? [a]\n: 1\n",
			[]string{"s.yaml:5:3: expected a key name, found a list"}},
		// A port outside 1..65535 parses as a URL; dialling it fails only at run time.
		{"url port too high", "version: 1\ntarget: {url: \"http://127.0.0.1:99999\"}\ndriver: {http: {}}\nphases: [{closed: {connections: 1}, duration: 1s}]\n",
			[]string{`s.yaml:2:15: target.url: port out of range in "http://127.0.0.1:99999"; expected a port from 1 to 65535`}},
		{"url port 0", "version: 1\ntarget: {url: \"http://127.0.0.1:0\"}\ndriver: {http: {}}\nphases: [{closed: {connections: 1}, duration: 1s}]\n",
			[]string{`s.yaml:2:15: target.url: port out of range in "http://127.0.0.1:0"; expected a port from 1 to 65535`}},
		{"url port of IPv6", "version: 1\ntarget: {url: \"https://[::1]:65536\"}\ndriver: {http: {}}\nphases: [{closed: {connections: 1}, duration: 1s}]\n",
			[]string{`s.yaml:2:15: target.url: port out of range in "https://[::1]:65536"`}},
		{"url ports 1 and 65535", "version: 1\ntarget: {url: \"http://127.0.0.1:65535\"}\ndriver: {http: {}}\nphases: [{closed: {connections: 1}, duration: 1s}]\n", nil},
		// The url is not shown: it holds a password.
		{"url with user info", "version: 1\ntarget: {url: \"http://user:pw@127.0.0.1:1\"}\ndriver: {http: {}}\nphases: [{closed: {connections: 1}, duration: 1s}]\n",
			[]string{`s.yaml:2:15: target.url: user info (user:password@) in the url is not supported; send an Authorization header (driver.http.headers)`}},
		// Rates above what one generator can pace; the cap itself is allowed.
		{"rate above the cap", head + "phases:\n  - {open: {rate: 1000000000000000000000000/s}, duration: 1s}\n  - {open: {rate: {from: 1/s, to: 20000000/s}}, duration: 1s}\n  - {closed: {connections: 1, expected_rate: 600000060/m}, duration: 1s}\n", []string{
			`s.yaml:5:19: phases[0].open.rate: rate "1000000000000000000000000/s" is above the maximum of 10000000/s: one generator cannot pace more; split the load across generators`,
			`s.yaml:6:35: phases[1].open.rate.to: rate "20000000/s" is above the maximum of 10000000/s`,
			`s.yaml:7:46: phases[2].closed.expected_rate: rate "600000060/m" is above the maximum of 10000000/s`,
		}},
		{"rate of 400 digits", head + "phases:\n  - {open: {rate: " + strings.Repeat("9", 400) + "/s}, duration: 1s}\n",
			[]string{`s.yaml:5:19: phases[0].open.rate: rate "999`}},
		{"rate at the cap", head + "phases:\n  - {open: {rate: 10000000/s}, duration: 1s}\n  - {closed: {connections: 1, expected_rate: 600000000/m}, duration: 1s}\n", nil},
		{"rate from the environment", head + "phases:\n  - {open: {rate: \"${BIGRATE}/s\"}, duration: 1s}\n",
			[]string{`s.yaml:5:19: phases[0].open.rate: rate "${BIGRATE}/s" (interpolated) is above the maximum of 10000000/s`}},
		// A duration with a unit that overflows says so, not that the unit is missing.
		{"duration overflow", head + "phases:\n  - {open: {rate: 1/s}, duration: 99999999999999999h}\n  - {closed: {connections: 1, think_time: -2562048h}, duration: 2562047h}\n", []string{
			`s.yaml:5:35: phases[0].duration: duration "99999999999999999h" overflows: the longest is 2562047h (about 292 years)`,
			`s.yaml:6:43: phases[1].closed.think_time: duration "-2562048h" overflows: the longest is 2562047h`,
		}},
		{"size overflow", "version: 1\ntarget: {serve: http}\ndriver: {http: {body_size: 9999999999GiB}}\nphases: [{closed: {connections: 1}, duration: 1s}]\n",
			[]string{`s.yaml:3:28: driver.http.body_size: size "9999999999GiB" overflows: the largest is 8589934591GiB`}},
		{"integer overflow", head + "phases: [{closed: {connections: 18446744073709551615}, duration: 1s}, {closed: {connections: \"${HUGE}\"}, duration: 1s}]\n", []string{
			"s.yaml:4:33: phases[0].closed.connections: out of range: 18446744073709551615; expected an integer from",
			`s.yaml:4:94: phases[1].closed.connections: out of range: an integer from "${HUGE}"; expected an integer from`,
		}},
		// The YAML parser rejects these without a position; the key path
		// is that of the value that holds the character, if one does.
		{"invalid UTF-8", head + "phases: [{closed: {connections: 1}, duration: 1s}]\nname: \"caf\xe9\"\n",
			[]string{"s.yaml:5:11: name: invalid UTF-8: byte 0xe9; a scenario file is UTF-8 text"}},
		{"invalid UTF-8 after a BOM and a multi-byte character", "\ufeffname: \"√\xff\"\n",
			[]string{"s.yaml:1:9: name: invalid UTF-8: byte 0xff"}},
		{"invalid UTF-8 in a list in a block literal", head + "phases:\n  - {closed: {connections: 1}, duration: 1s}\nassert:\n  - errors == 0\n  - |\n    p99 < 1s and\n    errors < 1\xc3\n",
			[]string{"s.yaml:10:15: assert[1]: invalid UTF-8: byte 0xc3"}},
		{"invalid UTF-8 in a key", head + "phases: [{closed: {connections: 1}, duration: 1s}]\nrepeats\xa0\xa0: 2\n",
			[]string{"s.yaml:5:8: repeats\ufffd\ufffd: invalid UTF-8: byte 0xa0"}},
		{"invalid UTF-8 in a comment", head + "phases: [{closed: {connections: 1}, duration: 1s}] # d\xe9j\xe0 vu\n",
			[]string{"s.yaml:4:55: invalid UTF-8: byte 0xe9"}},
		{"control character", head + "description: \"a\x01b\"\n",
			[]string{`s.yaml:4:16: description: control character U+0001 is not allowed in YAML; write it as an escape in a double-quoted string, e.g. "\x01"`}},
		{"CRLF line breaks", "version: 1\r\ntarget: {serve: http}\r\nname: \"\x7f\"\r\n",
			[]string{`s.yaml:3:8: name: control character U+007F is not allowed in YAML`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantProblems(t, tc.src, tc.want...)
		})
	}
}

func TestUnknownKeySuggestions(t *testing.T) {
	for _, tc := range []struct {
		name string
		src  string
		want string
	}{
		{"typo here", head + "phases: [{closed: {conections: 1}, duration: 1s}]\n",
			`phases[0].closed.conections: unknown key; did you mean "connections"?`},
		{"case", head + "Phases: [{closed: {connections: 1}, duration: 1s}]\n",
			`Phases: unknown key; did you mean "phases"?`},
		{"misplaced", head + "phases: [{closed: {connections: 1}, duration: 1s}]\ntimeout: 1s\n",
			`timeout: unknown key; "timeout" belongs under driver.http`},
		{"misplaced in many places", head + "phases: [{connections: 1, duration: 1s}]\n",
			`phases[0].connections: unknown key; "connections" belongs under phases[].closed, phases[].open or phases[].ramp`},
		{"rate in the phase", head + "phases: [{rate: 10/s, duration: 1s}]\n",
			`phases[0].rate: unknown key; "rate" belongs under phases[].open`},
		{"another tool's name", head + "phases: [{vus: 10, duration: 1s}]\n",
			`phases[0].vus: unknown key; did you mean "closed"? (write closed: {connections: 10})`},
		{"another tool's name, right level", head + "phases: [{open: {rps: 10/s}, duration: 1s}]\n",
			`phases[0].open.rps: unknown key; did you mean "rate"?`},
		{"another tool's name, wrong level", head + "phases: [{closed: {connections: 1}, duration: 1s}]\nthresholds: [p99 < 1s]\n",
			`thresholds: unknown key; did you mean "assert"?`},
		{"slip of a key elsewhere", head + "phases: [{closed: {connections: 1}, duration: 1s}]\ninflght: 3\n",
			`inflght: unknown key; did you mean "inflight"? it belongs under phases[].open`},
		{"nothing close", head + "phases: [{closed: {connections: 1}, duration: 1s}]\nzzz: 3\n",
			`zzz: unknown key; expected one of: version, name, description, target, driver, phases, repeats, reconcile, assert, outputs`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := problems(t, tc.src)
			for _, g := range got {
				if strings.Contains(g, tc.want) {
					return
				}
			}
			t.Errorf("no problem contains %q; got:\n%s", tc.want, strings.Join(got, "\n"))
		})
	}
}

func TestInterpolation(t *testing.T) {
	s := mustParse(t, `version: 1
name: "cost $$5 ${EMPTY:-d}"
target: {url: "http://${HOST}"}
driver:
  http:
    headers: {Authorization: "Bearer ${TOKEN}", X-Missing: "${NOPE:-none}"}
    timeout: ${DELAY}
phases:
  - {closed: {connections: "${CONNS}"}, duration: "${SECS:-3}s"}
`)
	if s.Name != "cost $5 d" {
		t.Errorf("name %q", s.Name)
	}
	if s.Target.URL != "http://127.0.0.1:8080" || s.Driver.HTTP.Headers["Authorization"] != "Bearer s3cr3t" || s.Driver.HTTP.Headers["X-Missing"] != "none" {
		t.Errorf("target %q headers %q", s.Target.URL, s.Driver.HTTP.Headers)
	}
	if s.Phases[0].Closed.Connections != 5 || s.Phases[0].Duration.D() != 3*time.Second || s.Driver.HTTP.Timeout.D() != 2*time.Millisecond {
		t.Errorf("connections %d duration %s timeout %s", s.Phases[0].Closed.Connections, s.Phases[0].Duration, s.Driver.HTTP.Timeout)
	}
	// Values read into strings are secrets; numbers, units, defaults and
	// the target URL (which cannot hold credentials) are not.
	if got := strings.Join(s.Secrets, ","); got != "s3cr3t" {
		t.Errorf("secrets %q", got)
	}

	wantProblems(t, `version: 1
target: {url: "http://${NOPE}"}
driver: {http: {headers: {A: "${bad name}", B: "${TOKEN"}}}
phases: [{closed: {connections: "${WORD}"}, duration: 1s}]
`,
		`s.yaml:2:15: target.url: environment variable NOPE is not set (write ${NOPE:-default} to give a default)`,
		`s.yaml:3:30: driver.http.headers.A: invalid variable name "bad name"`,
		`s.yaml:3:48: driver.http.headers.B: unterminated "${TOKEN"`,
		// The value may be a secret: the message shows what was written.
		`s.yaml:4:33: phases[0].closed.connections: expected an integer, found a string from "${WORD}"`,
	)
}

func TestExpand(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain", "plain"},
		{"$", "$"},
		{"a$b", "a$b"},
		{"$$", "$"},
		{"$${TOKEN}", "${TOKEN}"},
		{"$$$${TOKEN}", "$${TOKEN}"},
		{"${TOKEN}${TOKEN}", "s3cr3ts3cr3t"},
		{"${EMPTY}", ""},
		{"${EMPTY:-d}", "d"},
		{"${NOPE:-a:-b}", "a:-b"},
		{"${NOPE:-}", ""},
	} {
		got, _, err := expand(tc.in, testEnv)
		if err != nil || got != tc.want {
			t.Errorf("expand(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

// A rule that reads the target's counters (server.X) in a scenario
// without reconcile.fetch could only ever be INCONCLUSIVE: it is a
// problem at the rule, found through Options.RuleReads.
func TestRulesReadingServerNeedFetch(t *testing.T) {
	// reads stands in for the engine's rules: every word of the rule.
	reads := func(expr string) []string { return strings.Fields(expr) }
	check := func(expr string) error {
		if strings.Contains(expr, "bad") {
			return errors.New("column 1: unknown metric")
		}
		return nil
	}
	const phases = head + "phases: [{name: p, closed: {connections: 1}, duration: 1s}]\n"
	for _, tc := range []struct {
		name, src string
		want      []string
	}{
		{"assert without reconcile", phases + "assert:\n  - errors == 0\n  - server.requests == requests\n  - {rule: median(server.ok) > 0, phase: p}\n  - server[k] > 0\n", []string{
			"s.yaml:7:5: assert[1]: server.requests needs reconcile.fetch to read the target's counters, e.g. reconcile: {fetch: {path: /stats}, expect: [...]}",
			"s.yaml:8:12: assert[2].rule: server.ok needs reconcile.fetch",
			"s.yaml:9:5: assert[3]: server[k] needs reconcile.fetch",
		}},
		{"fetches without a fetch", phases + "assert: [fetches < 1]\n",
			[]string{"s.yaml:5:10: assert[0]: fetches needs reconcile.fetch"}},
		{"the reads of a computed name", phases + "assert: [server == 1]\n",
			[]string{"s.yaml:5:10: assert[0]: server.<counter> needs reconcile.fetch"}},
		{"with reconcile.fetch", phases + "reconcile: {fetch: {path: /stats}, expect: [server.requests == requests]}\nassert: [server.ok > 0, worst(server.ok) > 0]\n", nil},
		// Reported once, as the missing key.
		{"reconcile without fetch", phases + "reconcile: {expect: [server.requests == requests]}\n",
			[]string{"s.yaml:5:12: reconcile.fetch: required key missing"}},
		{"a rule that does not compile is not judged again", phases + "assert: [bad server.x]\n",
			[]string{"s.yaml:5:10: assert[0]: column 1: unknown metric"}},
		{"baseline is not the target's counters", phases + "assert: [baseline.server.x > 0]\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseWith("s.yaml", []byte(tc.src), Options{Env: testEnv, CheckRule: check, RuleReads: reads})
			var got []string
			if err != nil {
				got = strings.Split(err.Error(), "\n")
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %d problems, want %d:\n%s", len(got), len(tc.want), strings.Join(got, "\n"))
			}
			for i := range tc.want {
				if !strings.Contains(got[i], tc.want[i]) {
					t.Errorf("problem %d:\n got: %s\nwant: …%s…", i, got[i], tc.want[i])
				}
			}
		})
	}
}

// Pos locates a key path of a loaded scenario, or its nearest ancestor
// written in the file, so that checks made after loading (a driver's, a
// reference target's arguments) report positions too.
func TestPos(t *testing.T) {
	s := mustParse(t, `version: 1
target:
  serve: http
  args: [--delay, 5ms]
driver:
  http:
    headers: {X-Id: "{{seq}}"}
phases:
  - {open: {rate: {from: 1/s, to: 5/s}}, duration: 1s}
`)
	for _, tc := range []struct {
		path      string
		line, col int
	}{
		{"target.args", 4, 9},
		{"target.args[1]", 4, 19},
		{"driver.http.headers.X-Id", 7, 21},
		{"phases[0].open.rate.to", 9, 35},
		{"phases[0].duration", 9, 52},
		// Not written: the nearest ancestor that is.
		{"driver.http.tls.ca_file", 7, 5},
		{"phases[0].open.inflight", 9, 12},
		{"phases[3]", 9, 3},
		{"outputs.tsv", 1, 1},
	} {
		if line, col := s.Pos(tc.path); line != tc.line || col != tc.col {
			t.Errorf("Pos(%q) = %d:%d, want %d:%d", tc.path, line, col, tc.line, tc.col)
		}
	}
	var none *Scenario
	for _, s := range []*Scenario{none, {}} {
		if line, col := s.Pos("target"); line != 0 || col != 0 {
			t.Errorf("Pos of a scenario not loaded from a file = %d:%d, want 0:0", line, col)
		}
	}
}

// yaml.v3 reports an unclosed flow collection one line early (0-based);
// the message must name the line where it was opened.
func TestSyntaxErrorLineOfUnclosedFlow(t *testing.T) {
	_, err := Parse("s.yaml", []byte("version: 1\nname: x\nphases:\n  - {closed: {connections: 1}, duration: 1s\ntarget: {url: \"http://127.0.0.1:1\"}\n"), nil)
	if err == nil || !strings.Contains(err.Error(), "s.yaml:4: invalid YAML: did not find expected ',' or '}'") {
		t.Fatalf("got %v, want the error at line 4", err)
	}
}

// TestIssue12_RuleCountBounded: a scenario with more rules than MaxRules
// is refused at the first one beyond, before any is compiled (2,644
// rules of 128 operators took validate 17 s and 580 MB).
func TestIssue12_RuleCountBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("version: 1\nname: r\ntarget: {url: \"http://127.0.0.1:1\"}\ndriver:\n  http: {path: /, timeout: 1s}\nphases:\n  - {name: p, closed: {connections: 1}, duration: 1s}\nassert:\n")
	for range MaxRules + 1 {
		b.WriteString("  - p99 < 1s\n")
	}
	_, err := Parse("s.yaml", []byte(b.String()), nil)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("s.yaml:%d:5: assert[%d]: %d rules: at most %d", 9+MaxRules, MaxRules, MaxRules+1, MaxRules)) {
		t.Errorf("%d rules: %v", MaxRules+1, err)
	}
}

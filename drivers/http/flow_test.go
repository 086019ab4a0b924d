package http

import (
	"context"
	"errors"
	"fmt"
	"io"
	nethttp "net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/drivers"
	"github.com/runner-dev/runner/schema"
)

// shopServer answers /login with a token (JSON), a header and a cookie,
// /items only with that token and cookie, and records what it was sent.
func shopServer(t *testing.T, seen *[]string) *httptest.Server {
	s := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		body, _ := io.ReadAll(r.Body)
		ck, _ := r.Cookie("session")
		*seen = append(*seen, fmt.Sprintf("%s %s auth=%q accept=%q cookie=%v body=%s", r.Method, r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("Accept"), ck != nil, body))
		switch r.URL.Path {
		case "/login":
			w.Header().Set("X-Request-Id", "rid-7")
			nethttp.SetCookie(w, &nethttp.Cookie{Name: "session", Value: "s1", Path: "/"})
			fmt.Fprint(w, `{"token": "tok-1", "items_url": "/items?page=2"}`)
		case "/items":
			if r.Header.Get("Authorization") != "Bearer tok-1" || ck == nil {
				w.WriteHeader(nethttp.StatusUnauthorized)
				return
			}
			fmt.Fprint(w, `{"items": [{"id": 41}]}`)
		default:
			w.WriteHeader(nethttp.StatusNotFound)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func shopConfig() schema.HTTP {
	return schema.HTTP{
		Headers: map[string]string{"Accept": "application/json", "Authorization": "none"},
		Flows: []schema.Flow{{Name: "shop", Weight: 1, Steps: []schema.FlowStep{
			{Name: "login", Method: "POST", Path: "/login", Body: `{"u": "u{{seq}}"}`,
				Capture: map[string]schema.Capture{"token": {JSON: "token"}, "rid": {Header: "X-Request-Id"}, "next": {Regex: `"items_url": "([^"]+)"`}}},
			{Name: "items", Path: "/items", Headers: map[string]string{"authorization": "Bearer {{token}}"}, ThinkTime: schema.Duration(time.Millisecond),
				Capture: map[string]schema.Capture{"item": {JSON: "items.0.id"}}},
			{Name: "item", Path: "/items/{{item}}?rid={{rid}}"},
		}}},
	}
}

// TestFlowDriver_StepsCapturesAndCookies: the driver runs a flow's steps
// as the engine calls them: each with its own method, path and body, the
// driver's headers under the step's (case-insensitive), the values earlier
// steps captured (JSON, header, regex) rendered in later ones, and the
// session cookie kept by default with flows. A capture that finds nothing
// fails its step as class capture, coded capture:NAME.
func TestFlowDriver_StepsCapturesAndCookies(t *testing.T) {
	var seen []string
	s := shopServer(t, &seen)
	d := newDriver(t, shopConfig(), s.URL)
	fl := d.Flows()
	if len(fl) != 1 || len(fl[0].Steps) != 3 || fl[0].Steps[1].Think != time.Millisecond || fl[0].Steps[1].Name != "items" {
		t.Fatalf("Flows() = %+v", fl)
	}
	c := dial(t, d)
	vars := drivers.Vars{}
	for step, want := range []drivers.Class{drivers.OK, drivers.OK, drivers.Status} {
		out := c.Do(context.Background(), drivers.Request{Seq: 5, Step: step, Vars: vars})
		if out.Class != want {
			t.Fatalf("step %d: %s %s %v, want %s", step, out.Class, out.Code, out.Err, want)
		}
	}
	if vars["token"] != "tok-1" || vars["rid"] != "rid-7" || vars["next"] != "/items?page=2" || vars["item"] != "41" {
		t.Errorf("captured %v", vars)
	}
	want := []string{
		`POST /login auth="none" accept="application/json" cookie=false body={"u": "u5"}`,
		`GET /items auth="Bearer tok-1" accept="application/json" cookie=true body=`,
		`GET /items/41 auth="none" accept="application/json" cookie=true body=`,
	}
	if strings.Join(seen, "\n") != strings.Join(want, "\n") {
		t.Errorf("the target was sent:\n%s\nwant:\n%s", strings.Join(seen, "\n"), strings.Join(want, "\n"))
	}

	// A capture that finds nothing: the step fails, class capture.
	cfg := shopConfig()
	cfg.Flows[0].Steps[0].Capture = map[string]schema.Capture{"token": {JSON: "no.such.path"}}
	cfg.Flows[0].Steps[1].Headers = nil
	cfg.Flows[0].Steps[2].Path = "/items"
	c2 := dial(t, newDriver(t, cfg, s.URL))
	out := c2.Do(context.Background(), drivers.Request{Seq: 1, Vars: drivers.Vars{}})
	if out.Class != drivers.Capture || out.Code != "capture:token" || !out.Responded {
		t.Errorf("a capture that finds nothing: %s %s %v, want class capture, code capture:token", out.Class, out.Code, out.Err)
	}
}

// TestFlowDriver_Refuses: a step's template that reads a value no earlier
// step captures, or a bad capture, is refused at New, naming the step.
func TestFlowDriver_Refuses(t *testing.T) {
	cfg := shopConfig()
	cfg.Flows[0].Steps[0].Path = "/login/{{item}}"
	if _, err := New(cfg, "http://127.0.0.1:1", ""); fmt.Sprint(configKeys(err)) != "[flows[0].steps[0].path]" {
		t.Errorf("a value read before it is captured: keys %v of %v, want the step's path alone", configKeys(err), err)
	}
	cfg = shopConfig()
	cfg.Flows[0].Steps[0].Capture["next"] = schema.Capture{Regex: "("}
	if _, err := New(cfg, "http://127.0.0.1:1", ""); fmt.Sprint(configKeys(err)) != "[flows[0].steps[0].capture.next]" {
		t.Errorf("a bad regex: keys %v of %v, want the capture's alone (later steps still know its name)", configKeys(err), err)
	}
	if d := newDriver(t, schema.HTTP{Path: "/"}, "http://127.0.0.1:1"); d.Flows() != nil {
		t.Errorf("a driver of one request has flows %v", d.Flows())
	}
}

// configKeys lists the keys of the configuration errors err joins.
func configKeys(err error) []string {
	var keys []string
	for _, e := range unjoin(err) {
		var ce *drivers.ConfigError
		if errors.As(e, &ce) {
			keys = append(keys, ce.Key)
		}
	}
	return keys
}

// TestFlowDriver_CapturedValueCannotSmuggle, from the breaker: a token of
// "t\r\nContent-Length: 0\r\n\r\nGET /smuggled …" went into the next
// step's header as it was, and the target received requests runner
// never counted, while the run passed. A captured value with a control
// character, or longer than MaxCaptured, fails its capture instead.
func TestFlowDriver_CapturedValueCannotSmuggle(t *testing.T) {
	for name, token := range map[string]string{
		"CRLF": `t\r\nContent-Length: 0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: evil`,
		"NUL":  `t\u0000x`,
		"huge": strings.Repeat("x", MaxCaptured+1),
	} {
		s := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
			fmt.Fprintf(w, `{"token": "%s"}`, token)
		}))
		cfg := schema.HTTP{Flows: []schema.Flow{{Name: "f", Weight: 1, Steps: []schema.FlowStep{
			{Name: "a", Path: "/a", Capture: map[string]schema.Capture{"token": {JSON: "token"}}},
			{Name: "b", Path: "/b", Headers: map[string]string{"X-Tok": "{{token}}"}},
		}}}}
		c := dial(t, newDriver(t, cfg, s.URL))
		vars := drivers.Vars{}
		out := c.Do(context.Background(), drivers.Request{Seq: 1, Vars: vars})
		if out.Class != drivers.Capture || out.Code != "capture:token" || vars["token"] != "" {
			t.Errorf("%s: %s %s %v (vars %q), want the capture to fail", name, out.Class, out.Code, out.Err, vars["token"])
		}
		s.Close()
	}
}

// TestFlowDriver_CapturedValueInAPath, from the second breaker: the
// control-character check let a space, '#' and raw non-ASCII through into
// a later step's path, so the target chose the request line ("GET /next/1
// HTTP/1.1 HTTP/1.1", a fragment, raw UTF-8) and the run passed. A value
// that goes into a path is checked as a path is (the same bytes a data
// file's value is refused for); one that goes only into a header may hold
// them, and a tab (legal in a header value) is no control character to
// refuse.
func TestFlowDriver_CapturedValueInAPath(t *testing.T) {
	for _, c := range []struct {
		name, value string
		inPath      bool
		want        drivers.Class
	}{
		{"space in a path", "1 HTTP/1.1", true, drivers.Capture},
		{"fragment in a path", "1?admin=1#x", true, drivers.Capture},
		{"NEL in a path", "a\u0085b", true, drivers.Capture},
		{"tab in a path", `a\tb`, true, drivers.Capture},
		{"query in a path", "1?page=2", true, drivers.OK},
		{"space in a header", "1 HTTP/1.1", false, drivers.OK},
		{"NEL in a header", "a\u0085b", false, drivers.OK},
		{"tab in a header", `a\tb`, false, drivers.OK},
	} {
		s := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
			fmt.Fprintf(w, `{"v": "%s"}`, c.value)
		}))
		next := schema.FlowStep{Name: "b", Path: "/b", Headers: map[string]string{"X-V": "{{v}}"}}
		if c.inPath {
			next = schema.FlowStep{Name: "b", Path: "/next/{{v}}"}
		}
		cfg := schema.HTTP{Flows: []schema.Flow{{Name: "f", Weight: 1, Steps: []schema.FlowStep{
			{Name: "a", Path: "/a", Capture: map[string]schema.Capture{"v": {JSON: "v"}}}, next,
		}}}}
		conn := dial(t, newDriver(t, cfg, s.URL))
		out := conn.Do(context.Background(), drivers.Request{Seq: 1, Vars: drivers.Vars{}})
		if out.Class != c.want {
			t.Errorf("%s: %s %s %v, want %s", c.name, out.Class, out.Code, out.Err, c.want)
		} else if c.want == drivers.Capture && (out.Code != "capture:v" || !strings.Contains(fmt.Sprint(out.Err), "not allowed in a path")) {
			t.Errorf("%s: %s %v, want code capture:v saying the byte is not allowed in a path", c.name, out.Code, out.Err)
		}
		conn.Close()
		s.Close()
	}
}

// TestFlowDriver_CaptureCodeOwnNamespace, from the flow review: a capture
// failure was coded with the capture's bare name, so a capture named
// timeout (or ECONNRESET) was counted in errors_by together with real
// timeouts. Its code is capture:NAME.
func TestFlowDriver_CaptureCodeOwnNamespace(t *testing.T) {
	s := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		fmt.Fprint(w, `{}`)
	}))
	defer s.Close()
	for _, name := range []string{"timeout", "ECONNRESET", "status", "capture"} {
		cfg := schema.HTTP{Flows: []schema.Flow{{Name: "f", Weight: 1, Steps: []schema.FlowStep{
			{Name: "a", Path: "/a", Capture: map[string]schema.Capture{name: {JSON: "missing"}}},
		}}}}
		c := dial(t, newDriver(t, cfg, s.URL))
		out := c.Do(context.Background(), drivers.Request{Seq: 1, Vars: drivers.Vars{}})
		if out.Class != drivers.Capture || out.Code != "capture:"+name {
			t.Errorf("capture %s finding nothing: %s %q %v, want class capture, code %q", name, out.Class, out.Code, out.Err, "capture:"+name)
		}
		c.Close()
	}
}

// TestFlowDriver_CaptureOfCutBody, from the flow review: a body longer
// than the MaxRuleBody bytes the client keeps made a json or regex
// capture say it "found nothing", although it was never evaluated on the
// whole body. It says the body was cut, and where; a header capture of
// the same response still works, and a body of exactly MaxRuleBody bytes
// is not cut.
func TestFlowDriver_CaptureOfCutBody(t *testing.T) {
	big := `{"pad": "` + strings.Repeat("x", MaxRuleBody) + `", "token": "t1"}`
	exact := `{"token": "t1", "pad": "` + strings.Repeat("x", MaxRuleBody-len(`{"token": "t1", "pad": ""}`)) + `"}`
	s := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		w.Header().Set("X-Token", "h1")
		body := big
		if r.URL.Path == "/exact" {
			body = exact
		}
		if r.URL.Path == "/chunked" {
			w.(nethttp.Flusher).Flush() // no Content-Length: chunked
		}
		fmt.Fprint(w, body)
	}))
	defer s.Close()
	for _, c := range []struct {
		path string
		cp   schema.Capture
		want drivers.Class
	}{
		{"/big", schema.Capture{JSON: "token"}, drivers.Capture},
		{"/chunked", schema.Capture{JSON: "token"}, drivers.Capture},
		{"/big", schema.Capture{Regex: `"pad": "(x)`}, drivers.Capture}, // found in the kept part, still not evaluated
		{"/big", schema.Capture{Header: "X-Token"}, drivers.OK},
		{"/exact", schema.Capture{JSON: "token"}, drivers.OK},
	} {
		cfg := schema.HTTP{Flows: []schema.Flow{{Name: "f", Weight: 1, Steps: []schema.FlowStep{
			{Name: "a", Path: c.path, Capture: map[string]schema.Capture{"token": c.cp}},
		}}}}
		conn := dial(t, newDriver(t, cfg, s.URL))
		out := conn.Do(context.Background(), drivers.Request{Seq: 1, Vars: drivers.Vars{}})
		if out.Class != c.want {
			t.Errorf("%s %+v: %s %s %v, want %s", c.path, c.cp, out.Class, out.Code, out.Err, c.want)
		} else if c.want == drivers.Capture {
			msg := fmt.Sprint(out.Err)
			if out.Code != "capture:token" || strings.Contains(msg, "found nothing") || !strings.Contains(msg, fmt.Sprintf("body of %d bytes was cut at %d bytes", len(big), MaxRuleBody)) {
				t.Errorf("%s %+v: %s %v, want code capture:token saying the body of %d bytes was cut at %d", c.path, c.cp, out.Code, out.Err, len(big), MaxRuleBody)
			}
		}
		conn.Close()
	}
}

// itemsBody lists items by owner, as objects in an array and as the keys
// of an object; the owners hold the characters a JSON path and a regex
// give a meaning to, and "axb" comes first to catch a "." taken as any
// character.
const itemsBody = `{"items": [{"owner": "axb", "id": 1}, {"owner": "a.b", "id": 2}, {"owner": "o\"neil", "id": 3}, {"owner": "a+b", "id": 4}, {"owner": "back\\slash", "id": 5}],
 "ids": {"axb": 11, "a.b": 12, "o\"neil": 13, "a+b": 14, "back\\slash": 15}}`

// TestIssue16_CaptureTemplates, from the flow review: data values could
// not be used in capture expressions (a JSON path such as
// items.#(owner=="{{data.user}}").id went to gjson as written and found
// nothing). A json path or regex is a template of {{seq}}, {{data.NAME}}
// and earlier steps' captures, each value escaped so that it stands for
// itself: inside a query's "…" (JSON string escapes), as a key (gjson
// path escapes), in a regex (regexp.QuoteMeta).
func TestIssue16_CaptureTemplates(t *testing.T) {
	s := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		if r.URL.Path == "/me" {
			fmt.Fprint(w, `{"who": "a+b"}`)
			return
		}
		fmt.Fprint(w, itemsBody)
	}))
	defer s.Close()
	dir := t.TempDir()
	users := filepath.Join(dir, "users.csv")
	if err := os.WriteFile(users, []byte("user,plain\na.b,a.b\n\"o\"\"neil\",a+b\na+b,a.b\nback\\slash,a+b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := schema.HTTP{Data: users, Flows: []schema.Flow{{Name: "f", Weight: 1, Steps: []schema.FlowStep{
		{Name: "me", Path: "/me", Capture: map[string]schema.Capture{"who": {JSON: "who"}}},
		{Name: "items", Path: "/items", Capture: map[string]schema.Capture{
			"query":   {JSON: `items.#(owner=="{{data.user}}").id`},
			"key":     {JSON: `ids.{{ data.user }}`},
			"re":      {Regex: `"owner": "{{data.plain}}", "id": (\d+)`},
			"earlier": {Regex: `"{{who}}", "id": (\d+)`},
			"quoted":  {JSON: `items.#(owner=="{{who}}").id`},
			"seq":     {JSON: `items.{{seq}}.owner`},
		}},
	}}}}
	c := dial(t, newDriver(t, cfg, s.URL))
	for seq, want := range map[uint64]string{
		1: "query=2 key=12 re=2 earlier=4 quoted=4 seq=a.b",
		2: "query=3 key=13 re=4 earlier=4 quoted=4 seq=o\"neil",
		3: "query=4 key=14 re=2 earlier=4 quoted=4 seq=a+b",
		4: "query=5 key=15 re=4 earlier=4 quoted=4 seq=back\\slash",
	} {
		vars := drivers.Vars{}
		for step := range 2 {
			if out := c.Do(context.Background(), drivers.Request{Seq: seq, Step: step, Vars: vars}); out.Class != drivers.OK {
				t.Fatalf("iteration %d step %d: %s %s %v", seq, step, out.Class, out.Code, out.Err)
			}
		}
		got := fmt.Sprintf("query=%s key=%s re=%s earlier=%s quoted=%s seq=%s", vars["query"], vars["key"], vars["re"], vars["earlier"], vars["quoted"], vars["seq"])
		if got != want {
			t.Errorf("iteration %d captured %s, want %s", seq, got, want)
		}
	}

	// What the iteration's values make of an expression is in the
	// failure's message.
	cfg.Flows[0].Steps[1].Capture = map[string]schema.Capture{"none": {JSON: `items.#(owner=="{{data.user}}x").id`}}
	c = dial(t, newDriver(t, cfg, s.URL))
	vars := drivers.Vars{}
	c.Do(context.Background(), drivers.Request{Seq: 2, Vars: vars})
	out := c.Do(context.Background(), drivers.Request{Seq: 2, Step: 1, Vars: vars})
	if want := `capture none (json items.#(owner=="o\"neilx").id) found nothing`; out.Code != "capture:none" || !strings.Contains(fmt.Sprint(out.Err), want) {
		t.Errorf("%s %s %v, want it to say %s", out.Class, out.Code, out.Err, want)
	}
}

// TestFlowDriver_CaptureTemplateRefused: a capture expression's template
// is checked at New as a step's path is: a name no earlier step
// captures (a capture of the same step included), a column the data
// file lacks, and a regex that does not compile with its holes are
// refused at the capture's json or regex key.
func TestFlowDriver_CaptureTemplateRefused(t *testing.T) {
	for _, c := range []struct {
		capture map[string]schema.Capture
		key     string
		want    string
	}{
		{map[string]schema.Capture{"item": {JSON: "items.#(token==\"{{nope}}\").id"}}, "flows[0].steps[1].capture.item.json", `unknown template action "{{nope}}"`},
		{map[string]schema.Capture{"a": {JSON: "x"}, "b": {JSON: "items.{{a}}"}}, "flows[0].steps[1].capture.b.json", `unknown template action "{{a}}"`},
		{map[string]schema.Capture{"item": {Regex: "{{data.user}}"}}, "flows[0].steps[1].capture.item.regex", "no data file"},
		{map[string]schema.Capture{"item": {Regex: "({{token}}"}}, "flows[0].steps[1].capture.item.regex", "with each {{…}} as x: regex \"(x\": not an RE2 expression"},
	} {
		cfg := shopConfig()
		cfg.Flows[0].Steps[1].Capture = c.capture
		cfg.Flows[0].Steps[2].Path = "/items"
		_, err := New(cfg, "http://127.0.0.1:1", "")
		if fmt.Sprint(configKeys(err)) != "["+c.key+"]" || !strings.Contains(fmt.Sprint(err), c.want) {
			t.Errorf("%v: keys %v of %v, want [%s] saying %s", c.capture, configKeys(err), err, c.key, c.want)
		}
	}
}

package http

import (
	"context"
	"errors"
	"fmt"
	"io"
	nethttp "net/http"
	"net/http/httptest"
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
// fails its step as class capture, coded with its name.
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
	if out.Class != drivers.Capture || out.Code != "token" || !out.Responded {
		t.Errorf("a capture that finds nothing: %s %s %v, want class capture, code token", out.Class, out.Code, out.Err)
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
		if out.Class != drivers.Capture || out.Code != "token" || vars["token"] != "" {
			t.Errorf("%s: %s %s %v (vars %q), want the capture to fail", name, out.Class, out.Code, out.Err, vars["token"])
		}
		s.Close()
	}
}

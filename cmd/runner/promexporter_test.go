package main

import (
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// serveLoopback serves h on a free loopback port until the test ends and
// returns its base URL.
func serveLoopback(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// stubExporter is a target and its Prometheus exporter, as HAProxy's is:
// the target counts its requests; the exporter exposes the count with
// its labels out of name order ({path="/x",code="200"}), and a byte
// counter and a gauge that move with every scrape, as an exporter's do.
// With sameHost the exposition is /metrics on the target's own port and
// counted as one of its requests (a server that counts its scrapes);
// else it is on a port of its own. It returns the target's base URL and
// the exporter's metrics URL.
func stubExporter(t *testing.T, sameHost bool) (target, metrics string) {
	t.Helper()
	var requests, scrapes, bytesOut atomic.Int64
	expose := func(w http.ResponseWriter, r *http.Request) {
		n := scrapes.Add(1)
		body := fmt.Sprintf("# TYPE app_requests_total counter\napp_requests_total{path=\"/x\",code=\"200\"} %d\n"+
			"# TYPE app_bytes_out_total counter\napp_bytes_out_total %d\n"+
			"# TYPE app_scrape_seconds gauge\napp_scrape_seconds %d\n", requests.Load(), bytesOut.Load(), n)
		bytesOut.Add(int64(len(body)))
		fmt.Fprint(w, body)
	}
	app := http.NewServeMux()
	app.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1) // counted on arrival, as HAProxy counts
		if r.URL.Path == "/metrics" && sameHost {
			expose(w, r)
		}
	})
	target = serveLoopback(t, app)
	if sameHost {
		return target, target + "/metrics"
	}
	return target, serveLoopback(t, http.HandlerFunc(expose)) + "/metrics"
}

// promScenario is a scenario of two phases of 100 requests, repeated
// twice, that reads the counters at fetch and judges expect.
func promScenario(t *testing.T, target, fetch string, expect ...string) string {
	t.Helper()
	var rules strings.Builder
	for _, e := range expect {
		fmt.Fprintf(&rules, "    - '%s'\n", e)
	}
	return scenario(t, "prom.yaml", `version: 1
name: prom
target: {url: `+target+`}
driver: {http: {path: /x, timeout: 2s}}
repeats: 2
phases:
  - {name: one, closed: {connections: 2}, requests: 100}
  - {name: two, closed: {connections: 2}, requests: 100}
reconcile:
  fetch: {prometheus: `+fetch+`}
  expect:
`+rules.String())
}

// Issue 15: the counters at an exporter's own port, a rule that writes
// the labels in yet another order, byte counters and gauges that move
// with every scrape: the delta reconciles (difference 0), the console
// shows only the series the rule reads, and the shared-target check does
// not mistake the scrapes for another client.
func TestReconcilePrometheusSeparatePort(t *testing.T) {
	target, metrics := stubExporter(t, false)
	if strings.HasPrefix(metrics, target) {
		t.Fatalf("the exporter %s is on the target's port %s", metrics, target)
	}
	file := promScenario(t, target, metrics, `server["app_requests_total{ path=\"/x\", code=\"200\" }"] == requests`)
	jsonPath := filepath.Join(t.TempDir(), "r.json")
	code, out, errOut := cli(t, "run", "--log-level", "disabled", "--json", jsonPath, "--tsv", filepath.Join(t.TempDir(), "r.tsv"), file)
	if code != exitPass {
		t.Fatalf("exit %d, want a pass\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(out, `PASS: server["app_requests_total{code=\"200\",path=\"/x\"}"]=100 requests=100`) {
		t.Errorf("the labelled counter did not reconcile in its canonical name:\n%s", out)
	}
	if n := strings.Count(out, `server Δ      app_requests_total{code="200",path="/x"}=100 · fetches 1`+"\n"); n != 4 {
		t.Errorf("%d of 4 phases show only the series the rule reads:\n%s", n, out)
	}
	if strings.Contains(out, "counters moved between phases") || strings.Contains(out, "app_scrape_seconds") {
		t.Errorf("the scrapes' own counters or the gauge reached the report:\n%s", out)
	}
	rep := readJSON(t, jsonPath)
	for i, ph := range rep["result"].(map[string]any)["phases"].([]any) {
		if f := jsonNum(t, ph, "fetches"); f != 1 {
			t.Errorf("phase %d: fetches %v, want 1", i, f)
		}
		// The byte counter is recorded, the gauge no rule names is not.
		after := ph.(map[string]any)["server_after"].(map[string]any)
		if _, ok := after["app_bytes_out_total"]; !ok {
			t.Errorf("phase %d: the byte counter is not in the JSON result: %v", i, after)
		}
		if _, ok := after["app_scrape_seconds"]; ok {
			t.Errorf("phase %d: a gauge no rule names was read: %v", i, after)
		}
	}
}

// A target that serves its metrics on its own port counts each scrape as
// a request: the fetch after a phase lands in its delta, off by exactly
// one, and `fetches` says by how much.
func TestReconcilePrometheusFetchesCounted(t *testing.T) {
	target, metrics := stubExporter(t, true)
	file := promScenario(t, target, "/metrics",
		`server["app_requests_total{path=\"/x\",code=\"200\"}"] - fetches == requests`,
		`server["app_requests_total{path=\"/x\",code=\"200\"}"] == requests`)
	if metrics != target+"/metrics" {
		t.Fatalf("metrics at %s", metrics)
	}
	code, out, errOut := cli(t, "run", "--log-level", "disabled", "--json", filepath.Join(t.TempDir(), "r.json"), "--tsv", filepath.Join(t.TempDir(), "r.tsv"), file)
	if code != exitFail {
		t.Fatalf("exit %d, want a failure (the second rule)\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(out, `PASS: server["app_requests_total{code=\"200\",path=\"/x\"}"]=101 fetches=1 requests=100`) {
		t.Errorf("subtracting fetches did not reconcile:\n%s", out)
	}
	if !strings.Contains(out, "is false: 101 vs 100, difference 1") {
		t.Errorf("the rule that forgets the scrape is not off by one:\n%s", out)
	}
}

// A metrics URL where nothing listens: the phases run, every rule on the
// counters is inconclusive, and the console says which URL refused.
func TestReconcilePrometheusRefused(t *testing.T) {
	target, _ := stubExporter(t, false)
	metrics := fmt.Sprintf("http://127.0.0.1:%d/metrics", freePort(t))
	file := promScenario(t, target, metrics, `server["app_requests_total{code=\"200\",path=\"/x\"}"] == requests`)
	code, out, errOut := cli(t, "run", "--log-level", "disabled", "--json", filepath.Join(t.TempDir(), "r.json"), "--tsv", filepath.Join(t.TempDir(), "r.tsv"), file)
	if code != exitInconclusive {
		t.Fatalf("exit %d, want inconclusive\n%s\n%s", code, out, errOut)
	}
	if want := "server Δ      unavailable: before the phase: GET " + metrics + ": connection refused: nothing listens there (reconcile.fetch)"; !strings.Contains(out, want) {
		t.Errorf("output lacks %q:\n%s", want, out)
	}
}

package main

import (
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// promTarget serves counted requests on every path but /metrics, which
// answers its counters in the Prometheus text format, labelled by code.
func promTarget(t *testing.T) string {
	t.Helper()
	var n atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "# HELP app_requests_total Requests.\n# TYPE app_requests_total counter\napp_requests_total{code=\"200\"} %d\n# TYPE app_up gauge\napp_up 1\n", n.Load())
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { n.Add(1) })
	return serveLoopback(t, mux)
}

// reconcile.fetch.prometheus reads a Prometheus exposition; a labelled
// sample is server["name{label=\"v\"}"], and its delta reconciles.
func TestReconcilePrometheus(t *testing.T) {
	base := promTarget(t)
	file := scenario(t, "s.yaml", `version: 1
name: prom
target: {url: `+base+`}
driver: {http: {path: /x, timeout: 2s}}
phases:
  - {name: main, closed: {connections: 2}, requests: 100}
reconcile:
  fetch: {prometheus: /metrics}
  expect:
    - 'server["app_requests_total{code=\"200\"}"] == requests'
    - server.app_up == 0
`)
	code, out, errOut := cli(t, "run", "--log-level", "disabled", "--json", t.TempDir()+"/r.json", "--tsv", t.TempDir()+"/r.tsv", file)
	if code != exitPass {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(out, `PASS: server["app_requests_total{code=\"200\"}"]=100 requests=100`) {
		t.Errorf("the labelled counter did not reconcile:\n%s", out)
	}
}

// reconcile.fetch.field picks the counters object out of a JSON reply;
// a field that is not there is reported with what is.
func TestReconcileJSONField(t *testing.T) {
	mux := http.NewServeMux()
	var n atomic.Int64
	mux.HandleFunc("/stats", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"service": "x", "counters": {"hits": %d}}`, n.Load())
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { n.Add(1) })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	defer srv.Close()
	for field, want := range map[string]string{
		"counters": "PASS: server.hits=40 requests=40",
		"nope":     "no field nope in the reply; it has counters, service",
	} {
		file := scenario(t, "s.yaml", `version: 1
name: field
target: {url: http://`+ln.Addr().String()+`}
driver: {http: {path: /x, timeout: 2s}}
phases:
  - {name: main, closed: {connections: 1}, requests: 40}
reconcile:
  fetch: {path: /stats, field: `+field+`}
  expect: [server.hits == requests]
`)
		_, out, errOut := cli(t, "run", "--log-level", "disabled", "--json", t.TempDir()+"/r.json", "--tsv", t.TempDir()+"/r.tsv", file)
		if !strings.Contains(out+errOut, want) {
			t.Errorf("field %s: output lacks %q:\n%s\n%s", field, want, out, errOut)
		}
	}
}

// The counter fetch of an https:// target trusts what the traffic trusts
// (tls.ca_file): the breaker found the traffic passing and every fetch
// failing on an unknown authority.
func TestReconcileOverTLS(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/stats" {
			fmt.Fprintf(w, `{"hits": %d}`, n.Load())
			return
		}
		n.Add(1)
	}))
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	file := scenario(t, "s.yaml", `version: 1
name: tls
target: {url: `+srv.URL+`}
driver: {http: {path: /x, timeout: 2s, tls: {ca_file: `+ca+`}}}
phases:
  - {name: main, closed: {connections: 1}, requests: 30}
reconcile:
  fetch: {path: /stats}
  expect: [server.hits == requests]
`)
	code, out, errOut := cli(t, "run", "--log-level", "disabled", "--json", t.TempDir()+"/r.json", "--tsv", t.TempDir()+"/r.tsv", file)
	if code != exitPass || !strings.Contains(out, "PASS: server.hits=30 requests=30") {
		t.Errorf("exit %d\n%s\n%s", code, out, errOut)
	}
}

//go:build linux

package main

import (
	"bytes"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// haproxyConfig proxies frontend fe (port fe) to backend be (the server
// at backend), and serves the prometheus-exporter service both on fe's
// /metrics (so fe counts its scrapes) and on a stats frontend of its own
// (port stats).
const haproxyConfig = `global
  maxconn 512
defaults
  mode http
  timeout connect 5s
  timeout client 30s
  timeout server 30s
frontend fe
  bind 127.0.0.1:%d
  http-request use-service prometheus-exporter if { path /metrics }
  default_backend be
frontend stats
  bind 127.0.0.1:%d
  http-request use-service prometheus-exporter
backend be
  server ref %s
`

// startHAProxy runs haproxy in the foreground (-db), in its own process
// group, proxying to backend (host:port), on two free loopback ports; it
// returns fe's base URL and the stats frontend's metrics URL. haproxy is
// stopped (SIGTERM, then SIGKILL to the group) when the test ends.
func startHAProxy(t *testing.T, backend string) (fe, metrics string) {
	t.Helper()
	bin := findExternal(t, "haproxy", "haproxy")
	dir := t.TempDir()
	var lastErr string
	for attempt := 0; attempt < 3; attempt++ {
		fePort, statsPort := freePort(t), freePort(t)
		cfg := filepath.Join(dir, "haproxy.cfg")
		if err := os.WriteFile(cfg, fmt.Appendf(nil, haproxyConfig, fePort, statsPort, backend), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "-db", "-f", cfg)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		done, stop := startGroup(t, cmd, syscall.SIGTERM)
		addrs := []string{fmt.Sprintf("127.0.0.1:%d", fePort), fmt.Sprintf("127.0.0.1:%d", statsPort)}
		if up := waitListening(addrs, done); up {
			stopAtEnd(t, "haproxy", stop, addrs...)
			return "http://" + addrs[0], "http://" + addrs[1] + "/metrics"
		}
		stop()
		lastErr = out.String()
	}
	t.Fatalf("haproxy did not start: %s", lastErr)
	return "", ""
}

// waitListening waits up to 10 s for every address to accept a
// connection; false when exited is closed first or time runs out.
func waitListening(addrs []string, exited <-chan struct{}) bool {
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		select {
		case <-exited:
			return false // most likely a port was taken meanwhile
		default:
		}
		up := 0
		for _, a := range addrs {
			if c, err := net.DialTimeout("tcp", a, time.Second); err == nil {
				c.Close()
				up++
			}
		}
		if up == len(addrs) {
			return true
		}
	}
	return false
}

// Issue 15 against the real exporter: HAProxy 2.x in front of runner's
// reference target, its counters read from the prometheus-exporter of a
// stats frontend (a port of its own) and, in a second run, from the
// proxied frontend's own /metrics, which counts the scrapes. Rules name
// the backend's series with HAProxy's label order (proxy, then code):
// every reconciliation has difference 0, without a shared-target warning
// from the counters that move with each scrape, and the console shows
// only the series the rules read, not HAProxy's ~260.
func TestReconcileHAProxy(t *testing.T) {
	ref := spawnHTTP(t)
	u, err := url.Parse(ref.URL)
	if err != nil {
		t.Fatal(err)
	}
	fe, stats := startHAProxy(t, u.Host)
	const (
		feRequests = `server["haproxy_frontend_http_requests_total{proxy=\"fe\"}"]`
		be2xx      = `server["haproxy_backend_http_responses_total{proxy=\"be\",code=\"2xx\"}"]`
	)
	for _, tc := range []struct {
		name, fetch, rule string
		fetches           float64
	}{
		{"stats frontend", stats, feRequests + " == requests", 1},
		{"the proxied frontend's own /metrics", "/metrics", feRequests + " - fetches == requests", 1},
	} {
		file := promScenario(t, fe, tc.fetch, tc.rule, be2xx+" == ok", "errors == 0")
		jsonPath := filepath.Join(t.TempDir(), "r.json")
		code, out, errOut := cli(t, "run", "--log-level", "warn", "--json", jsonPath, "--tsv", filepath.Join(t.TempDir(), "r.tsv"), file)
		t.Logf("%s: exit %d\n%s", tc.name, code, out)
		if code != exitPass {
			t.Errorf("%s: exit %d, want a pass\n%s", tc.name, code, errOut)
			continue
		}
		// 3 rules × 2 phases × 2 repeats, each judged PASS.
		if strings.Count(out, ": PASS: ") != 12 || strings.Contains(out, "difference") {
			t.Errorf("%s: not every rule reconciled with difference 0", tc.name)
		}
		if strings.Contains(out, "counters moved between phases") {
			t.Errorf("%s: the scrapes were taken for another client", tc.name)
		}
		want := `server Δ      haproxy_backend_http_responses_total{code="2xx",proxy="be"}=100 haproxy_frontend_http_requests_total{proxy="fe"}=`
		if n := strings.Count(out, want); n != 4 {
			t.Errorf("%s: %d of 4 phases show only the series the rules read (%q)", tc.name, n, want)
		}
		rep := readJSON(t, jsonPath)
		for i, ph := range rep["result"].(map[string]any)["phases"].([]any) {
			if f := jsonNum(t, ph, "fetches"); f != tc.fetches {
				t.Errorf("%s: phase %d: fetches %v, want %v", tc.name, i, f, tc.fetches)
			}
		}
	}
}

// TestReadmeHAProxyConfig: the configuration the README's "Reconciling
// with HAProxy" shows is one haproxy accepts without a warning (a fresh
// user's copy of it once lacked `mode http`: haproxy ignored the
// exporter's rule, and the scrape read nothing).
func TestReadmeHAProxyConfig(t *testing.T) {
	bin := findExternal(t, "haproxy", "haproxy")
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(readme), "\n## Reconciling with HAProxy\n")
	_, block, ok2 := strings.Cut(sec, "\n```\n")
	block, _, ok3 := strings.Cut(block, "\n```\n")
	if !ok || !ok2 || !ok3 || !strings.Contains(block, "prometheus-exporter") {
		t.Fatal("README.md: no haproxy configuration block under \"## Reconciling with HAProxy\"")
	}
	cfg := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(cfg, []byte(block+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "-c", "-f", cfg).CombinedOutput()
	if err != nil || strings.Contains(string(out), "WARNING") || strings.Contains(string(out), "ALERT") {
		t.Fatalf("haproxy -c on the README's configuration: %v\n%s", err, out)
	}
}

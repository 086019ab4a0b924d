//go:build linux

package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	nethttp "net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/internal/testpki"
)

// nginx over HTTP/2 with keepalive_requests 10 ends each connection with
// GOAWAY after its tenth request. With 8 streams in flight on each of 2
// connections, streams above the GOAWAY's last-stream-id were not
// processed: runner sends each again once on a fresh connection. Every
// request ends ok, the re-sends are counted (goaway_retries), the GOAWAYs
// are counted as the server's closes, and the connections opened are
// those nginx's request limit makes.
func TestNginxH2GoAway(t *testing.T) {
	dir := t.TempDir()
	ca := testpki.NewCA(t, dir, "nginx-goaway")
	// The echo module (Debian's nginx-light brings it) gives each
	// request 20 ms, so that streams overlap and some are above a
	// GOAWAY's last-stream-id.
	base := startNginxTLSWith(t, ca, true, "load_module /usr/lib/nginx/modules/ngx_http_echo_module.so;",
		"keepalive_requests 10;\n        location / { echo_sleep 0.02; echo ok; }")
	sc := h2Scenario(t, dir, "nginx-goaway", base, "2", fmt.Sprintf("{ca_file: %q}", ca.CertFile), "status == 200",
		`{name: steady, open: {rate: 1000/s, connections: 2, inflight: 8}, requests: 400}`)
	jsonPath := filepath.Join(dir, "goaway.json")
	code, stdout, stderr := cli(t, "run", "--log-level", "warn", "--json", jsonPath, "--tsv", filepath.Join(dir, "r.tsv"), sc)
	t.Logf("exit %d\n%s", code, stdout)
	if !passedOrGeneratorBound(t, code, stdout) {
		t.Fatalf("exit %d, want %d", code, exitPass)
	}
	ph := readJSON(t, jsonPath)["result"].(map[string]any)["phases"].([]any)[0]
	ok, req := jsonNum(t, ph, "summary", "ok"), jsonNum(t, ph, "summary", "requests")
	if ok != 400 || req != 400 {
		t.Errorf("ok %v of %v, want 400 of 400: a stream above the last-stream-id is sent again, never an error", ok, req)
	}
	retries := jsonNum(t, ph, "summary", "goaway_retries")
	if retries < 1 || retries > 400 {
		t.Errorf("goaway_retries %v, want some (8 streams of 20 ms in flight when nginx says GOAWAY)", retries)
	}
	opened := jsonNum(t, ph, "summary", "connections_opened")
	if opened < 40 {
		t.Errorf("connections opened %v, want at least 40 (10 requests each)", opened)
	}
	if goaways := jsonNum(t, ph, "summary", "closes_by_code", "goaway-NO_ERROR"); goaways < opened-2 || goaways > opened {
		t.Errorf("GOAWAYs %v for %v connections opened, want each ended by one (but the last 2, perhaps)", goaways, opened)
	}
	if want := fmt.Sprintf("%d requests sent again after a GOAWAY", int(retries)); !strings.Contains(stdout, want) {
		t.Errorf("the console does not say %q:\n%s", want, stdout)
	}
	if !strings.Contains(stderr, "sent again on a fresh connection") {
		t.Errorf("the log does not say requests were sent again:\n%s", stderr)
	}
}

// nginx over HTTP/2 allowing 1 stream per connection
// (http2_max_concurrent_streams 1), each request taking 200 ms, offered
// 20/s on one connection with inflight 8: requests past the cap wait in
// the client, without a timeout, and those still waiting when the drain
// runs out were never sent, so they are left over, never requests or
// timeouts. runner's requests equal nginx's own count (stub_status; it
// counted them as timeouts sent before), and the achieved-rate warning
// names the stream cap.
func TestNginxH2StreamCapReconciles(t *testing.T) {
	dir := t.TempDir()
	ca := testpki.NewCA(t, dir, "nginx-mcs")
	base := startNginxTLSWith(t, ca, true, "load_module /usr/lib/nginx/modules/ngx_http_echo_module.so;",
		"http2_max_concurrent_streams 1;\n        location = /status { stub_status; }\n        location / { echo_sleep 0.2; echo ok; }")
	pool := x509.NewCertPool()
	pemCA, err := os.ReadFile(ca.CertFile)
	if err != nil || !pool.AppendCertsFromPEM(pemCA) {
		t.Fatal("CA", err)
	}
	client := &nethttp.Client{Timeout: 5 * time.Second, Transport: &nethttp.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	defer client.CloseIdleConnections()
	served := func() int {
		t.Helper()
		resp, err := client.Get(base + "/status")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		// "Active connections: 1 \nserver accepts handled requests\n 1 1 1 \n..."
		_, after, _ := strings.Cut(string(b), "requests\n")
		f := strings.Fields(after)
		if len(f) < 3 {
			t.Fatalf("stub_status %q", b)
		}
		n, err := strconv.Atoi(f[2])
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	y := fmt.Sprintf(`version: 1
name: nginx-mcs
target: {url: "%s"}
driver: {http: {version: "2", path: /, timeout: 500ms, tls: {ca_file: %q}}}
phases:
  - {name: steady, open: {rate: 20/s, connections: 1, inflight: 8}, duration: 1s}
`, base, ca.CertFile)
	sc := filepath.Join(dir, "nginx-mcs.yaml")
	if err := os.WriteFile(sc, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	before := served()
	jsonPath := filepath.Join(dir, "mcs.json")
	code, stdout, stderr := cli(t, "run", "--log-level", "warn", "--json", jsonPath, "--tsv", filepath.Join(dir, "r.tsv"), sc)
	if code == exitCouldNotRun {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	delta := served() - before - 1 // the second status request counts itself
	ph := readJSON(t, jsonPath)["result"].(map[string]any)["phases"].([]any)[0]
	req, ok := jsonNum(t, ph, "summary", "requests"), jsonNum(t, ph, "summary", "ok")
	left := jsonNum(t, ph, "summary", "left_over_unsent")
	if int(req) != delta || ok != req {
		t.Errorf("runner: %v requests, %v ok; nginx served %d: want all ok and equal", req, ok, delta)
	}
	if left < 1 || jsonNum(t, ph, "summary", "timeouts") != 0 {
		t.Errorf("left over unsent %v, timeouts %v: want the requests waiting for a stream left over, none a timeout", left, jsonNum(t, ph, "summary", "timeouts"))
	}
	if jsonNum(t, ph, "stream_cap") != 1 {
		t.Errorf("stream_cap %v, want nginx's 1", jsonNum(t, ph, "stream_cap"))
	}
	if !strings.Contains(stdout, "they waited for an HTTP/2 stream: the server allows 1 concurrent streams per connection") {
		t.Errorf("the console does not name the stream cap as the wait's cause:\n%s", stdout)
	}
}

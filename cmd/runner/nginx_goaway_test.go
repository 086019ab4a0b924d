//go:build linux

package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

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
	if code != exitPass {
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

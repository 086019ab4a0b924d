//go:build linux

package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runner-dev/runner/internal/testpki"
)

// startNginxTLS starts nginx on a free loopback port with TLS (a server
// certificate of ca) and server, the lines of its server block besides
// listen and the certificate; http2 puts `http2` on the listen line
// (nginx 1.22 of Debian 12 spells it there; `http2 on;` came in 1.25.1).
// It returns the https:// base URL.
func startNginxTLS(t *testing.T, ca *testpki.CA, http2 bool, server string) string {
	t.Helper()
	return startNginxTLSWith(t, ca, http2, "", server+`
        location / { return 200 "$server_protocol $ssl_client_s_dn\n"; }`)
}

// startNginxTLSWith is startNginxTLS with top, lines before the events
// block (load_module), and server holding the whole rest of the server
// block, its locations included.
func startNginxTLSWith(t *testing.T, ca *testpki.CA, http2 bool, top, server string) string {
	t.Helper()
	prefix := t.TempDir()
	if err := os.Mkdir(filepath.Join(prefix, "tmp"), 0o755); err != nil {
		t.Fatal(err)
	}
	cert := ca.Server(t, "nginx")
	listen := "ssl"
	if http2 {
		listen = "ssl http2"
	}
	tmp := filepath.Join(prefix, "tmp")
	addr := runNginx(t, prefix, func(port int) string {
		return fmt.Sprintf(`user root;
%[7]s
worker_processes 1;
error_log stderr warn;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path %[1]s/body;
    proxy_temp_path %[1]s/proxy;
    fastcgi_temp_path %[1]s/fastcgi;
    uwsgi_temp_path %[1]s/uwsgi;
    scgi_temp_path %[1]s/scgi;
    server {
        listen 127.0.0.1:%[2]d %[3]s;
        ssl_certificate %[4]s;
        ssl_certificate_key %[5]s;
        %[6]s
    }
}
`, tmp, port, listen, cert.CertFile, cert.KeyFile, server, top)
	})
	return "https://" + addr
}

// h2Scenario writes a scenario against base with the given driver tls
// mapping and phase, and returns its path.
func h2Scenario(t *testing.T, dir, name, base, version, tls, success, phase string) string {
	t.Helper()
	y := fmt.Sprintf(`version: 1
name: %s
target: {url: "%s"}
driver: {http: {version: "%s", path: /, timeout: 5s, success: '%s', tls: %s}}
phases:
  - %s
`, name, base, version, success, tls, phase)
	p := filepath.Join(dir, name+".yaml")
	if err := os.WriteFile(p, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// nginx over TLS with http2: runner negotiates h2 by ALPN (nginx's
// $server_protocol says HTTP/2.0 in every body), multiplexes under
// nginx's http2_max_concurrent_streams 4 (which caps inflight 8, and the
// log says so), and opens only its 2 connections. The same nginx
// without http2 fails the run before any traffic, naming what it
// selected.
func TestNginxH2OverTLS(t *testing.T) {
	dir := t.TempDir()
	ca := testpki.NewCA(t, dir, "nginx-test")
	base := startNginxTLS(t, ca, true, "http2_max_concurrent_streams 4;")
	tls := fmt.Sprintf("{ca_file: %q}", ca.CertFile)
	sc := h2Scenario(t, dir, "nginx-h2", base, "2", tls, `body startsWith "HTTP/2.0"`,
		`{name: steady, open: {rate: 400/s, connections: 2, inflight: 8}, requests: 400}`)
	jsonPath := filepath.Join(dir, "nginx-h2.json")
	code, stdout, stderr := cli(t, "run", "--log-level", "warn", "--json", jsonPath, "--tsv", filepath.Join(dir, "r.tsv"), sc)
	if !passedOrGeneratorBound(t, code, stdout) {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	ph := readJSON(t, jsonPath)["result"].(map[string]any)["phases"].([]any)[0]
	if ok := jsonNum(t, ph, "summary", "ok"); ok != 400 {
		t.Errorf("ok %v of 400 (success: the body says HTTP/2.0)", ok)
	}
	if opened := jsonNum(t, ph, "summary", "connections_opened"); opened != 2 {
		t.Errorf("connections opened %v, want 2", opened)
	}
	if !strings.Contains(stderr, "allows 4 concurrent streams") {
		t.Errorf("the log does not say nginx's stream limit caps inflight 8:\n%s", stderr)
	}

	plain := startNginxTLS(t, ca, false, "")
	sc = h2Scenario(t, dir, "nginx-no-h2", plain, "2", tls, "status == 200", `{closed: {connections: 1}, requests: 10}`)
	code, stdout, stderr = cli(t, "run", "--log-level", "warn", "--json", filepath.Join(dir, "no-h2.json"), "--tsv", filepath.Join(dir, "r.tsv"), sc)
	if code != exitCouldNotRun || !strings.Contains(stdout+stderr, "did not select h2") {
		t.Errorf("nginx without http2: exit %d, want %d saying it did not select h2\nstdout:\n%s\nstderr:\n%s", code, exitCouldNotRun, stdout, stderr)
	}
}

// nginx with ssl_verify_client on: our client certificate is accepted
// over HTTP/1.1 and HTTP/2 (nginx puts its subject in the body); without
// one nginx answers 400 (its refusal is an HTTP status, not a TLS alert). Key
// material reaches no output: every report, the console and the log are
// searched for the key's PEM body.
func TestNginxMutualTLS(t *testing.T) {
	dir := t.TempDir()
	ca := testpki.NewCA(t, dir, "nginx-mtls")
	client := ca.Client(t, "load-client")
	base := startNginxTLS(t, ca, true, fmt.Sprintf("ssl_client_certificate %s;\n        ssl_verify_client on;", ca.CertFile))
	withCert := fmt.Sprintf("{ca_file: %q, cert_file: %q, key_file: %q}", ca.CertFile, client.CertFile, client.KeyFile)
	out := filepath.Join(dir, "out")
	for _, version := range []string{"1.1", "2"} {
		name := "mtls-" + strings.ReplaceAll(version, ".", "")
		sc := h2Scenario(t, dir, name, base, version, withCert, `status == 200 && body contains "CN=load-client"`,
			`{closed: {connections: 2}, requests: 50}`)
		code, stdout, stderr := cli(t, "run", "--log-level", "debug", "--json", filepath.Join(out, name+".json"), "--tsv", filepath.Join(out, name+".tsv"),
			"--markdown", filepath.Join(out, name+".md"), "--junit", filepath.Join(out, name+".xml"), "--html", filepath.Join(out, name+".html"),
			"--hdr", filepath.Join(out, name+".hlog"), "--log-format", "json", sc)
		if !passedOrGeneratorBound(t, code, stdout) {
			t.Fatalf("version %s with our certificate: exit %d\nstdout:\n%s\nstderr:\n%s", version, code, stdout, stderr)
		}
		noKey(t, client.KeyPEM, "console of "+name, []byte(stdout+stderr))
	}
	sc := h2Scenario(t, dir, "mtls-none", base, "2", fmt.Sprintf("{ca_file: %q}", ca.CertFile), "status == 200", `{closed: {connections: 1}, requests: 5}`)
	code, stdout, stderr := cli(t, "run", "--log-level", "warn", "--json", filepath.Join(dir, "none.json"), "--tsv", filepath.Join(dir, "r.tsv"), sc)
	if !strings.Contains(stdout, "400=5") {
		t.Errorf("without a certificate: exit %d, want 5 errors of status 400\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	// Every file the runs wrote.
	files := 0
	filepath.WalkDir(out, func(p string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		files++
		noKey(t, client.KeyPEM, p, b)
		if strings.HasSuffix(p, ".json") && !bytes.Contains(b, []byte(filepath.Base(client.KeyFile))) {
			t.Errorf("%s does not name the key file (its path may be reported)", p)
		}
		return nil
	})
	if files < 12 {
		t.Errorf("%d output files searched, want the 6 reports of each of 2 runs", files)
	}
}

// noKey fails when b holds any line of the key's PEM body.
func noKey(t *testing.T, keyPEM []byte, where string, b []byte) {
	t.Helper()
	for _, line := range strings.Split(string(keyPEM), "\n") {
		if len(line) >= 16 && !strings.HasPrefix(line, "-----") && bytes.Contains(b, []byte(line)) {
			t.Errorf("%s holds a line of the client key's PEM", where)
			return
		}
	}
}

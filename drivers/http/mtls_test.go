package http

import (
	"crypto/tls"
	"errors"
	"net"
	nethttp "net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/drivers"
	"github.com/runner-dev/runner/internal/testpki"
	"github.com/runner-dev/runner/schema"
)

// Mutual TLS against a Go server that requires and verifies a client
// certificate (tls.RequireAndVerifyClientCert), over HTTP/1.1 and HTTP/2:
// ours is accepted and the server sees its name; without one, or with one
// from a CA the server does not trust, the request ends as connect/TLS
// with the server's alert in the message, and the key's PEM is in no
// error.
func TestMTLS_GoServerRequiresClientCert(t *testing.T) {
	dir := t.TempDir()
	ca := testpki.NewCA(t, dir, "runner-test")
	srvPair := ca.Server(t, "server")
	client := ca.Client(t, "load-client")
	stranger := testpki.NewCA(t, dir, "stranger").Client(t, "stranger")

	cert, err := tls.LoadX509KeyPair(srvPair.CertFile, srvPair.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewUnstartedServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		if len(r.TLS.PeerCertificates) == 0 {
			nethttp.Error(w, "no client certificate", 500)
			return
		}
		w.Header().Set("X-Client", r.TLS.PeerCertificates[0].Subject.CommonName)
		w.Header().Set("X-Proto", r.Proto)
	}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs.Listener = ln
	hs.EnableHTTP2 = true
	hs.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.Pool()}
	hs.StartTLS()
	defer hs.Close()

	for _, version := range []string{"1.1", "2"} {
		t.Run("version "+version, func(t *testing.T) {
			cfg := func(p *testpki.Pair) schema.HTTP {
				c := schema.HTTP{Version: version, TLS: &schema.TLS{CAFile: ca.CertFile}}
				if p != nil {
					c.TLS.CertFile, c.TLS.KeyFile = p.CertFile, p.KeyFile
				}
				c.Success = `headers["X-Client"] == "load-client" && headers["X-Proto"] == "HTTP/` + map[string]string{"1.1": "1.1", "2": "2.0"}[version] + `"`
				return c
			}
			d := newDriver(t, cfg(&client), hs.URL)
			if out := do(dial(t, d), 1, 5*time.Second); out.Class != drivers.OK {
				t.Fatalf("with our certificate: %s %s %v", out.Class, out.Code, out.Err)
			}
			for _, tc := range []struct {
				name string
				p    *testpki.Pair
				want []string // any of these in the message
			}{
				{"none", nil, []string{"certificate required", "handshake failure", "bad certificate"}},
				{"untrusted", &stranger, []string{"unknown certificate authority", "bad certificate"}},
			} {
				d := newDriver(t, cfg(tc.p), hs.URL)
				var out drivers.Outcome
				if c, err := d.Dial(t.Context()); err != nil {
					out.Class, out.Code = drivers.Classify(err)
					out.Err = err
				} else {
					out = do(c, 1, 5*time.Second)
					c.Close()
				}
				if out.Class != drivers.Connect || out.Code != drivers.CodeTLS {
					t.Errorf("%s: %s %s %v; want connect TLS", tc.name, out.Class, out.Code, out.Err)
					continue
				}
				msg := out.Err.Error()
				found := false
				for _, w := range tc.want {
					found = found || strings.Contains(msg, w)
				}
				if !found {
					t.Errorf("%s: message %q says none of %q", tc.name, msg, tc.want)
				}
				if tc.p != nil && strings.Contains(msg, string(tc.p.KeyPEM[40:80])) {
					t.Errorf("%s: the key's PEM is in the message", tc.name)
				}
			}
		})
	}
}

// A cert_file and key_file that are no pair, or not PEM, are refused at
// New with the files' names and not their contents.
func TestMTLS_BadPairRefusedAtNew(t *testing.T) {
	dir := t.TempDir()
	ca := testpki.NewCA(t, dir, "a")
	one, other := ca.Client(t, "one"), ca.Client(t, "other")
	for _, tc := range []struct {
		name       string
		cert, key  string
		key2, want string
	}{
		{"mismatched", one.CertFile, other.KeyFile, "tls.cert_file", "private key does not match public key"},
		{"key as cert", one.KeyFile, one.KeyFile, "tls.cert_file", one.KeyFile},
		{"missing", one.CertFile, dir + "/nope.key", "tls.key_file", "nope.key"},
	} {
		_, err := New(schema.HTTP{TLS: &schema.TLS{CertFile: tc.cert, KeyFile: tc.key}}, "https://127.0.0.1:1", dir)
		if err == nil {
			t.Fatalf("%s: New accepted it", tc.name)
		}
		var ce *drivers.ConfigError
		if !errors.As(err, &ce) || ce.Key != tc.key2 || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v (key %v); want %s and %q", tc.name, err, ce, tc.key2, tc.want)
		}
		for _, p := range []testpki.Pair{one, other} {
			if strings.Contains(err.Error(), string(p.KeyPEM[40:80])) {
				t.Errorf("%s: the key's PEM is in the error", tc.name)
			}
		}
	}
}

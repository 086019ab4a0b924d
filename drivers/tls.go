package drivers

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"

	"github.com/runner-dev/runner/schema"
)

// TLSConfig builds a client TLS configuration for host: verification on,
// the system roots plus t.CAFile, t.ServerName in place of host when set,
// and alpn offered. t may be nil (the defaults). Errors: an unreadable
// ca_file (not a regular file, or over MaxFile), or one without a PEM
// certificate.
func TLSConfig(t *schema.TLS, host string, alpn []string) (*tls.Config, error) {
	conf := &tls.Config{ServerName: host, NextProtos: alpn}
	if t == nil {
		return conf, nil
	}
	if t.ServerName != "" {
		conf.ServerName = t.ServerName
	}
	conf.InsecureSkipVerify = t.InsecureSkipVerify
	if t.CAFile != "" {
		pem, err := ReadFile(t.CAFile, MaxFile)
		if err != nil {
			return nil, fmt.Errorf("tls.ca_file: %w", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("tls.ca_file %s: no PEM certificate found", t.CAFile)
		}
		conf.RootCAs = pool
	}
	return conf, nil
}

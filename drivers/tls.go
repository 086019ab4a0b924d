package drivers

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"

	"github.com/runner-dev/runner/schema"
)

// TLSConfig builds a client TLS configuration for host: verification on,
// the system roots plus t.CAFile, t.ServerName in place of host when set,
// and alpn offered, and the client certificate of t.CertFile and
// t.KeyFile when set. t may be nil (the defaults). Errors: an unreadable
// ca_file, cert_file or key_file (not a regular file, or over MaxFile),
// a ca_file without a PEM certificate, a cert_file and key_file that do
// not make a pair (crypto/tls.X509KeyPair). Errors are *ConfigError
// keyed by the file's field (tls.ca_file, tls.cert_file, tls.key_file) and name the files, never
// their contents: key material reaches no message.
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
			return nil, &ConfigError{Key: "tls.ca_file", Err: fmt.Errorf("tls.ca_file: %w", err)}
		}
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, &ConfigError{Key: "tls.ca_file", Err: fmt.Errorf("tls.ca_file %s: no PEM certificate found", t.CAFile)}
		}
		conf.RootCAs = pool
	}
	if t.CertFile != "" || t.KeyFile != "" {
		cert, err := clientCert(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, err
		}
		// Always ours, whatever CAs the server says it accepts: Go would
		// otherwise send none to a server that names other CAs, which
		// then says "certificate required" of a client that has one.
		conf.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }
	}
	return conf, nil
}

// clientCert loads a client certificate and its key from PEM files. The
// errors of crypto/tls.X509KeyPair name what is wrong without quoting the
// PEM; ours add the file names.
func clientCert(certFile, keyFile string) (tls.Certificate, error) {
	if certFile == "" || keyFile == "" {
		return tls.Certificate{}, &ConfigError{Key: "tls.cert_file", Err: fmt.Errorf("tls: cert_file and key_file go together; found only one")}
	}
	certPEM, err := ReadFile(certFile, MaxFile)
	if err != nil {
		return tls.Certificate{}, &ConfigError{Key: "tls.cert_file", Err: fmt.Errorf("tls.cert_file: %w", err)}
	}
	keyPEM, err := ReadFile(keyFile, MaxFile)
	if err != nil {
		return tls.Certificate{}, &ConfigError{Key: "tls.key_file", Err: fmt.Errorf("tls.key_file: %w", err)}
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	clear(keyPEM)
	if err != nil {
		return tls.Certificate{}, &ConfigError{Key: "tls.cert_file", Err: fmt.Errorf("tls.cert_file %s and tls.key_file %s: %w", certFile, keyFile, err)}
	}
	return cert, nil
}

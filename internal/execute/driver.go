package execute

import (
	"crypto/tls"
	"errors"
	"net/url"
	"path/filepath"
	"time"

	"github.com/runner-dev/runner/drivers"
	framedriver "github.com/runner-dev/runner/drivers/frame"
	httpdriver "github.com/runner-dev/runner/drivers/http"
	wsdriver "github.com/runner-dev/runner/drivers/websocket"
	"github.com/runner-dev/runner/schema"
)

// Driver is the driver a scenario names, built against a base URL, with
// what the plan and the report need to know of it. It is the one place
// that maps a scenario's driver key to a driver package: a new driver is
// added here (and in the schema).
type Driver struct {
	drivers.Driver
	// Key is its scenario key, e.g. driver.http.
	Key string
	// Timeout is its request timeout.
	Timeout time.Duration
	// Insecure is true when certificate verification is off.
	Insecure bool
	// MaxInflight is its largest in-flight cap per connection.
	MaxInflight int
	// InflightHint says, when the scenario asks for more in flight per
	// connection than MaxInflight, what to do instead ("" when nothing
	// more useful than the limit can be said).
	InflightHint string
	// TLS is its TLS section, nil for a driver without one.
	TLS *schema.TLS
}

// kinds are the drivers a scenario can name, one entry each: its key,
// whether the scenario configures it, the URL that stands in for a
// reference target's address while validating (known only once it is
// spawned, so that validation never needs a target), and how it is built
// against a base URL. A new driver is one entry here.
var kinds = []struct {
	key         string
	configured  func(sc *schema.Scenario) bool
	placeholder string
	build       func(sc *schema.Scenario, base string) (*Driver, error)
}{
	{"driver.http", func(sc *schema.Scenario) bool { return sc.Driver.HTTP != nil }, "http://127.0.0.1:1",
		func(sc *schema.Scenario, base string) (*Driver, error) {
			d, err := httpdriver.New(*sc.Driver.HTTP, base, filepath.Dir(sc.File))
			if err != nil {
				return nil, err
			}
			return &Driver{Driver: d, Timeout: d.Timeout(), Insecure: d.Insecure(), MaxInflight: d.MaxInflight(),
				InflightHint: "HTTP/1.x carries one request at a time per connection: use more connections, or version \"2\" (HTTP/2 streams)",
				TLS:          sc.Driver.HTTP.TLS}, nil
		}},
	{"driver.websocket", func(sc *schema.Scenario) bool { return sc.Driver.WebSocket != nil }, "ws://127.0.0.1:1",
		func(sc *schema.Scenario, base string) (*Driver, error) {
			w := sc.Driver.WebSocket
			d, err := wsdriver.New(*w, base, filepath.Dir(sc.File))
			if err != nil {
				return nil, err
			}
			ld := &Driver{Driver: d, Timeout: d.Timeout(), Insecure: d.Insecure(), MaxInflight: d.MaxInflight(), TLS: w.TLS}
			if w.Correlate == "" {
				ld.InflightHint = "without driver.websocket.correlate a connection carries one message at a time: set correlate to the reply field that carries the request id, or use more connections"
			}
			return ld, nil
		}},
	{"driver.frame", func(sc *schema.Scenario) bool { return sc.Driver.Frame != nil }, "tcp://127.0.0.1:1",
		func(sc *schema.Scenario, base string) (*Driver, error) {
			d, err := framedriver.New(*sc.Driver.Frame, base, filepath.Dir(sc.File))
			if err != nil {
				return nil, err
			}
			return &Driver{Driver: d, Timeout: d.Timeout(), MaxInflight: d.MaxInflight()}, nil
		}},
}

// NewDriver builds the scenario's driver against base. On an error the
// returned Driver still has its Key, and the error holds every problem the
// driver found (errors.Join of drivers.ConfigError).
func NewDriver(sc *schema.Scenario, base string) (*Driver, error) {
	for _, k := range kinds {
		if !k.configured(sc) {
			continue
		}
		d, err := k.build(sc, base)
		if err != nil {
			return &Driver{Key: k.key}, err
		}
		d.Key = k.key
		return d, nil
	}
	return &Driver{Key: "driver"}, errors.New("driver: no protocol")
}

// placeholderURL stands in for a reference target's address while a
// scenario is validated (its driver's placeholder in kinds).
func placeholderURL(sc *schema.Scenario) string {
	for _, k := range kinds {
		if k.configured(sc) {
			return k.placeholder
		}
	}
	return "http://127.0.0.1:1"
}

// fetchTLS is the TLS configuration of the counter fetches at an https://
// (or wss://) URL: the driver's own (ca_file, insecure_skip_verify,
// server_name), so that the fetch trusts what the traffic trusts, for the
// host of base; nil for a plain one.
func fetchTLS(d *Driver, base string) (*tls.Config, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "https" && u.Scheme != "wss") {
		return nil, nil
	}
	return drivers.TLSConfig(d.TLS, u.Hostname(), nil)
}

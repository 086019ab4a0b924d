package execute

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/runner-dev/runner/drivers"
	"github.com/runner-dev/runner/engine"
	"github.com/runner-dev/runner/internal/counters"
	"github.com/runner-dev/runner/internal/procstat"
	"github.com/runner-dev/runner/schema"
	"github.com/runner-dev/runner/targets"
)

// meterProcess measures process pid over a phase from /proc: CPU of the
// whole process and of its busiest thread, and RSS at the end.
func meterProcess(pid int) func() func() (*engine.TargetUsage, error) {
	return func() func() (*engine.TargetUsage, error) {
		a, errA := procstat.Take(pid)
		return func() (*engine.TargetUsage, error) {
			if errA != nil {
				return nil, errA
			}
			b, err := procstat.Take(pid)
			if err != nil {
				return nil, err
			}
			u := procstat.Between(a, b, procstat.OnlineCores()) // a fraction of the machine, whatever our affinity
			return &engine.TargetUsage{CPU: u.CPU, CPUMaxThread: u.CPUMaxThread, RSS: u.RSS}, nil
		}
	}
}

// fetchCounters reads the target's counters through the channel f names:
// GET base+path answering JSON (the object at f.Field), GET base+prometheus
// answering the Prometheus text format, a WebSocket control message on
// a connection of its own (the driver's Control), or memcached's stats
// command (memcachedStats). A path or prometheus
// that is an absolute URL is fetched as it is (an exporter on a port of
// its own); a ws:// base is reached over http:// for the GETs. The fetch's
// connection is its own: never counted as the run's. Of a Prometheus
// exposition, a gauge is read only when named is among the names the rules
// read (Plan.ServerCounters).
func fetchCounters(base string, f schema.Fetch, d drivers.Driver, tlsConf *tls.Config, named []string) func(context.Context) (map[string]float64, error) {
	if f.Message != "" {
		ctl, _ := d.(interface {
			Control(ctx context.Context, message string) ([]byte, error)
		})
		return func(ctx context.Context) (map[string]float64, error) {
			if ctl == nil {
				return nil, errors.New("this driver cannot send control messages")
			}
			b, err := ctl.Control(ctx, f.Message)
			if err != nil {
				return nil, fmt.Errorf("control message %s: %w", f.Message, err)
			}
			m, err := counters.JSON(b, f.Field)
			if err != nil {
				return nil, fmt.Errorf("control message %s: %w", f.Message, err)
			}
			return m, nil
		}
	}
	if f.MemcachedStats {
		return func(ctx context.Context) (map[string]float64, error) {
			return memcachedStats(ctx, base)
		}
	}
	c := &http.Client{Timeout: fetchTimeout, Transport: &http.Transport{DisableKeepAlives: true, TLSClientConfig: tlsConf}}
	path := cmp.Or(f.Path, f.Prometheus)
	where := fetchURL(base, f)
	gauge := func(name string) bool { return slices.Contains(named, name) }
	return func(ctx context.Context) (map[string]float64, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, where, nil)
		if err != nil {
			return nil, err
		}
		resp, err := c.Do(req)
		if err != nil {
			var ue *url.Error
			if errors.As(err, &ue) {
				err = ue.Err // the URL is said once, below
			}
			if errors.Is(err, syscall.ECONNREFUSED) {
				return nil, fmt.Errorf("GET %s: connection refused: nothing listens there (reconcile.fetch)", where)
			}
			return nil, fmt.Errorf("GET %s: %w", where, err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("GET %s: %s", path, resp.Status)
		}
		if f.Prometheus != "" {
			m, err := counters.Prometheus(resp.Body, gauge)
			if err != nil {
				return nil, fmt.Errorf("GET %s: %w", path, err)
			}
			return m, nil
		}
		b, err := counters.ReadAll(resp.Body)
		if err != nil {
			return nil, fmt.Errorf("GET %s: %w", path, err)
		}
		m, err := counters.JSON(b, f.Field)
		if err != nil {
			return nil, fmt.Errorf("GET %s: %w", path, err)
		}
		return m, nil
	}
}

// fetchURL is the URL reconcile.fetch's path or prometheus reads: itself
// when absolute, else a path on the target's host (http:// for ws:// and
// tcp://, https:// for wss://).
func fetchURL(base string, f schema.Fetch) string {
	path := cmp.Or(f.Path, f.Prometheus)
	if strings.Contains(path, "://") {
		return path
	}
	return strings.TrimSuffix(targets.HealthURL(base), "/healthz") + path
}

// fetchTimeout bounds one fetch of the counters.
const fetchTimeout = 5 * time.Second

// memcachedStats sends memcached's text-protocol "stats" command on a
// connection of its own to base's host:port (a tcp:// URL) and reads its
// counters (counters.MemcachedStats), within fetchTimeout. The connection
// is closed after the reply; memcached counts it in total_connections,
// never in the commands the run's rules compare.
func memcachedStats(ctx context.Context, base string) (map[string]float64, error) {
	u, err := url.Parse(base)
	if err != nil || u.Scheme != "tcp" || u.Port() == "" {
		return nil, fmt.Errorf("memcached_stats: the target %s is not a tcp://host:port URL", base)
	}
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", u.Host)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) {
			return nil, fmt.Errorf("stats at %s: connection refused: nothing listens there (reconcile.fetch)", u.Host)
		}
		return nil, fmt.Errorf("stats at %s: %w", u.Host, err)
	}
	defer nc.Close()
	dl, _ := ctx.Deadline()
	nc.SetDeadline(dl)
	// The run's interrupt (ctx cancelled) cuts a write or read under way
	// at once instead of at the deadline.
	defer context.AfterFunc(ctx, func() { nc.SetDeadline(time.Now()) })()
	fail := func(err error) error {
		switch {
		case errors.Is(ctx.Err(), context.Canceled):
			return fmt.Errorf("stats at %s: %w", u.Host, context.Cause(ctx))
		case ctx.Err() != nil || errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, io.EOF):
			return fmt.Errorf("stats at %s: no reply to the text command \"stats\" (%v): %s", u.Host, err, memcachedTextHint)
		}
		return fmt.Errorf("stats at %s: %w", u.Host, err)
	}
	if _, err := nc.Write([]byte("stats\r\n")); err != nil {
		return nil, fail(err)
	}
	m, err := counters.MemcachedStats(nc)
	if err != nil {
		return nil, fail(err)
	}
	return m, nil
}

// memcachedTextHint is what a memcached_stats fetch that got no reply
// says: a memcached started with -B binary does not answer the text
// protocol's stats command.
const memcachedTextHint = "memcached_stats needs memcached's text protocol, which a memcached started with -B binary does not speak: start it with -B auto (the default) or -B ascii"

package frame

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/runner-dev/runner/drivers"
	"github.com/runner-dev/runner/drivers/internal/correlate"
	"github.com/runner-dev/runner/drivers/internal/template"
	"github.com/runner-dev/runner/schema"
)

// Defaults of zero fields of schema.Frame.
const (
	DefaultTimeout = 10 * time.Second
	// MaxCorrelated is the in-flight cap per connection.
	MaxCorrelated = 1 << 16
	// readBuffer is each connection's read buffer: one page, since an
	// idle connection holds it (10,000 idle connections were a goal of
	// under 20 KiB each). Payloads larger than what it holds are skipped
	// through a pooled buffer (skip).
	readBuffer = 4 << 10
)

// Driver sends frames to one target. It is immutable after New apart
// from its counters; Dial is safe for concurrent use.
type Driver struct {
	addr    string
	layout  *Layout
	payload *template.Template   // nil: fixed (file), parts or empty
	fixed   []byte               // payload_file's bytes
	parts   []*template.Template // layout.parts, in order
	data    *template.Data       // the rows column fields read
	cols    []int                // each column field's data column, in field order
	timeout time.Duration
	dialer  net.Dialer

	counts correlate.Counts // replies no request waited for, connections the target ended
}

var (
	_ drivers.Driver         = (*Driver)(nil)
	_ drivers.Inflighter     = (*Driver)(nil)
	_ drivers.StrayCounter   = (*Driver)(nil)
	_ drivers.DeadlineKeeper = (*Driver)(nil)
)

// New builds a driver for cfg against baseURL (tcp://host:port). dir is
// the directory relative file names (payload_file, data) are read from.
// Every problem is reported at once (errors.Join of drivers.ConfigError
// keyed under the driver): a bad URL, no or an unknown preset, a layout
// that does not compile (see Compile), a payload template it does not
// know, an unreadable payload or data file, a data_order or data_seed
// template.SetOrder refuses, a part or payload of any data row longer
// than its length_of field or max_payload allows (checkSizes).
func New(cfg schema.Frame, baseURL, dir string) (*Driver, error) {
	var errs []error
	bad := func(key string, err error) { errs = append(errs, &drivers.ConfigError{Key: key, Err: err}) }
	d := &Driver{timeout: time.Duration(cfg.Timeout)}
	if d.timeout <= 0 {
		d.timeout = DefaultTimeout
	}
	d.dialer.Timeout = d.timeout
	u, err := url.Parse(baseURL)
	switch {
	case err != nil:
		bad("target.url", fmt.Errorf("target url: %w", err))
	case u.Scheme != "tcp":
		bad("target.url", fmt.Errorf("target url %q: scheme must be tcp", baseURL))
	case u.Hostname() == "" || u.Port() == "":
		bad("target.url", fmt.Errorf("target url %q: expected tcp://host:port", baseURL))
	default:
		d.addr = u.Host
	}
	switch {
	case cfg.Preset == "lkdf" && cfg.Layout == nil:
		d.layout = LKDF()
	case cfg.Preset != "":
		bad("preset", fmt.Errorf("preset %q: expected lkdf, and no layout with it", cfg.Preset))
	case cfg.Layout != nil:
		l, err := Compile(cfg.Layout)
		if err != nil {
			errs = append(errs, err)
		}
		d.layout = l
	default:
		bad("preset", errors.New("no preset and no layout"))
	}
	abs := func(p string) string {
		if filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(dir, p)
	}
	var data *template.Data
	if cfg.Data != "" {
		if data, err = template.LoadData(abs(cfg.Data)); err != nil {
			bad("data", err)
		}
	}
	if cfg.Data == "" || data != nil { // else the data file's error says it
		if err := template.SetOrder(data, cfg.DataOrder, cfg.DataSeed); err != nil {
			errs = append(errs, err)
		}
	}
	if d.layout != nil {
		d.compileParts(cfg, data, bad)
	}
	switch {
	case cfg.PayloadFile != "":
		b, err := drivers.ReadFile(abs(cfg.PayloadFile), drivers.MaxFile)
		if err != nil {
			bad("payload_file", err)
		}
		d.fixed = b
	case cfg.Payload != "":
		t, err := template.Parse(cfg.Payload, data)
		if err != nil && (cfg.Data == "" || data != nil) {
			bad("payload", fmt.Errorf("payload: %w", err))
		}
		d.payload = t
	}
	if d.layout != nil && (cfg.Data == "" || data != nil) {
		d.checkSizes(data, bad)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return d, nil
}

// compileParts parses the layout's part templates over data and binds
// its column fields to data's columns, checking every row's value: a
// whole number (decimal, or hexadecimal after 0x) that fits its field.
// Parts replace payload and payload_file.
func (d *Driver) compileParts(cfg schema.Frame, data *template.Data, bad func(string, error)) {
	names, templates := d.layout.Parts()
	if len(names) > 0 && (cfg.Payload != "" || cfg.PayloadFile != "") {
		bad("layout.parts", errors.New("layout.parts make the payload; leave payload and payload_file out"))
	}
	for j, text := range templates {
		t, err := template.Parse(text, data)
		if err != nil && (cfg.Data == "" || data != nil) {
			bad(fmt.Sprintf("layout.parts[%d].template", j), fmt.Errorf("part %s: %w", names[j], err))
		}
		d.parts = append(d.parts, t)
	}
	d.data = data
	for _, c := range d.layout.Columns() {
		key := fmt.Sprintf("layout.fields[%d].column", c.Field)
		switch {
		case cfg.Data == "":
			bad(key, fmt.Errorf("column %s: no data file (driver data: FILE)", c.Name))
			continue
		case data == nil:
			continue // the data file's error says it
		case data.Column(c.Name) < 0:
			bad(key, fmt.Errorf("the data file %s has no column %q; columns: %s", data.File, c.Name, strings.Join(data.Columns, ", ")))
			continue
		}
		k := data.Column(c.Name)
		if err := data.Lacks(k); err != nil {
			bad(key, fmt.Errorf("column %s: %w", c.Name, err))
			continue
		}
		for i, row := range data.Rows {
			if v, ok := parseNumber(row[k]); !ok || v > c.Max {
				bad(key, fmt.Errorf("the data file %s, row %d: column %s is %q; expected a whole number from 0 to %d (decimal without a leading zero, or hexadecimal after 0x)", data.File, i+1, c.Name, row[k], c.Max))
				break
			}
		}
		d.cols = append(d.cols, k)
	}
}

// parseNumber reads a column field's value: decimal digits without a
// leading zero ("010" would read as 10 here and as 8 in C: refused), or
// hexadecimal digits after 0x or 0X (no sign, no underscores:
// strconv.ParseUint with a base other than 0).
func parseNumber(s string) (uint64, bool) {
	base := 10
	if len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') {
		s, base = s[2:], 16
	} else if len(s) > 1 && s[0] == '0' {
		return 0, false
	}
	v, err := strconv.ParseUint(s, base, 64)
	return v, err == nil
}

// checkSizes checks, before any traffic, what every data row would send
// (every row may be: data_order picks them), each rendered at its
// longest ({{seq}} of template.MaxSeqDigits digits; only {{seq}} and
// {{data.NAME}} vary in length): each part with a length_of field
// against what the field holds, and the payload against max_payload.
// Each problem names the data file, the first row with it and how many
// more rows have it, and the part. A request that breaks them would be
// refused at run time (render) as request-too-long, after the load began.
func (d *Driver) checkSizes(data *template.Data, bad func(string, error)) {
	rows := [][]string{nil}
	if data != nil {
		rows = data.Rows
	}
	type problem struct{ row, size, more int }
	parts := make([]problem, len(d.parts))
	var payload problem
	note := func(p *problem, row, size int) {
		if p.size == 0 {
			p.row, p.size = row, size
		} else {
			p.more++
		}
	}
	for i, row := range rows {
		n := 0
		switch {
		case d.parts != nil:
			for j, t := range d.parts {
				if t == nil {
					continue // its parse error says it
				}
				m := t.Size(row)
				n += m
				if d.layout.PartField(j) != "" && uint64(m) > d.layout.PartMax(j) {
					note(&parts[j], i, m)
				}
			}
		case d.payload != nil:
			n = d.payload.Size(row)
		default:
			n = len(d.fixed)
		}
		if int64(n) > d.layout.MaxPayload() {
			note(&payload, i, n)
		}
	}
	where := func(p problem) string {
		if data == nil {
			return ""
		}
		more := ""
		if p.more > 0 {
			more = fmt.Sprintf(" (and %d more rows)", p.more)
		}
		return fmt.Sprintf("the data file %s, row %d%s: ", data.File, p.row+1, more)
	}
	names, _ := d.layout.Parts()
	for j, p := range parts {
		if p.size > 0 {
			bad(fmt.Sprintf("layout.parts[%d].template", j), fmt.Errorf("%spart %s is %d bytes; its length field %s holds at most %d", where(p), names[j], p.size, d.layout.PartField(j), d.layout.PartMax(j)))
		}
	}
	if payload.size > 0 {
		key := "payload"
		if d.parts != nil {
			key = "layout.parts"
		}
		bad(key, fmt.Errorf("%sthe payload is %d bytes; the layout allows at most %d (max_payload)", where(payload), payload.size, d.layout.MaxPayload()))
	}
}

// MaxInflight is MaxCorrelated, capped by the id field's range.
func (d *Driver) MaxInflight() int {
	return int(min(uint64(MaxCorrelated), d.layout.IDMask()))
}

// KeepsDeadline implements drivers.DeadlineKeeper: Do keeps
// Request.Deadline (the wait for the link's writer, the re-dial and the
// wait for the reply end with it), so the engine makes no context per
// request.
func (d *Driver) KeepsDeadline() {}

// Timeout is the per-request timeout.
func (d *Driver) Timeout() time.Duration { return d.timeout }

// Strays returns running totals of late, unknown-id and duplicate-id
// replies and of connections that ended without us closing them, by
// cause: "eof" (the server closed at a frame boundary), "short-read" (in
// the middle of a frame), "reset", or a bad frame's code ("bad-magic",
// "too-long", …).
func (d *Driver) Strays() drivers.Strays { return d.counts.Strays() }

// Dial opens one connection. Errors are classified with drivers.Classify.
func (d *Driver) Dial(ctx context.Context) (drivers.Conn, error) {
	c := &conn{d: d}
	l, err := c.open(ctx)
	if err != nil {
		return nil, err
	}
	c.slot.Set(l)
	return c, nil
}

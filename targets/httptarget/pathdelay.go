package httptarget

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// PathDelays maps paths to the delay of the counted requests to them: it
// replaces Config.Delay for those paths. A key without a trailing slash
// names one path exactly ("/login"); a key with one names every path
// under it ("/items/" matches /items/7, not /items). An exact key wins
// over the subtrees; of the subtrees, the longest wins. The zero value
// (nil) delays no path on its own.
//
// As a flag (--delay-path) it reads PATH=DURATION pairs, comma-separated
// or one per repeated flag: `--delay-path /login=5ms,/items=2ms`.
type PathDelays map[string]time.Duration

// lookup returns the delay of path and whether a key matches it.
func (p PathDelays) lookup(path string) (time.Duration, bool) {
	if len(p) == 0 {
		return 0, false
	}
	if d, ok := p[path]; ok {
		return d, true
	}
	for i := len(path) - 1; i >= 0; i-- {
		if path[i] != '/' {
			continue
		}
		if d, ok := p[path[:i+1]]; ok {
			return d, true
		}
	}
	return 0, false
}

// String renders p as the flag reads it, keys sorted.
func (p PathDelays) String() string {
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for i, k := range keys {
		keys[i] = k + "=" + p[k].String()
	}
	return strings.Join(keys, ",")
}

// pathDelaysFlag is the flag.Value of --delay-path: it adds to *p.
type pathDelaysFlag struct{ p *PathDelays }

func (f pathDelaysFlag) String() string {
	if f.p == nil {
		return ""
	}
	return f.p.String()
}

// Set adds the PATH=DURATION pairs of s. Errors: a pair without "=", a
// path that does not start with "/", a duration without a unit or
// negative, a path given twice.
func (f pathDelaysFlag) Set(s string) error {
	if *f.p == nil {
		*f.p = PathDelays{}
	}
	for pair := range strings.SplitSeq(s, ",") {
		path, dur, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if !ok {
			return fmt.Errorf("%q: want PATH=DURATION, e.g. /login=5ms", pair)
		}
		d, err := time.ParseDuration(dur)
		if err != nil {
			return fmt.Errorf("%q: %q is not a duration (it needs a unit, e.g. 5ms)", pair, dur)
		}
		if _, dup := (*f.p)[path]; dup {
			return fmt.Errorf("%q: path %s given twice", pair, path)
		}
		(*f.p)[path] = d
	}
	return nil
}

// validatePathDelays reports the keys of p that cannot work: one that is
// not a path, one naming a control endpoint (never delayed), a negative
// delay.
func validatePathDelays(p PathDelays) []error {
	var errs []error
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		switch {
		case !strings.HasPrefix(k, "/"):
			errs = append(errs, fmt.Errorf("delay-path %q: a path starts with /", k))
		case k == "/healthz" || k == "/stats":
			errs = append(errs, fmt.Errorf("delay-path %s: a control endpoint is never delayed", k))
		case p[k] < 0:
			errs = append(errs, fmt.Errorf("delay-path %s=%s: must not be negative", k, p[k]))
		}
	}
	return errs
}

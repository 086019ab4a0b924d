package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// What each unit-bearing value looks like, for messages.
const (
	durationWant = "a duration with unit (us|ms|s|m), e.g. 30s"
	rateWant     = "a rate with unit (N/s|N/m), e.g. 10/s"
	sizeWant     = "a size with unit (B|KiB|MiB|GiB), e.g. 512KiB"
)

// ParseDuration parses a duration with an explicit unit in Go syntax
// (`250us`, `5ms`, `1m30s`; units ns, us, µs, ms, s, m, h). A bare number,
// even 0, is an error, and so is a duration beyond ±MaxDuration. Negative
// values parse; callers decide what they allow.
func ParseDuration(s string) (Duration, error) {
	d, err := parseDuration(s)
	if err != nil {
		return 0, unitError(err, "duration", s)
	}
	return d, nil
}

// MaxDuration is the longest duration a scenario can hold: the range of a
// time.Duration, 2562047h47m16.854775807s (about 292 years).
const MaxDuration = Duration(math.MaxInt64)

// Why a value with a unit was rejected.
var (
	// errSyntax: the text is not a value of the unit's syntax.
	errSyntax = errors.New("syntax")
	// errRange: the text has the syntax but its value is out of range.
	errRange = errors.New("range")
	// errFine: a duration with a fraction of a nanosecond, which Go's
	// parser drops without a word ("0.5ns" would be 0).
	errFine = errors.New("finer than a nanosecond")
)

// durationTerm is one number-and-unit term of a duration.
var durationTerm = regexp.MustCompile(`([0-9]*(?:\.[0-9]*)?)(ns|us|µs|μs|ms|s|m|h)`)

// unitNanos is each duration unit in nanoseconds.
var unitNanos = map[string]int64{"ns": 1, "us": 1e3, "µs": 1e3, "μs": 1e3, "ms": 1e6, "s": 1e9, "m": 60e9, "h": 3600e9}

// wholeNanos reports whether the duration text s (Go's syntax, already
// parsed) is a whole number of nanoseconds, summing its terms exactly.
func wholeNanos(s string) bool {
	sum := new(big.Rat)
	for _, m := range durationTerm.FindAllStringSubmatch(s, -1) {
		v, ok := new(big.Rat).SetString(m[1])
		if !ok {
			return true // not a number the sum can check; the parser took it
		}
		sum.Add(sum, v.Mul(v, new(big.Rat).SetInt64(unitNanos[m[2]])))
	}
	return sum.IsInt()
}

// durationSyntax is Go's duration syntax (time.ParseDuration), so that a
// value it matches and time.ParseDuration rejects can only have overflowed.
var durationSyntax = regexp.MustCompile(`^[-+]?(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:ns|us|µs|μs|ms|s|m|h))+$`)

func parseDuration(s string) (Duration, error) {
	if strings.Trim(s, "+-0123456789.") == "" {
		return 0, errSyntax // no unit: "0" and "30" are rejected although Go accepts "0"
	}
	d, err := time.ParseDuration(s)
	switch {
	case err == nil && !wholeNanos(s):
		return 0, errFine
	case err == nil:
		return Duration(d), nil
	case durationSyntax.MatchString(s):
		return 0, errRange
	}
	return 0, errSyntax
}

// unitError explains why text, a value of the named kind ("duration",
// "rate", "size"), was rejected by its parser with err.
func unitError(err error, kind, text string) error {
	return errors.New(unitProblem(err, kind, quote(text)))
}

// unitProblem is unitError's message, with the value already rendered as
// shown (quoted, or its source text when it was interpolated).
func unitProblem(err error, kind, shown string) string {
	if errors.Is(err, errFine) {
		return fmt.Sprintf("duration %s has a fraction of a nanosecond, the finest unit; write whole nanoseconds", shown)
	}
	if errors.Is(err, errRange) {
		switch kind {
		case "duration":
			return fmt.Sprintf("duration %s overflows: the longest is %s (about 292 years)", shown, Duration(MaxDuration.D().Truncate(time.Hour)))
		case "rate":
			return fmt.Sprintf("rate %s is above the maximum of %s: one generator cannot pace more; split the load across generators", shown, MaxRate)
		case "size":
			return fmt.Sprintf("size %s overflows: the largest is %s", shown, Size(math.MaxInt64/(1<<30)*(1<<30)))
		}
	}
	want := map[string]string{"duration": durationWant, "rate": rateWant, "size": sizeWant}[kind]
	return fmt.Sprintf("expected %s; found %s", want, shown)
}

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// String renders d in the largest unit that represents it exactly
// (`2h`, `90s`, `1500ms`, `250us`), so that ParseDuration(d.String()) == d.
func (d Duration) String() string {
	if d == 0 {
		return "0s"
	}
	units := []struct {
		name string
		size time.Duration
	}{{"h", time.Hour}, {"m", time.Minute}, {"s", time.Second}, {"ms", time.Millisecond}, {"us", time.Microsecond}}
	td := time.Duration(d)
	for _, u := range units {
		if td%u.size == 0 {
			return strconv.FormatInt(int64(td/u.size), 10) + u.name
		}
	}
	return strconv.FormatInt(int64(td), 10) + "ns"
}

// MarshalJSON writes d as a string in the unit syntax, e.g. "250ms".
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON reads a string in the unit syntax, as ParseDuration does.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("expected %s: %w", durationWant, err)
	}
	v, err := ParseDuration(s)
	if err != nil {
		return err
	}
	*d = v
	return nil
}

var rateSyntax = regexp.MustCompile(`^([+-]?(?:[0-9]+(?:\.[0-9]+)?|\.[0-9]+))/([sm])$`)

// MaxRate is the highest arrival rate a scenario may ask for (an arrival
// every 100ns): one generator cannot pace more, and a higher load is split
// across generators. It also keeps every count and interval derived from a
// rate well inside the range of an int64.
const MaxRate Rate = 10_000_000

// ParseRate parses an arrival rate `N/s` or `N/m` (N a decimal number, e.g.
// `300/s`, `0.5/s`, `600/m`) into requests per second: 600/m is 10.
// A rate above MaxRate is an error. Negative and zero rates parse; callers
// decide what they allow.
func ParseRate(s string) (Rate, error) {
	r, err := parseRate(s)
	if err != nil {
		return 0, unitError(err, "rate", s)
	}
	return r, nil
}

func parseRate(s string) (Rate, error) {
	m := rateSyntax.FindStringSubmatch(s)
	if m == nil {
		return 0, errSyntax
	}
	// The syntax leaves only range errors, which make n ±Inf: +Inf is
	// above MaxRate, and -Inf is a negative rate, which callers reject.
	n, _ := strconv.ParseFloat(m[1], 64)
	if m[2] == "m" {
		n /= 60
	}
	if n > float64(MaxRate) {
		return 0, errRange
	}
	return Rate(n), nil
}

// String renders r as `N/s`, or as `N/m` when r is a whole number per
// minute that would need many decimals per second (1/m, not
// 0.016666666666666666/s). ParseRate(r.String()) == r.
func (r Rate) String() string {
	f := float64(r)
	perSecond := strconv.FormatFloat(f, 'f', -1, 64)
	if i := strings.IndexByte(perSecond, '.'); i < 0 || len(perSecond)-i-1 <= 3 {
		return perSecond + "/s"
	}
	if perMinute := math.Round(f * 60); perMinute/60 == f {
		return strconv.FormatFloat(perMinute, 'f', -1, 64) + "/m"
	}
	return perSecond + "/s"
}

// MarshalJSON writes r as a string in the unit syntax, e.g. "300/s".
func (r Rate) MarshalJSON() ([]byte, error) { return json.Marshal(r.String()) }

// UnmarshalJSON reads a string in the unit syntax, as ParseRate does.
func (r *Rate) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("expected %s: %w", rateWant, err)
	}
	v, err := ParseRate(s)
	if err != nil {
		return err
	}
	*r = v
	return nil
}

// String renders a constant rate as `300/s` and a ramp as `10/s→100/s`.
func (rs RateSpec) String() string {
	if !rs.Ramp {
		return rs.From.String()
	}
	return rs.From.String() + "→" + rs.To.String()
}

// MarshalJSON writes a constant rate as a string ("300/s") and a ramp as
// {"from": "10/s", "to": "100/s"}, as the scenario file writes them.
func (rs RateSpec) MarshalJSON() ([]byte, error) {
	if !rs.Ramp {
		return json.Marshal(rs.From)
	}
	return json.Marshal(struct {
		From Rate `json:"from"`
		To   Rate `json:"to"`
	}{rs.From, rs.To})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (rs *RateSpec) UnmarshalJSON(b []byte) error {
	var r Rate
	if err := json.Unmarshal(b, &r); err == nil {
		*rs = RateSpec{From: r, To: r}
		return nil
	}
	var ramp struct {
		From *Rate `json:"from"`
		To   *Rate `json:"to"`
	}
	if err := json.Unmarshal(b, &ramp); err != nil || ramp.From == nil || ramp.To == nil {
		return fmt.Errorf("expected %s or a ramp {\"from\": \"10/s\", \"to\": \"100/s\"}", rateWant)
	}
	*rs = RateSpec{From: *ramp.From, To: *ramp.To, Ramp: true}
	return nil
}

var sizeSyntax = regexp.MustCompile(`^([0-9]+)(B|KiB|MiB|GiB)$`)

var sizeUnits = []struct {
	name string
	size int64
}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}}

// ParseSize parses a byte count with a binary unit: `100B`, `512KiB`,
// `1MiB`, `2GiB`. There is no default unit and no fraction.
func ParseSize(s string) (Size, error) {
	v, err := parseSize(s)
	if err != nil {
		return 0, unitError(err, "size", s)
	}
	return v, nil
}

func parseSize(s string) (Size, error) {
	m := sizeSyntax.FindStringSubmatch(s)
	if m == nil {
		return 0, errSyntax
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		return 0, errRange // the syntax leaves only range errors
	}
	for _, u := range sizeUnits {
		if u.name == m[2] {
			if n > math.MaxInt64/u.size {
				return 0, errRange
			}
			return Size(n * u.size), nil
		}
	}
	return 0, errSyntax
}

// String renders s in the largest binary unit that represents it exactly
// (`1MiB`, `512KiB`, `1536B`), so that ParseSize(s.String()) == s.
func (s Size) String() string {
	for _, u := range sizeUnits {
		if s != 0 && int64(s)%u.size == 0 {
			return strconv.FormatInt(int64(s)/u.size, 10) + u.name
		}
	}
	return strconv.FormatInt(int64(s), 10) + "B"
}

// MarshalJSON writes s as a string in the unit syntax, e.g. "512KiB".
func (s Size) MarshalJSON() ([]byte, error) { return json.Marshal(s.String()) }

// UnmarshalJSON reads a string in the unit syntax, as ParseSize does.
func (s *Size) UnmarshalJSON(b []byte) error {
	var str string
	if err := json.Unmarshal(b, &str); err != nil {
		return fmt.Errorf("expected %s: %w", sizeWant, err)
	}
	v, err := ParseSize(str)
	if err != nil {
		return err
	}
	*s = v
	return nil
}

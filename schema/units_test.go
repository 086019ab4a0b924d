package schema

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
	}{
		{"250us", 250 * time.Microsecond},
		{"250µs", 250 * time.Microsecond},
		{"5ms", 5 * time.Millisecond},
		{"2s", 2 * time.Second},
		{"1m", time.Minute},
		{"1m30s", 90 * time.Second},
		{"1.5s", 1500 * time.Millisecond},
		{"2h", 2 * time.Hour},
		{"0s", 0},             // parses; where zero is allowed is the validator's call
		{"-1s", -time.Second}, // likewise
	} {
		d, err := ParseDuration(tc.in)
		if err != nil || d.D() != tc.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", tc.in, d.D(), err, tc.want)
		}
	}
	// A fraction of a nanosecond is refused, not dropped (Go's parser
	// reads 0.5ns as 0 and 1.5ns as 1ns).
	for _, in := range []string{"0.5ns", "1.5ns", "0.0001us", "1.0000000001s"} {
		if d, err := ParseDuration(in); err == nil || !strings.Contains(err.Error(), "a fraction of a nanosecond") {
			t.Errorf("ParseDuration(%q) = %v, %v; want refused", in, d.D(), err)
		}
	}
	for _, in := range []string{"1.0ns", "0.001us", "1.000000001s", "1h0.5m"} {
		if _, err := ParseDuration(in); err != nil {
			t.Errorf("ParseDuration(%q): %v, want whole nanoseconds accepted", in, err)
		}
	}
	for _, in := range []string{"", "30", "0", "-5", "1.5", "30 s", "30sec", "s", "1d"} {
		if d, err := ParseDuration(in); err == nil {
			t.Errorf("ParseDuration(%q) = %v, want an error", in, d)
		} else if !strings.Contains(err.Error(), "expected a duration with unit (us|ms|s|m)") {
			t.Errorf("ParseDuration(%q): %v", in, err)
		}
	}
}

func TestParseRate(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Rate
	}{
		{"300/s", 300},
		{"600/m", 10}, // per minute, stored per second
		{"0.5/s", 0.5},
		{".5/s", 0.5},
		{"1/m", 1.0 / 60},
		{"0/s", 0},
		{"-5/s", -5}, // parses; the validator says a rate must be positive
	} {
		r, err := ParseRate(tc.in)
		if err != nil || r != tc.want {
			t.Errorf("ParseRate(%q) = %v, %v; want %v", tc.in, r, err, tc.want)
		}
	}
	for _, in := range []string{"", "10", "10/h", "10/min", "10/sec", "/s", "1e3/s", "inf/s", "NaN/s", "10 /s", "0x10/s", strings.Repeat("9", 400) + "/s"} {
		if r, err := ParseRate(in); err == nil {
			t.Errorf("ParseRate(%q) = %v, want an error", in, r)
		}
	}
}

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Size
	}{
		{"100B", 100},
		{"512KiB", 512 << 10},
		{"1MiB", 1 << 20},
		{"2GiB", 2 << 30},
		{"0B", 0},
	} {
		s, err := ParseSize(tc.in)
		if err != nil || s != tc.want {
			t.Errorf("ParseSize(%q) = %v, %v; want %v", tc.in, s, err, tc.want)
		}
	}
	for _, in := range []string{"", "512", "1.5MiB", "1KB", "1kib", "-1B", "1 KiB", "9999999999GiB"} {
		if s, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) = %v, want an error", in, s)
		}
	}
}

// A value with the right syntax but out of range says so, rather than
// that the unit is missing.
func TestUnitsOutOfRange(t *testing.T) {
	duration := func(s string) error { _, err := ParseDuration(s); return err }
	rate := func(s string) error { _, err := ParseRate(s); return err }
	size := func(s string) error { _, err := ParseSize(s); return err }
	for _, tc := range []struct {
		parse    func(string) error
		in, want string
	}{
		{duration, "99999999999999999h", `duration "99999999999999999h" overflows: the longest is 2562047h (about 292 years)`},
		{duration, "2562048h", `duration "2562048h" overflows`},
		{duration, "-2562048h", `duration "-2562048h" overflows`},
		{duration, "2562047h47m16.854775808s", `overflows`},
		{duration, "2562047h47m16.854775807s", ""}, // MaxDuration itself
		{duration, "1e3s", "expected a duration with unit"},
		{rate, "10000001/s", `rate "10000001/s" is above the maximum of 10000000/s: one generator cannot pace more; split the load across generators`},
		{rate, "1000000000000000000000000/s", `rate "1000000000000000000000000/s" is above the maximum`},
		{rate, strings.Repeat("9", 400) + "/s", "is above the maximum"},
		{rate, "600000001/m", "is above the maximum"},
		{rate, "10000000/s", ""},
		{rate, "600000000/m", ""},
		{size, "9999999999GiB", `size "9999999999GiB" overflows: the largest is 8589934591GiB`},
		{size, "99999999999999999999B", "overflows"},
		{size, "8589934591GiB", ""},
	} {
		err := tc.parse(tc.in)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q: %v, want no error", tc.in, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%q: %v, want …%s…", tc.in, err, tc.want)
		}
	}
}

func TestUnitStrings(t *testing.T) {
	for _, tc := range []struct {
		v    fmt.Stringer
		want string
	}{
		{Duration(0), "0s"},
		{Duration(2 * time.Hour), "2h"},
		{Duration(90 * time.Minute), "90m"},
		{Duration(90 * time.Second), "90s"},
		{Duration(1500 * time.Millisecond), "1500ms"},
		{Duration(250 * time.Microsecond), "250us"},
		{Duration(1500), "1500ns"},
		{Duration(-time.Second), "-1s"},
		{Rate(300), "300/s"},
		{Rate(0.5), "0.5/s"},
		{Rate(0.125), "0.125/s"},
		{Rate(1.0 / 60), "1/m"},
		{Rate(20.0 / 60), "20/m"},
		{Size(0), "0B"},
		{Size(100), "100B"},
		{Size(1536), "1536B"},
		{Size(512 << 10), "512KiB"},
		{Size(1 << 20), "1MiB"},
		{Size(3 << 30), "3GiB"},
		{RateSpec{From: 300, To: 300}, "300/s"},
		{RateSpec{From: 10, To: 100, Ramp: true}, "10/s→100/s"},
	} {
		if got := tc.v.String(); got != tc.want {
			t.Errorf("%T(%v).String() = %q, want %q", tc.v, tc.v, got, tc.want)
		}
	}
}

// TestUnitStringsRoundTrip: String writes what Parse reads back exactly.
func TestUnitStringsRoundTrip(t *testing.T) {
	for _, d := range []Duration{1, 999, Duration(time.Hour + 1), Duration(36 * time.Hour), Duration(-3 * time.Millisecond)} {
		if got, err := ParseDuration(d.String()); err != nil || got != d {
			t.Errorf("duration %d → %q → %d, %v", int64(d), d.String(), int64(got), err)
		}
	}
	for _, r := range []Rate{1, 0.1, 1.0 / 3, 1.0 / 60, 7.0 / 60, 0.1 / 60, 1e-7, 123456.789} {
		if got, err := ParseRate(r.String()); err != nil || got != r {
			t.Errorf("rate %v → %q → %v, %v", float64(r), r.String(), float64(got), err)
		}
	}
	for _, s := range []Size{1, 1023, 1024, 1<<40 + 1, 5 << 30} {
		if got, err := ParseSize(s.String()); err != nil || got != s {
			t.Errorf("size %d → %q → %d, %v", s, s.String(), got, err)
		}
	}
}

// TestScenarioJSON: a scenario goes into a JSON report with its units
// written as in the file, and comes back out equal.
func TestScenarioJSON(t *testing.T) {
	s := mustParse(t, head+`phases:
  - {name: steady, open: {rate: 500/s}, duration: 3s}
  - {name: up, open: {rate: {from: 1/m, to: 100/s}}, duration: 1m}
  - {name: stairs, ramp: {connections: {from: 0, to: 16, step: 4, every: 250ms}}}
assert: [p99 < 20ms, {rule: errors == 0, phase: steady}]
`)
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"rate":"500/s"`, `"duration":"3s"`, `"rate":{"from":"1/m","to":"100/s"}`, `"every":"250ms"`, `"timeout":"10s"`, `{"rule":"errors == 0","phase":"steady"}`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("JSON lacks %s:\n%s", want, b)
		}
	}
	var back Scenario
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&back, jsonView(s)) {
		t.Errorf("round trip differs:\n got %+v\nwant %+v", back, *jsonView(s))
	}
}

// jsonView is s without the fields that JSON leaves out, and with the
// empty lists and maps that omitempty drops made nil.
func jsonView(s *Scenario) *Scenario {
	c := *s
	c.File, c.Secrets, c.pos = "", nil, nil
	if len(c.Target.Args) == 0 {
		c.Target.Args = nil
	}
	if h := c.Driver.HTTP; h != nil && len(h.Headers) == 0 {
		hc := *h
		hc.Headers = nil
		c.Driver.HTTP = &hc
	}
	strip := func(rules []Rule) []Rule {
		if len(rules) == 0 {
			return nil
		}
		out := make([]Rule, len(rules))
		for i, r := range rules {
			out[i] = Rule{Expr: r.Expr, Phase: r.Phase}
		}
		return out
	}
	c.Assert = strip(c.Assert)
	if c.Reconcile != nil {
		rc := *c.Reconcile
		rc.Expect = strip(rc.Expect)
		c.Reconcile = &rc
	}
	return &c
}

func TestUnitJSONErrors(t *testing.T) {
	var d Duration
	var r Rate
	var rs RateSpec
	var s Size
	for _, tc := range []struct {
		in string
		v  any
	}{
		{`30`, &d}, {`"30"`, &d}, {`10`, &r}, {`"10/h"`, &r}, {`{"from":"1/s"}`, &rs}, {`[]`, &rs}, {`512`, &s}, {`"1KB"`, &s},
	} {
		if err := json.Unmarshal([]byte(tc.in), tc.v); err == nil {
			t.Errorf("unmarshal %s into %T: no error", tc.in, tc.v)
		}
	}
}

func ExampleParseRate() {
	r, _ := ParseRate("600/m")
	fmt.Println(float64(r), r)
	// Output: 10 10/s
}

func ExampleParse() {
	src := `version: 1
target: {serve: http}
driver: {http: {timeout: 2s}}
phases:
  - open: {rate: 10, inflight: "five"}
    duration: 30
`
	_, err := Parse("quick.yaml", []byte(src), nil)
	fmt.Println(err)
	// Output:
	// quick.yaml:5:18: phases[0].open.rate: expected a rate with unit (N/s|N/m), e.g. 10/s; found 10
	// quick.yaml:5:32: phases[0].open.inflight: expected an integer, found string "five"
	// quick.yaml:6:15: phases[0].duration: expected a duration with unit (us|ms|s|m), e.g. 30s; found 30
}

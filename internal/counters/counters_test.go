package counters

import (
	"strings"
	"testing"
)

func TestJSON(t *testing.T) {
	got, err := JSON([]byte(`{"cmd":"stats","stats":{"ok":12,"limited":3,"by":{"x":1.5},"name":"gw"}}`), "stats")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"ok": 12, "limited": 3, "by.x": 1.5}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	// Exact integers up to 2^53.
	if got, _ := JSON([]byte(`{"n": 9007199254740992}`), ""); got["n"] != 9007199254740992 {
		t.Errorf("n = %v", got["n"])
	}
	for in, want := range map[string]string{
		`nope`:                "not JSON",
		`[1]`:                 "the reply is not a JSON object",
		`{"stats": 3}`:        "stats is not a JSON object",
		`{"other": {"a": 1}}`: "no field stats in the reply; it has other",
	} {
		field := "stats"
		if in == `[1]` || in == `nope` {
			field = ""
		}
		if _, err := JSON([]byte(in), field); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("JSON(%s): %v, want %q", in, err, want)
		}
	}
}

func TestPrometheus(t *testing.T) {
	text := `# HELP requests_total Requests.
# TYPE requests_total counter
requests_total{code="503",method="GET"} 7
requests_total{method="GET",code="200"} 93
# TYPE inflight gauge
inflight 2
plain 5
# TYPE latency summary
latency{quantile="0.5"} 0.1
latency_sum 12.5
latency_count 100
`
	// Gauges are left out unless asked for by name.
	for _, tc := range []struct {
		gauge  func(string) bool
		gauges map[string]float64
	}{
		{nil, nil},
		{func(n string) bool { return n == "inflight" }, map[string]float64{"inflight": 2}},
		{func(n string) bool { return n == "other" }, nil},
	} {
		got, err := Prometheus(strings.NewReader(text), tc.gauge)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]float64{
			`requests_total{code="503",method="GET"}`: 7,
			`requests_total{code="200",method="GET"}`: 93,
			"plain": 5, "latency_sum": 12.5, "latency_count": 100,
		}
		for k, v := range tc.gauges {
			want[k] = v
		}
		if len(got) != len(want) {
			t.Errorf("got %v, want %v", got, want)
		}
		for k, v := range want {
			if g, ok := got[k]; !ok || g != v {
				t.Errorf("%s = %v (present %v), want %v; all: %v", k, g, ok, v, got)
			}
		}
	}
	// NaN and ±Inf (HAProxy's check counters of a server without
	// checks) are no counts, and no JSON result could hold them.
	got, err := Prometheus(strings.NewReader("# TYPE a counter\na NaN\nb +Inf\nc -Inf\nd 1\n"), nil)
	if err != nil || len(got) != 1 || got["d"] != 1 {
		t.Errorf("non-finite samples: %v, %v", got, err)
	}
	if _, err := Prometheus(strings.NewReader("a{ 1\n"), nil); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("malformed: %v", err)
	}
}

func FuzzPrometheus(f *testing.F) {
	f.Add("a 1\n")
	f.Add("# TYPE x counter\nx{a=\"b\"} 2\n")
	f.Fuzz(func(t *testing.T, s string) {
		Prometheus(strings.NewReader(s), func(string) bool { return true })
	})
}

func FuzzJSON(f *testing.F) {
	f.Add(`{"a":{"b":1}}`, "a")
	f.Fuzz(func(t *testing.T, s, field string) {
		JSON([]byte(s), field)
	})
}

// Ambiguous readings are errors, never a silent pick (the breaker's
// findings): a dotted name colliding with a nested one, a duplicate
// series, trailing data.
func TestAmbiguous(t *testing.T) {
	if _, err := JSON([]byte(`{"a.b": 1, "a": {"b": 2}}`), ""); err == nil || !strings.Contains(err.Error(), "counter a.b given twice") {
		t.Errorf("collision: %v", err)
	}
	if _, err := JSON([]byte(`{"a": 1} {"a": 2}`), ""); err == nil || !strings.Contains(err.Error(), "more after the first value") {
		t.Errorf("trailing: %v", err)
	}
	if _, err := Prometheus(strings.NewReader("messages 500\nmessages 0\n"), nil); err == nil || !strings.Contains(err.Error(), "messages") {
		t.Errorf("duplicate series: %v", err)
	}
	if _, err := Prometheus(strings.NewReader("m{a=\"1\",b=\"2\"} 1\nm{b=\"2\",a=\"1\"} 2\n"), nil); err == nil {
		t.Error("duplicate series with labels in another order accepted")
	}
}

// A rule may write a series' labels in any order and with spaces: the
// canonical form sorts them as Prometheus does; what is not a series of
// the text format is left as written.
func TestCanonical(t *testing.T) {
	for in, want := range map[string]string{
		`haproxy_backend_http_responses_total{proxy="be",code="2xx"}`: `haproxy_backend_http_responses_total{code="2xx",proxy="be"}`,
		`haproxy_backend_http_responses_total{code="2xx",proxy="be"}`: `haproxy_backend_http_responses_total{code="2xx",proxy="be"}`,
		`requests_total{ method = "GET" , code="503" }`:               `requests_total{code="503",method="GET"}`,
		`m{a="x\"y"}`:                  `m{a="x\"y"}`,
		`plain`:                        `plain`,
		`group.requests`:               `group.requests`,
		`m{a="1"} trailing`:            `m{a="1"} trailing`,
		`m{a="1"} 5`:                   `m{a="1"} 5`,
		`m{a="1"}` + "\n" + `n{b="2"}`: `m{a="1"}` + "\n" + `n{b="2"}`,
		`m{b="2",`:                     `m{b="2",`,
	} {
		if got := Canonical(in); got != want {
			t.Errorf("Canonical(%s) = %s, want %s", in, got, want)
		}
	}
	// The canonical form is the name Prometheus gives the series.
	text := "# TYPE r counter\nr{z=\"1\",a=\"2\"} 4\n"
	got, err := Prometheus(strings.NewReader(text), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got[Canonical(`r{z="1",a="2"}`)] != 4 {
		t.Errorf("Canonical(r{z=\"1\",a=\"2\"}) = %s is not among %v", Canonical(`r{z="1",a="2"}`), got)
	}
}

// Canonical never panics, and its form is its own canonical form.
func FuzzCanonical(f *testing.F) {
	f.Add(`m{b="2",a="1"}`)
	f.Add(`haproxy_backend_http_responses_total{proxy="be", code="2xx"}`)
	f.Add(`group.requests`)
	f.Fuzz(func(t *testing.T, s string) {
		c := Canonical(s)
		if again := Canonical(c); again != c {
			t.Errorf("Canonical(%q) = %q, but Canonical(%q) = %q", s, c, c, again)
		}
	})
}

// TestReadingTooLarge, from the breaker: a Prometheus body over 1 MiB was
// cut silently, its later series "not fetched" without a word of the
// size, or a parse error mid-line. A reading larger than MaxSize is an
// error that says so; one of exactly MaxSize is read.
func TestReadingTooLarge(t *testing.T) {
	line := "x_total 1\n"
	big := strings.Repeat("# filler comment line\n", MaxSize/22+1) + line
	if _, err := Prometheus(strings.NewReader(big), nil); err == nil || !strings.Contains(err.Error(), "larger than 1 MiB") {
		t.Errorf("a %d-byte exposition: %v, want an error naming the size", len(big), err)
	}
	exact := strings.Repeat("#", MaxSize-len(line)-1) + "\n" + line
	if m, err := Prometheus(strings.NewReader(exact), nil); err != nil || m["x_total"] != 1 {
		t.Errorf("an exposition of exactly %d bytes: %v %v, want x_total 1", len(exact), m, err)
	}
}

func TestMemcachedStats(t *testing.T) {
	// As memcached 1.6 answers, cut short.
	reply := "STAT pid 4242\r\nSTAT uptime 12\r\nSTAT version 1.6.18\r\nSTAT libevent 2.1.12-stable\r\n" +
		"STAT rusage_user 0.041000\r\nSTAT cmd_get 12000\r\nSTAT get_hits 8000\r\nSTAT get_misses 4000\r\nEND\r\n" +
		"STAT after_end 1\r\n"
	got, err := MemcachedStats(strings.NewReader(reply))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"pid": 4242, "uptime": 12, "rusage_user": 0.041, "cmd_get": 12000, "get_hits": 8000, "get_misses": 4000}
	if len(got) != len(want) {
		t.Errorf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	for _, c := range []struct{ reply, want string }{
		{"ERROR\r\n", `memcached refused stats: "ERROR"`},
		{"CLIENT_ERROR bad command line format\r\n", `memcached refused stats: "CLIENT_ERROR bad command line format"`},
		{"STAT cmd_get 1\r\nSTAT cmd_get 2\r\nEND\r\n", "line 2: stat cmd_get given twice"},
		{"STAT cmd_get 1\r\n", "the reply ended at line 2 before its END line"},
		{"HTTP/1.1 400 Bad Request\r\n", `line 1 is not a STAT line: "HTTP/1.1 400 Bad Request"`},
		{"STAT a 1\r\n" + strings.Repeat("STAT padding 1 2 3\r\n", 2), `line 2 is not a STAT line: "STAT padding 1 2 3"`},
		{strings.Repeat("STAT x", MaxSize), "no END within 1 MiB"},
	} {
		if _, err := MemcachedStats(strings.NewReader(c.reply)); err == nil || err.Error() != c.want && !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%.40q: %v, want %q", c.reply, err, c.want)
		}
	}
}

package metric

import (
	"time"

	"github.com/runner-dev/runner/engine/measure"
)

// stat is one statistic of a latency distribution.
type stat struct {
	name string // in rules, after the group: p99
	json string // in the distribution's JSON object: p99_ms
	p    float64
	read func(*measure.Dist) (time.Duration, bool)
}

// stats are a distribution's statistics in rules' display order.
var stats = []stat{
	{"p50", "p50_ms", 50, nil}, {"p90", "p90_ms", 90, nil}, {"p95", "p95_ms", 95, nil},
	{"p99", "p99_ms", 99, nil}, {"p999", "p999_ms", 99.9, nil},
	{"max", "max_ms", 0, (*measure.Dist).Max},
	{"min", "min_ms", 0, (*measure.Dist).Min},
	{"mean", "mean_ms", 0, (*measure.Dist).Mean},
	{"stddev", "", 0, (*measure.Dist).Stddev},
}

// latency declares the statistics of d, then its sample count (JSON
// only: the response time's count is the top-level `samples`). tsv names
// the statistics with a TSV column, across those in the repeat summary,
// compare those compared with their position.
func latency(d *Dist, tsv map[string]string, across map[string]bool, compare map[string]int) []Def {
	var out []Def
	for _, st := range stats {
		name := st.name
		if d.Group != "" {
			name = d.Group + "." + name
		}
		if !d.Rules {
			name = ""
		}
		json := ""
		if d.JSON != "" && st.json != "" {
			json = d.JSON + "." + st.json
		}
		if name == "" && json == "" && tsv[st.name] == "" {
			continue // nothing reads it (send_lag's stddev)
		}
		acrossKey := ""
		if across[st.name] {
			acrossKey = st.json
		}
		read := st.read
		if st.p > 0 {
			q := st.p
			read = func(x *measure.Dist) (time.Duration, bool) { return x.Percentile(q) }
		}
		of := d.Of
		out = append(out, Def{
			Name: name, JSON: json, TSV: tsv[st.name], Missing: "n/a", Across: acrossKey,
			Compare: compare[st.name], Judged: true,
			Unit: Duration, Worse: HigherIsWorse, Need: Samples, Dist: d, P: st.p, Step: d.Step && name != "",
			Read: func(p *Phase) (float64, bool) {
				x := of(p)
				if x == nil {
					return 0, false
				}
				v, ok := read(x)
				return float64(v), ok
			},
		})
	}
	return out
}

// samplesOf declares the JSON sample count of d (Rule name "").
func samplesOf(d *Dist) Def {
	return Def{JSON: d.JSON + ".samples", Unit: Count, Read: func(p *Phase) (float64, bool) {
		x := d.Of(p)
		if x == nil {
			return 0, false
		}
		return float64(x.Count()), true
	}}
}

// count declares a counter of the Summary.
func count(name string, worse Direction, n func(*measure.Summary) int64) Def {
	return Def{Name: name, Unit: Count, Worse: worse, Read: func(p *Phase) (float64, bool) { return float64(n(p.summary())), true }}
}

// rate declares a per-second rate of the Summary (0 when its window is
// empty: Need Elapsed).
func rate(name, json string, worse Direction, r func(*measure.Summary) float64) Def {
	return Def{Name: name, JSON: json, Unit: PerSecond, Worse: worse, Need: Elapsed,
		Read: func(p *Phase) (float64, bool) { return r(p.summary()), true }}
}

func with(d Def, f func(*Def)) Def { f(&d); return d }

// builtin is the catalogue: the response time's statistics first, then
// the counts and rates, the other distributions, and the resources, in
// the order `runner validate` lists them.
func builtin() []Def {
	var t []Def
	t = append(t, latency(Response,
		map[string]string{"p50": "p50", "p95": "p95", "p99": "p99", "p90": "p90", "p999": "p999", "max": "max", "mean": "mean"},
		map[string]bool{"p50": true, "p90": true, "p95": true, "p99": true, "p999": true, "max": true, "mean": true},
		map[string]int{"p50": 2, "p90": 3, "p99": 4, "p999": 5, "mean": 6})...)
	perStep := func(d Def) Def { d.Step = true; return d }
	t = append(t,
		perStep(with(count("requests", LowerIsWorse, func(s *measure.Summary) int64 { return s.Requests }), func(d *Def) { d.TSV = "requests" })),
		perStep(with(count("ok", LowerIsWorse, func(s *measure.Summary) int64 { return s.OK }), func(d *Def) { d.TSV = "ok" })),
		perStep(with(count("errors", HigherIsWorse, func(s *measure.Summary) int64 { return s.Errors }), func(d *Def) { d.TSV, d.Across = "errors", "errors" })),
		perStep(Def{Name: "error_rate", JSON: "error_rate", TSV: "error_rate", Missing: "n/a", Across: "error_rate", Compare: 7, Judged: true,
			Unit: Fraction, Worse: HigherIsWorse, Need: Requests,
			// errors / requests.
			Read: func(p *Phase) (float64, bool) { return p.summary().ErrorRate() }}),
		perStep(count("timeouts", HigherIsWorse, func(s *measure.Summary) int64 { return s.Timeouts })),
		perStep(count("late", HigherIsWorse, func(s *measure.Summary) int64 { return s.Late })),
		count("unknown_id", HigherIsWorse, func(s *measure.Summary) int64 { return s.UnknownID }),
		count("duplicate_id", HigherIsWorse, func(s *measure.Summary) int64 { return s.DuplicateID }),
		with(count("dropped", HigherIsWorse, func(s *measure.Summary) int64 { return s.Dropped }), func(d *Def) { d.TSV, d.Across = "dropped", "dropped" }),
		perStep(with(count("arrivals", Neutral, func(s *measure.Summary) int64 { return s.Arrivals }), func(d *Def) { d.TSV = "arrivals" })),
		perStep(with(count("cancelled", HigherIsWorse, func(s *measure.Summary) int64 { return s.Cancelled }), func(d *Def) { d.TSV = "cancelled" })),
		perStep(count("left_over", HigherIsWorse, (*measure.Summary).LeftOver)),
		// OK / CompletionWindow.
		perStep(with(rate("throughput", "throughput", LowerIsWorse, (*measure.Summary).Throughput), func(d *Def) { d.TSV, d.Across, d.Compare = "throughput", "throughput", 1 })),
		// Responded / CompletionWindow: λ of Little's law.
		perStep(rate("completed_rate", "completed_rate", LowerIsWorse, (*measure.Summary).CompletedRate)),
		Def{Name: "offered_rate", JSON: "offered_rate", TSV: "offered_rate", Missing: "-", Unit: PerSecond, Need: OpenModel,
			Read: func(p *Phase) (float64, bool) {
				if p.OfferedRate == nil {
					return 0, false
				}
				return *p.OfferedRate, true
			}},
		// Requests / SendWindow.
		perStep(with(rate("achieved_rate", "achieved_rate", LowerIsWorse, (*measure.Summary).AchievedRate), func(d *Def) {
			d.TSV, d.Across, d.Compare = "achieved_rate", "achieved_rate", 8
		})),
		Def{Name: "duration", Unit: Duration, Read: func(p *Phase) (float64, bool) { return float64(p.summary().Elapsed), true }},
		perStep(Def{Name: "samples", JSON: Response.JSON + ".samples", TSV: "samples", Unit: Count, Worse: LowerIsWorse,
			Read: func(p *Phase) (float64, bool) { return float64(p.summary().Response.Count()), true }}),
		Def{Name: "connections", TSV: "connections", Unit: Count, Read: func(p *Phase) (float64, bool) { return float64(p.Connections), true }},
		with(count("connections_opened", HigherIsWorse, func(s *measure.Summary) int64 { return s.ConnectionsOpened }), func(d *Def) { d.TSV = "connections_opened" }),
		Def{Name: "connections_established", Unit: Count, Worse: LowerIsWorse,
			Read: func(p *Phase) (float64, bool) { return float64(p.ConnectionsEstablished), true }},
		count("reconnects", HigherIsWorse, func(s *measure.Summary) int64 { return s.Reconnects }),
		// HTTP/2: requests sent again on a fresh connection because a
		// GOAWAY said the server had not processed them.
		count("goaway_retries", HigherIsWorse, func(s *measure.Summary) int64 { return s.GoAwayRetries }),
		// The runner's own counter fetches inside the phase's counter
		// deltas (Phase.Fetches): what a target that counts its scrapes
		// counted of ours.
		Def{Name: "fetches", Unit: Count, Need: CountersFetched, Read: func(p *Phase) (float64, bool) { return float64(p.Fetches), p.Fetches > 0 }},
		// InflightSum / CompletionWindow.
		perStep(with(rate("inflight_mean", "inflight_mean", HigherIsWorse, (*measure.Summary).InflightMean), func(d *Def) { d.Unit, d.TSV = Mean, "inflight_mean" })),
		// Little's law L = λW = ResponseSum / CompletionWindow.
		perStep(Def{Name: "littleL", JSON: "little_l", TSV: "littleL", Across: "little_l", Compare: 9, Unit: Mean, Worse: HigherIsWorse, Need: Responses,
			Read: func(p *Phase) (float64, bool) { return p.summary().LittleL(), true }}),
	)
	t = append(t, latency(Service, map[string]string{"p99": "service_p99"}, nil, nil)...)
	t = append(t, latency(Failed, nil, nil, nil)...)
	t = append(t, latency(Corrected, nil, nil, nil)...)
	t = append(t, latency(SendLag, nil, nil, nil)...)
	t = append(t, latency(SendEarly, nil, nil, nil)...)
	t = append(t, samplesOf(Service), samplesOf(SendLag), samplesOf(SendEarly), samplesOf(Corrected))
	client := func(name, tsv string, u Unit, f func(c *Client) float64) Def {
		return Def{Name: name, TSV: tsv, Missing: "-", Unit: u, Worse: HigherIsWorse, Need: ClientMeasured,
			Read: func(p *Phase) (float64, bool) {
				if p.Client == nil {
					return 0, false
				}
				return f(p.Client), true
			}}
	}
	target := func(name, tsv string, u Unit, f func(c *Target) float64) Def {
		return Def{Name: name, TSV: tsv, Missing: "-", Unit: u, Worse: HigherIsWorse, Need: TargetMeasured,
			Read: func(p *Phase) (float64, bool) {
				if p.Target == nil {
					return 0, false
				}
				return f(p.Target), true
			}}
	}
	t = append(t,
		// A share of the cores the runner could use.
		client("client.cpu", "", CoreShare, func(c *Client) float64 { return c.CPU / max(c.Cores, 1) }),
		client("client.gc_pause_max", "gcPause", Duration, func(c *Client) float64 { return float64(c.GCPauseMax) }),
		target("target.cpu", "target_cpu", CoreShare, func(c *Target) float64 { return c.CPU }),
		target("target.cpu_max_thread", "target_cpu_max_thread", CoreShare, func(c *Target) float64 { return c.CPUMaxThread }),
		target("target.rss", "target_rss", Bytes, func(c *Target) float64 { return float64(c.RSS) }),
		// The TSV's cpu: this process's CPU in cores (not client.cpu, a
		// share of the cores it could use).
		client("", "cpu", CoreShare, func(c *Client) float64 { return c.CPU }),
		Def{TSV: "cancelled_unsent", Unit: Count, Read: func(p *Phase) (float64, bool) { return float64(p.summary().CancelledUnsent), true }},
	)
	return t
}

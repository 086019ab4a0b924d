package metric

import (
	"testing"
	"time"

	"github.com/runner-dev/runner/drivers"
	"github.com/runner-dev/runner/engine/measure"
)

// Every name, JSON key, TSV column and repeat-summary key is declared
// once, and every metric can be read.
func TestCatalogueUnique(t *testing.T) {
	seen := map[string]bool{}
	for _, d := range All() {
		if d.Read == nil {
			t.Errorf("%+v: no Read", d)
		}
		if d.Name == "" && d.JSON == "" && d.TSV == "" {
			t.Errorf("a metric no one reads: %+v", d)
		}
		for _, k := range []string{"rule " + d.Name, "json " + d.JSON, "tsv " + d.TSV, "across " + d.Across} {
			if k[len(k)-1] == ' ' {
				continue
			}
			if seen[k] {
				t.Errorf("%s declared twice", k)
			}
			seen[k] = true
		}
		if d.P > 0 && d.MinSamples() != MinSamples(d.P) {
			t.Errorf("%s: guard %d", d.Name, d.MinSamples())
		}
	}
}

// The nearest-rank guard: ten samples expected above the percentile.
func TestMinSamples(t *testing.T) {
	for p, want := range map[float64]int64{0: 1, 50: 20, 90: 100, 95: 200, 99: 1000, 99.9: 10000, 99.99: 100000, 100: 1<<63 - 1} {
		if got := MinSamples(p); got != want {
			t.Errorf("MinSamples(%v) = %d, want %d", p, got, want)
		}
	}
}

// Add returns the function that removes what it added.
func TestAddRemove(t *testing.T) {
	n, v := len(All()), Version()
	remove := Add(Def{Name: "x", Read: func(*Phase) (float64, bool) { return 1, true }})
	if len(All()) != n+1 || ByName("x") == nil || Version() == v {
		t.Fatal("not added")
	}
	remove()
	if len(All()) != n || ByName("x") != nil {
		t.Fatal("not removed")
	}
}

// A per-step metric is read from the step's Summary alone: what a
// StepPhase lacks (connections, offered rate, resources, fetches) never
// changes its value; and the metrics that are not per step are exactly
// those about connections, the arrival process, correlation, fetches,
// the phase's duration and resources.
func TestStepMetricsReadTheSummaryAlone(t *testing.T) {
	rec := measure.NewRecorder(1, measure.Options{})
	for i := range 30 {
		out := drivers.Outcome{Class: drivers.OK, Responded: true}
		if i%10 == 0 {
			out = drivers.Outcome{Class: drivers.Status, Code: "503", Responded: true}
		}
		rec.AddArrivals(1)
		rec.Record(0, &measure.Result{Sent: time.Millisecond, Done: time.Duration(i+2) * time.Millisecond, Outcome: out})
	}
	s := rec.Summary(time.Second)
	rate := 7.0
	full := &Phase{Summary: s, Connections: 3, ConnectionsEstablished: 3, OfferedRate: &rate,
		Client: &Client{CPU: 1, Cores: 2}, Target: &Target{CPU: 0.5}, Fetches: 4}
	notPerStep := map[string]bool{}
	for _, d := range All() {
		if d.Name == "" {
			continue
		}
		if !d.Step {
			notPerStep[d.Name] = true
			continue
		}
		a, aok := d.Read(StepPhase(s))
		b, bok := d.Read(full)
		if a != b || aok != bok {
			t.Errorf("%s: %v,%v from the step's summary, %v,%v with the phase's extras", d.Name, a, aok, b, bok)
		}
	}
	for _, name := range []string{"connections", "connections_established", "connections_opened", "reconnects", "goaway_retries",
		"dropped", "offered_rate", "duration", "unknown_id", "duplicate_id", "fetches",
		"client.cpu", "client.gc_pause_max", "target.cpu", "target.cpu_max_thread", "target.rss",
		"corrected.p99", "corrected.max"} {
		if !notPerStep[name] {
			t.Errorf("%s is read per step", name)
		}
	}
	for _, name := range []string{"p99", "p50", "max", "stddev", "requests", "ok", "errors", "error_rate", "throughput",
		"achieved_rate", "samples", "littleL", "service.p99", "failed.p99"} {
		if notPerStep[name] || ByName(name) == nil {
			t.Errorf("%s is not read per step", name)
		}
	}
}

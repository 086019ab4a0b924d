package reports

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"golang.org/x/net/html"

	"github.com/runner-dev/runner/drivers"
	"github.com/runner-dev/runner/engine"
	"github.com/runner-dev/runner/engine/measure"
	"github.com/runner-dev/runner/internal/sysinfo"
	"github.com/runner-dev/runner/schema"
)

// exactly is d as a sample the histogram reads back exactly: d − 1 ns.
// A percentile reads the top of its sample's bucket plus 999 ns
// (measure.Dist.Percentile); below 16 ms a bucket is at most 8 µs wide
// and a whole multiple of 8 µs minus 1 ns is the top of its bucket, so
// the reports print d itself (3 decimals).
func exactly(d time.Duration) time.Duration { return d - 1 }

// flowFixture is a run of one open phase "shop" (10 s), two repeats,
// whose driver runs two flows: "buy" (steps login, pay) and "peek" (step
// look). The steps' figures, by hand:
//
//	repeat 1: login 50 ok at 0.2, 0.4, …, 10 ms: p50 (rank 25) 5 ms,
//	          p95 (rank 48) 9.6 ms, p99 and max (rank 50) 10 ms; 5.0/s
//	          pay 50: 45 ok at 3 ms, 5 failed (503): 4.5/s
//	          look 25 ok at 2 ms: 2.5/s
//	repeat 2: login as repeat 1 plus 1 ms: 6, 10.6, 11, 11 ms
//	          pay 50: 40 ok at 4 ms, 10 failed: 4.0/s
//	          look as repeat 1
//
// The phase's own summary counts the 75 iterations.
func flowFixture(t *testing.T) *Run {
	t.Helper()
	sc := &schema.Scenario{
		Version: 1, Name: "flows", File: "flows.yaml", Repeats: 2,
		Phases: []schema.Phase{
			{Name: "shop", Open: &schema.Open{Rate: schema.RateSpec{From: 7.5, To: 7.5}, Connections: 4}, Duration: schema.Duration(10 * time.Second)},
		},
		Assert: []schema.Rule{{Expr: "errors < 20", Line: 9, Col: 5}},
	}
	pl, err := engine.Compile(sc, engine.Limits{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	const elapsed = 10 * time.Second
	opts := measure.Options{Duration: 11 * time.Second}
	ok := drivers.Outcome{Class: drivers.OK, Responded: true}
	bad := drivers.Outcome{Class: drivers.Status, Code: "503", Responded: true}
	res := &engine.Result{}
	for rep := 1; rep <= 2; rep++ {
		p := &pl.Phases[0]
		it := measure.NewRecorder(1, opts)
		login, pay, look := measure.NewRecorder(1, opts), measure.NewRecorder(1, opts), measure.NewRecorder(1, opts)
		payFails := 5 * rep // the last payFails of the 50 fail
		for k := range 50 {
			due := time.Duration(k) * 200 * time.Millisecond
			rt := exactly(time.Duration(k+1)*200*time.Microsecond + time.Duration(rep-1)*time.Millisecond)
			login.AddArrivals(1)
			login.Record(0, &measure.Result{Seq: uint64(k + 1), Intended: due, Sent: due, Done: due + rt, Outcome: ok})
			payDue := due + rt
			payRT := exactly(time.Duration(2+rep) * time.Millisecond)
			out := ok
			if k >= 50-payFails {
				out = bad
			}
			pay.AddArrivals(1)
			pay.Record(0, &measure.Result{Seq: uint64(k + 1), Intended: payDue, Sent: payDue, Done: payDue + payRT, Outcome: out})
			it.AddArrivals(1)
			it.Record(0, &measure.Result{Seq: uint64(k + 1), Intended: due, Sent: due, Done: payDue + payRT, Outcome: out})
		}
		for k := range 25 {
			due := time.Duration(k)*400*time.Millisecond + 100*time.Millisecond
			rt := exactly(2 * time.Millisecond)
			look.AddArrivals(1)
			look.Record(0, &measure.Result{Seq: uint64(51 + k), Intended: due, Sent: due, Done: due + rt, Outcome: ok})
			it.AddArrivals(1)
			it.Record(0, &measure.Result{Seq: uint64(51 + k), Intended: due, Sent: due, Done: due + rt, Outcome: ok})
		}
		it.AddConnectionsOpened(4)
		pr := &engine.PhaseResult{
			Repeat: rep, Phase: p, Start: start.Add(time.Duration(rep*100) * time.Second),
			Summary: it.Summary(elapsed), ConnectionsRequested: 4, ConnectionsEstablished: 4,
			Wall: elapsed, ClientCPU: 0.05, GCPauseMax: 120 * time.Microsecond,
			Steps: []engine.StepResult{
				{Flow: "buy", Name: "login", Summary: login.Summary(elapsed)},
				{Flow: "buy", Name: "pay", Summary: pay.Summary(elapsed)},
				{Flow: "peek", Name: "look", Summary: look.Summary(elapsed)},
			},
		}
		if err := pr.CheckSteps(); err != nil {
			t.Fatal(err)
		}
		pr.Metrics = engine.MetricsOf(pr)
		res.Phases = append(res.Phases, pr)
	}
	r := &Run{
		RunID: "20261201T080000Z-f10w5", Tool: "runner", Scenario: sc, Plan: pl,
		Env:    sysinfo.Env{OS: "linux", Arch: "amd64", Cores: 2, CoresAllowed: 2, GoVersion: "go1.26", Runner: "test"},
		Target: "http://127.0.0.1:8080", Started: start, Ended: start.Add(time.Hour),
		Result: res,
	}
	r.Verdict = engine.Judge(pl, res)
	r.Across = engine.Across(res)
	r.Warnings = engine.Checks(pl, res)
	return r
}

// mustHold fails t for each of wants that out lacks, naming the report.
func mustHold(t *testing.T, report, out string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(out, want) {
			t.Errorf("%s lacks %q:\n%s", report, want, out)
		}
	}
}

// fields splits s on runs of spaces.
func fields(s string) string { return strings.Join(strings.Fields(s), " ") }

// TestConsoleSteps: under each repeat of a flow phase, one line per step
// with the hand-computed figures; across repeats, median [min – max] with
// the worse middle value of the two.
func TestConsoleSteps(t *testing.T) {
	r := flowFixture(t)
	var b bytes.Buffer
	Console(&b, r, true)
	out := b.String()
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		lines = append(lines, fields(l))
	}
	mustHold(t, "console", strings.Join(lines, "\n"),
		"flow figures per iteration",
		"steps response time from when the step came due (ok responses)",
		"step flow requests ok errors p50 p95 p99 max throughput",
		// repeat 1
		"login buy 50 50 0 5.000ms 9.600ms* 10.000ms* 10.000ms 5.0",
		"pay buy 50 45 5 3.000ms 3.000ms* 3.000ms* 3.000ms 4.5",
		"look peek 25 25 0 2.000ms 2.000ms* 2.000ms* 2.000ms 2.5",
		// repeat 2
		"login buy 50 50 0 6.000ms 10.600ms* 11.000ms* 11.000ms 5.0",
		"pay buy 50 40 10 4.000ms 4.000ms* 4.000ms* 4.000ms 4.0",
		// across repeats, percentiles marked * as the repeats' rows are
		// (the defect: the marks were dropped): p95 and p99 of 50 and of
		// 40 samples, not p50 (20 are enough)
		"step login n=2 requests 50 errors 0 p50 6.000ms [5.000ms – 6.000ms] p95 10.600ms* [9.600ms – 10.600ms] p99 11.000ms* [10.000ms – 11.000ms] throughput 5.0",
		"step pay n=2 requests 50 errors 10 [5 – 10] p50 4.000ms [3.000ms – 4.000ms] p95 4.000ms* [3.000ms – 4.000ms] p99 4.000ms* [3.000ms – 4.000ms] throughput 4.0 [4.0 – 4.5]",
	)
	// Phases without flows show no step table (the golden fixture).
	b.Reset()
	Console(&b, fixture(t), true)
	if strings.Contains(b.String(), "steps ") || strings.Contains(b.String(), "per iteration") {
		t.Error("a phase without flows shows steps")
	}
}

// TestMarkdownSteps: a flow phase's rows say they count iterations, and
// its steps have a table: per repeat the hand-computed figures, then the
// spread of the two repeats.
func TestMarkdownSteps(t *testing.T) {
	r := flowFixture(t)
	var b bytes.Buffer
	if err := Markdown(&b, r); err != nil {
		t.Fatal(err)
	}
	mustHold(t, "markdown", b.String(),
		"| shop (iterations) | 1 | open |",
		"| shop (iterations) | 2 | 70, 65 |",
		"### Flow steps",
		"its response time from when the step came due",
		"#### shop\n\n| Repeat | Flow | Step | requests | ok | errors | p50 | p95 | p99 | max | throughput /s |\n",
		"| 1 | buy | login | 50 | 50 | 0 | 5.000ms | 9.600ms\\* | 10.000ms\\* | 10.000ms | 5.0 |\n",
		"| 1 | buy | pay | 50 | 45 | 5 | 3.000ms | 3.000ms\\* | 3.000ms\\* | 3.000ms | 4.5 |\n",
		"| 2 | buy | pay | 50 | 40 | 10 | 4.000ms | 4.000ms\\* | 4.000ms\\* | 4.000ms | 4.0 |\n",
		"| 2 | peek | look | 25 | 25 | 0 | 2.000ms | 2.000ms\\* | 2.000ms\\* | 2.000ms | 2.5 |\n",
		"| median [min – max] of 2 | buy | pay | 50 | 40 [40 – 45] | 10 [5 – 10] | 4.000ms [3.000ms – 4.000ms] | 4.000ms\\* [3.000ms – 4.000ms] | 4.000ms\\* [3.000ms – 4.000ms] | 4.000ms [3.000ms – 4.000ms] | 4.0 [4.0 – 4.5] |\n",
	)
	// A warmup phase's steps say so.
	r.Plan.Phases[0].Warmup = true
	b.Reset()
	if err := Markdown(&b, r); err != nil {
		t.Fatal(err)
	}
	mustHold(t, "markdown of a warmup", b.String(), "#### shop (warmup)\n", "| shop (iterations, warmup) | 1 |")
	b.Reset()
	if err := Markdown(&b, fixture(t)); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "Flow steps") || strings.Contains(b.String(), "(iterations)") {
		t.Error("a run without flows shows steps")
	}
}

// TestHDRLogSteps: a flow phase's log has, besides its iterations' lines,
// each step's response and service times, tagged
// r<repeat>/<phase>/step/<name>/…, with the step's ok responses: login's
// 0.2 … 10 ms (50), pay's 45 then 40 at 3 then 4 ms.
func TestHDRLogSteps(t *testing.T) {
	r := flowFixture(t)
	var b bytes.Buffer
	if err := HDRLog(&b, r); err != nil {
		t.Fatal(err)
	}
	by := map[string]*hdr.Histogram{}
	for _, h := range readHDRLog(t, hdr.NewHistogramLogReader(strings.NewReader(b.String()))) {
		if _, dup := by[h.Tag()]; dup && !strings.HasSuffix(h.Tag(), "/interval") {
			t.Errorf("tag %s twice", h.Tag())
		}
		by[h.Tag()] = h
	}
	for _, c := range []struct {
		tag      string
		n        int64
		min, max int64 // µs: samples are truncated to the µs below
	}{
		{"r1/shop/response", 70, 1999, 11999},
		{"r1/shop/step/login/response", 50, 199, 9999},
		{"r1/shop/step/login/service", 50, 199, 9999},
		{"r1/shop/step/pay/response", 45, 2999, 2999},
		{"r1/shop/step/look/response", 25, 1999, 1999},
		{"r2/shop/step/login/response", 50, 1199, 10999},
		{"r2/shop/step/pay/response", 40, 3999, 3999},
	} {
		h, ok := by[c.tag]
		if !ok {
			t.Errorf("no line tagged %s", c.tag)
			continue
		}
		// Bucket edges: within 0.1 % (3 significant digits).
		near := func(got, want int64) bool { return got >= want*999/1000 && got <= want*1001/1000+1 }
		if h.TotalCount() != c.n || !near(h.Min(), c.min) || !near(h.Max(), c.max) {
			t.Errorf("%s: %d samples in [%d, %d] µs, want %d in [%d, %d]", c.tag, h.TotalCount(), h.Min(), h.Max(), c.n, c.min, c.max)
		}
	}
	if h := by["r1/shop/step/pay/response"]; h != nil && h.StartTimeMs() != r.Result.Phases[0].Start.UnixMilli() {
		t.Errorf("a step's line starts at %d ms, its phase at %d", h.StartTimeMs(), r.Result.Phases[0].Start.UnixMilli())
	}
}

// TestHTMLSteps: the page of a flow run still fetches nothing and draws
// every chart; each flow phase has a flow steps table with the
// hand-computed figures per (repeat, step) and across the repeats, and per
// repeat a chart of the steps' response times by percentile.
func TestHTMLSteps(t *testing.T) {
	r := flowFixture(t)
	doc := renderHTML(t, r)
	balanced(t, doc)
	charts, ids := pageCharts(t, doc, func(u string) bool { return u == "http://127.0.0.1:8080" })
	by := checkCharts(t, charts, ids)

	root, err := html.Parse(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	walk(root, func(n *html.Node) {
		if c, _ := attr(n, "class"); n.Type == html.ElementNode && n.Data == "table" && c == "steps" {
			walk(n, func(tr *html.Node) {
				if tr.Type == html.ElementNode && tr.Data == "tr" {
					var cells []string
					for c := tr.FirstChild; c != nil; c = c.NextSibling {
						if c.Type == html.ElementNode {
							var parts []string // the value, then the range under it
							walk(c, func(n *html.Node) {
								if n.Type == html.TextNode {
									parts = append(parts, n.Data)
								}
							})
							cells = append(cells, strings.Join(parts, " "))
						}
					}
					rows = append(rows, strings.Join(cells, " | "))
				}
			})
		}
	})
	want := []string{
		"repeat | flow | step | requests | ok | errors | p50 | p95 | p99 | max | throughput (ok /s)",
		"repeat 1 | buy | login | 50 | 50 | 0 | 5.000ms | 9.600ms* | 10.000ms* | 10.000ms | 5.0",
		"repeat 1 | buy | pay | 50 | 45 | 5 | 3.000ms | 3.000ms* | 3.000ms* | 3.000ms | 4.5",
		"repeat 1 | peek | look | 25 | 25 | 0 | 2.000ms | 2.000ms* | 2.000ms* | 2.000ms | 2.5",
		"repeat 2 | buy | login | 50 | 50 | 0 | 6.000ms | 10.600ms* | 11.000ms* | 11.000ms | 5.0",
		"repeat 2 | buy | pay | 50 | 40 | 10 | 4.000ms | 4.000ms* | 4.000ms* | 4.000ms | 4.0",
		"repeat 2 | peek | look | 25 | 25 | 0 | 2.000ms | 2.000ms* | 2.000ms* | 2.000ms | 2.5",
		"median [min – max] of 2 | buy | login | 50 | 50 | 0 | 6.000ms [5.000ms – 6.000ms] | 10.600ms* [9.600ms – 10.600ms] | 11.000ms* [10.000ms – 11.000ms] | 11.000ms [10.000ms – 11.000ms] | 5.0",
		"median [min – max] of 2 | buy | pay | 50 | 40 [40 – 45] | 10 [5 – 10] | 4.000ms [3.000ms – 4.000ms] | 4.000ms* [3.000ms – 4.000ms] | 4.000ms* [3.000ms – 4.000ms] | 4.000ms [3.000ms – 4.000ms] | 4.0 [4.0 – 4.5]",
		"median [min – max] of 2 | peek | look | 25 | 25 | 0 | 2.000ms | 2.000ms* | 2.000ms* | 2.000ms | 2.5",
	}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Errorf("flow steps table:\n%s\nwant:\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}
	mustHold(t, "html", doc, "response time of the iterations", "flows: the figures below count iterations", "its response time from when the step came due")

	// One steps chart per repeat, a series per step: at x = 1 (p0) each
	// step's min, at the axis's end (x = 50: p98, rank 49 of login's 50)
	// login's 9.8 ms, then 10.8 ms; one y scale for both repeats.
	var steps []chart
	for _, id := range ids {
		if c := by[id]; c.Kind == kindStepPercentile {
			steps = append(steps, c)
		}
	}
	if len(steps) != 2 {
		t.Fatalf("%d steps charts, want one per repeat", len(steps))
	}
	for i, c := range steps {
		if len(c.Series) != 3 || c.Series[0].Label != "login" || c.Series[1].Label != "pay" || c.Series[2].Label != "look" {
			t.Fatalf("repeat %d: series %+v", i+1, c.Series)
		}
		near := func(got, want float64) bool { return math.Abs(got-want) < 0.002 }
		last := len(c.X) - 1
		if lo, hi := c.Series[0].Y[0], c.Series[0].Y[last]; !near(lo, 0.2+float64(i)) || !near(hi, 9.8+float64(i)) || !near(c.X[last], 50) {
			t.Errorf("repeat %d: login from %g to %g ms (x up to %g), want %g to %g ms up to 50", i+1, lo, hi, c.X[last], 0.2+float64(i), 9.8+float64(i))
		}
		if y := c.Series[1].Y[last]; !near(y, 3+float64(i)) {
			t.Errorf("repeat %d: pay's top %g ms, want %d", i+1, y, 3+i)
		}
		if c.YMax != steps[0].YMax {
			t.Errorf("repeat %d: y axis to %g, repeat 1's to %g", i+1, c.YMax, steps[0].YMax)
		}
	}
}

// TestTSVSteps: a flow phase's rows are its own (step "-", note
// "iterations") then one per step with the step's hand-computed figures,
// "-" where a figure is the phase's.
func TestTSVSteps(t *testing.T) {
	r := flowFixture(t)
	rows := r.Rows(r.Result.Phases[0])
	if len(rows) != 4 {
		t.Fatalf("%d rows, want the phase's and 3 steps'", len(rows))
	}
	cell := func(row []string, col string) string {
		for i, c := range TSVColumns {
			if c == col {
				return row[i]
			}
		}
		t.Fatalf("no column %s", col)
		return ""
	}
	for _, c := range []struct {
		row       int
		col, want string
	}{
		{0, "step", "-"}, {0, "note", "iterations"}, {0, "requests", "75"}, {0, "errors", "5"}, {0, "connections", "4"},
		{1, "step", "login"}, {1, "note", "flow=buy"}, {1, "phase", "shop"}, {1, "repeat", "1"},
		{1, "requests", "50"}, {1, "ok", "50"}, {1, "errors", "0"}, {1, "arrivals", "50"},
		{1, "p50", "5.000"}, {1, "p95", "9.600"}, {1, "p99", "10.000"}, {1, "max", "10.000"}, {1, "samples", "50"},
		{1, "throughput", "5.0"}, {1, "service_p99", "10.000"},
		// Little's law of the step: Σ response time / 10 s = (255 ms − 50 ns) / 10 s.
		{1, "littleL", "0.025"},
		{1, "connections", "-"}, {1, "cpu", "-"}, {1, "gcPause", "-"}, {1, "offered_rate", "-"}, {1, "connections_opened", "-"},
		{1, "dropped", "-"}, {1, "verdict", "-"}, {1, "target_rss", "-"},
		{2, "step", "pay"}, {2, "ok", "45"}, {2, "errors", "5"}, {2, "error_rate", "0.1000"}, {2, "throughput", "4.5"}, {2, "p99", "3.000"},
		{3, "step", "look"}, {3, "note", "flow=peek"}, {3, "requests", "25"}, {3, "throughput", "2.5"},
	} {
		if got := cell(rows[c.row], c.col); got != c.want {
			t.Errorf("row %d, %s: %q, want %q", c.row, c.col, got, c.want)
		}
	}
}

// TestAppendTSV_FileFromBeforeTheStepColumn: a file whose header is the
// one from before the step column keeps it: it takes the phase's own row
// without the step cell, and no step's row; CheckTSV accepts it. A new
// file gets every row.
func TestAppendTSV_FileFromBeforeTheStepColumn(t *testing.T) {
	r := flowFixture(t)
	rows := r.Rows(r.Result.Phases[0])
	dir := t.TempDir()
	var old []string
	for _, c := range TSVColumns {
		if c != "step" {
			old = append(old, c)
		}
	}
	oldRow := strings.Join(tsvRow("a")[:len(old)], "\t")
	path := filepath.Join(dir, "old.tsv")
	content := strings.Join(old, "\t") + "\n" + oldRow + "\n"
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := CheckTSV(path); err != nil {
		t.Fatal(err)
	}
	if err := AppendTSV(path, rows); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := content + strings.Join(rows[0][:len(rows[0])-1], "\t") + "\n"
	if TSVColumns[len(TSVColumns)-1] != "step" || string(b) != want {
		t.Errorf("the old file holds\n%s\nwant\n%s", b, want)
	}

	path = filepath.Join(dir, "new.tsv")
	if err := AppendTSV(path, rows); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(path)
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 5 || lines[0] != strings.Join(TSVColumns, "\t") || !strings.HasSuffix(lines[4], "\tlook") {
		t.Errorf("the new file holds\n%s", b)
	}
}

// TestStepsAcross_FromSavedJSON pins the defect of a saved flow result:
// read back from JSON, the repeats of one phase share no *PhasePlan, and
// the steps' lines across repeats went missing from the console (and the
// rows of the Markdown and HTML tables) that the live run printed. Every
// report of the saved result is the live run's, byte for byte.
func TestStepsAcross_FromSavedJSON(t *testing.T) {
	live := flowFixture(t)
	saved := roundTrip(t, live)
	live.Scenario.File = "" // not in the JSON report
	for _, f := range []struct {
		name   string
		render func(*bytes.Buffer, *Run) error
	}{
		{"console", func(b *bytes.Buffer, r *Run) error { Console(b, r, true); return nil }},
		{"markdown", func(b *bytes.Buffer, r *Run) error { return Markdown(b, r) }},
		{"html", func(b *bytes.Buffer, r *Run) error { return HTML(b, r) }},
	} {
		var a, b bytes.Buffer
		if err := f.render(&a, live); err != nil {
			t.Fatal(err)
		}
		if err := f.render(&b, saved); err != nil {
			t.Fatal(err)
		}
		if a.String() != b.String() {
			t.Errorf("%s of the saved result differs from the live run's:\n%s\nlive:\n%s", f.name, b.String(), a.String())
		}
	}
	// The line that went missing, by hand (TestConsoleSteps).
	var b bytes.Buffer
	Console(&b, saved, true)
	mustHold(t, "console of the saved result", fields(b.String()), "step pay n=2 requests 50 errors 10 [5 – 10]")
}

// roundTrip is r written as a JSON report and read back (Load).
func roundTrip(t *testing.T, r *Run) *Run {
	t.Helper()
	path := filepath.Join(t.TempDir(), "r.json")
	if err := WriteJSON(path, r); err != nil {
		t.Fatal(err)
	}
	back, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return back
}

// TestMarkdownPhaseTitle pins the heading builder, the defect a phase
// named warmup showed ("warmup (iterations) (warmup)"): every
// combination of flow or not and warmup or not, named warmup or not.
func TestMarkdownPhaseTitle(t *testing.T) {
	m := &mdWriter{r: &Run{}}
	for _, c := range []struct {
		name         string
		flow, warmup bool
		want         string
	}{
		{"steady", false, false, "steady"},
		{"steady", true, false, "steady (iterations)"},
		{"ramp", false, true, "ramp (warmup)"},
		{"ramp", true, true, "ramp (iterations, warmup)"},
		{"warmup", false, true, "warmup"},              // the name says it
		{"warmup", true, true, "warmup (iterations)"},  // the defect
		{"Warmup", true, true, "Warmup (iterations)"},  // in any case
		{"warmup", true, false, "warmup (iterations)"}, // named so, yet judged: the name is the user's
	} {
		if got := m.phaseTitle(c.name, c.flow, c.warmup); got != c.want {
			t.Errorf("phaseTitle(%q, flow %v, warmup %v) = %q, want %q", c.name, c.flow, c.warmup, got, c.want)
		}
	}
	// Every table of a flow warmup named warmup, once each.
	r := flowFixture(t)
	r.Plan.Phases[0].Name, r.Plan.Phases[0].Warmup = "warmup", true
	r.Across = engine.Across(r.Result)
	var b bytes.Buffer
	if err := Markdown(&b, r); err != nil {
		t.Fatal(err)
	}
	mustHold(t, "markdown", b.String(), "| warmup (iterations) | 1 | open |", "| warmup (iterations) | 2 | 70, 65 |", "#### warmup\n")
	if strings.Contains(b.String(), "(warmup)") {
		t.Errorf("a phase named warmup is called a warmup twice:\n%s", b.String())
	}
}

// TestLittleSaysIterationsForFlows: an iteration's time includes its
// think times, so λ·W of a flow phase counts iterations in progress,
// users thinking between steps included, not requests in flight at the
// target; every report says so (the defect: "in-flight at the target"),
// and a phase of single requests keeps its wording.
func TestLittleSaysIterationsForFlows(t *testing.T) {
	r := flowFixture(t)
	var con, md bytes.Buffer
	Console(&con, r, true)
	if err := Markdown(&md, r); err != nil {
		t.Fatal(err)
	}
	page := renderHTML(t, r)
	for name, out := range map[string]string{"console": con.String(), "markdown": md.String(), "html": page} {
		if strings.Contains(out, "in-flight at the target") {
			t.Errorf("%s calls a flow phase's Little's L in-flight at the target", name)
		}
	}
	// Repeat 1 by hand: the buy iterations take login's (k+1)·0.2 ms plus
	// pay's 3 ms, 255 + 150 ms over the 50; the peeks 25 × 2 ms: 455 ms
	// of iterations over the 10 s window, L = 0.0455.
	mustHold(t, "console", con.String(), "little's law  λ·W = 0.05 (iterations in progress, thinking included) vs mean iterations in progress 0.05 (first send to last completion, thinking included)")
	mustHold(t, "markdown", md.String(), "λ·W counts iterations in progress, thinking included", "| shop (iterations) | 1 | 0.05 (iterations in progress, thinking included) | mean iterations in progress 0.05 (first send to last completion, thinking included) |")
	mustHold(t, "html", page, "0.05 (iterations in progress, thinking included)", "mean iterations in progress 0.05", "iterations in progress, thinking included per second ≈ λ·W")
	con.Reset()
	Console(&con, fixture(t), true)
	if out := con.String(); !strings.Contains(out, "vs mean in-flight at the target") || strings.Contains(out, "thinking included") {
		t.Errorf("a phase of single requests: %s", out)
	}
}

// TestHTMLStepBudgets: a rule's limit on a flow step's response time is
// a dashed line on the steps' chart, as the phase's are on the
// iterations' charts (the defect: none was drawn); the phase's own limits
// stay on its own charts, and a step the chart does not show gets none.
func TestHTMLStepBudgets(t *testing.T) {
	r := flowFixture(t)
	r.Verdict.Rules = append(r.Verdict.Rules,
		engine.RuleResult{Source: "step.login.p99 < 50ms", Phase: "shop"},
		engine.RuleResult{Source: `step["look"].max < 4ms and errors < 100`, Phase: "shop"},
		engine.RuleResult{Source: "p99 < 30ms", Phase: "shop"},
		engine.RuleResult{Source: "step.ghost.p99 < 1ms", Phase: "shop"},
		engine.RuleResult{Source: "step.login.p99 < 7ms", Phase: "elsewhere"})
	doc := renderHTML(t, r)
	charts, ids := pageCharts(t, doc, func(u string) bool { return u == "http://127.0.0.1:8080" })
	by := checkCharts(t, charts, ids)
	lines := func(c chart) string {
		var out []string
		for _, b := range c.Budgets {
			out = append(out, fmt.Sprintf("%s@%g", b.Label, b.Y))
		}
		return strings.Join(out, "; ")
	}
	var steps, pct int
	for _, id := range ids {
		switch c := by[id]; c.Kind {
		case kindStepPercentile:
			steps++
			if got, want := lines(c), `step.login.p99 < 50ms@50; step["look"].max < 4ms@4`; got != want {
				t.Errorf("steps chart %s: budgets %q, want %q", id, got, want)
			}
			if c.YMax < 55 {
				t.Errorf("steps chart %s: y axis to %g, below the 50 ms line's 55", id, c.YMax)
			}
		case kindPercentile:
			pct++
			if got, want := lines(c), "p99 < 30ms@30"; got != want {
				t.Errorf("iterations' chart %s: budgets %q, want %q", id, got, want)
			}
		}
	}
	if steps != 2 || pct != 2 {
		t.Errorf("%d steps charts and %d percentile charts, want 2 of each", steps, pct)
	}
}

// cutFixture is flowFixture's first repeat alone with its iterations
// redone (the reviewer's cut.yaml): 40 arrivals, 30 iterations ok, and
// 10 the drain's end cut between their two steps, while their virtual
// users were thinking (left over, cut between steps; none interrupted).
func cutFixture(t *testing.T) *Run {
	t.Helper()
	r := flowFixture(t)
	pr := r.Result.Phases[0]
	r.Result.Phases = r.Result.Phases[:1]
	rec := measure.NewRecorder(1, measure.Options{Duration: 11 * time.Second})
	for k := range 40 {
		due := time.Duration(k) * 50 * time.Millisecond
		rec.AddArrivals(1)
		out, thinking := drivers.Outcome{Class: drivers.OK, Responded: true}, false
		if k >= 30 {
			out, thinking = drivers.Outcome{Class: drivers.Cancelled, Code: drivers.CodePhaseEnd}, true
		}
		rec.Record(0, &measure.Result{Seq: uint64(k + 1), Intended: due, Sent: due, Done: due + 1500*time.Millisecond, Outcome: out, Thinking: thinking})
	}
	pr.Summary = rec.Summary(2 * time.Second)
	if s := pr.Summary; s.LeftOver() != 10 || s.CancelledThinking != 10 || s.Cancelled != 10 {
		t.Fatalf("fixture: left over %d, thinking %d, cancelled %d; want 10 each", s.LeftOver(), s.CancelledThinking, s.Cancelled)
	}
	pr.Metrics = engine.MetricsOf(pr)
	r.Verdict = engine.Judge(r.Plan, r.Result)
	r.Across = engine.Across(r.Result)
	r.Warnings = engine.Checks(r.Plan, r.Result)
	return r
}

// TestCutIterationsSaidOnce: 10 iterations cut between steps at the
// drain are left over, and every report says so once, as the console
// does: "10 cut between steps (thinking)", never also 10 cancelled (the
// reviewer saw Markdown's "Cancelled 10" beside "Left over 10", and the
// TSV note cancelled=10,left_over=10).
func TestCutIterationsSaidOnce(t *testing.T) {
	r := cutFixture(t)
	con, md, page := consoleMarkdownHTML(t, r)
	mustHold(t, "console", con, "left over     10 arrivals (0 never sent", "10 cut between steps (thinking)")
	if strings.Contains(con, "cancelled ") {
		t.Errorf("console counts the cut iterations as cancelled too:\n%s", con)
	}
	mustHold(t, "markdown", md, "| 40 | 30 | 0 | 10 |", "- Left over in shop (iterations), repeat 1: 10 of 40 arrivals (0 never sent, 10 cut between steps (thinking)).", "No errors.")
	if strings.Contains(md, "Cancelled") {
		t.Errorf("markdown counts the cut iterations as cancelled too:\n%s", md)
	}
	text := fields(htmlText(t, page))
	mustHold(t, "html", text, "left over (censored) 10 (0 never sent, 10 cut between steps (thinking))", "cancelled (sent, interrupted) 0")
	rows := r.Rows(r.Result.Phases[0])
	note := rows[0][slices.Index(Columns(), "note")]
	if note != "iterations,left_over=10,left_over_thinking=10" {
		t.Errorf("TSV note %q, want iterations,left_over=10,left_over_thinking=10", note)
	}
}

// htmlText is the text of the page doc outside its scripts and styles,
// its nodes joined by spaces.
func htmlText(t *testing.T, doc string) string {
	t.Helper()
	root, err := html.Parse(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	var parts []string
	walk(root, func(n *html.Node) {
		if n.Type == html.TextNode && n.Parent != nil && n.Parent.Data != "script" && n.Parent.Data != "style" {
			parts = append(parts, n.Data)
		}
	})
	return strings.Join(parts, " ")
}

// TestFlowPhaseSaysIterations: the console and Markdown of a flow run
// count its phases' own figures as iterations, never requests (the
// reviewer's "1200 ok of 1200 requests", "arrivals 1200 = requests
// 1200", "achieved is requests sent per second"); the HTML too.
func TestFlowPhaseSaysIterations(t *testing.T) {
	r := flowFixture(t)
	con, md, page := consoleMarkdownHTML(t, r)
	mustHold(t, "console", con, "arrivals 75 = iterations 75 + dropped 0;", "(70 ok of 75 iterations, completed over")
	mustHold(t, "markdown", md, "achieved is iterations started (first step sent) per second", "| Throughput /s | Iterations | OK |", "Response time of ok iterations (from the intended start to the last step's completion")
	mustHold(t, "html", fields(htmlText(t, page)), "ok of iterations 70 of 75")
	for name, out := range map[string]string{"console": con, "markdown": md} {
		for _, bad := range []string{"of 75 requests", "= requests 75", "achieved is requests", "| Requests |", "Response time of ok requests"} {
			if strings.Contains(out, bad) {
				t.Errorf("%s says %q of a flow phase", name, bad)
			}
		}
	}
}

// consoleMarkdownHTML renders r as the console (in detail), Markdown and
// HTML do.
func consoleMarkdownHTML(t *testing.T, r *Run) (con, md, page string) {
	t.Helper()
	var c, m, h bytes.Buffer
	Console(&c, r, true)
	if err := Markdown(&m, r); err != nil {
		t.Fatal(err)
	}
	if err := HTML(&h, r); err != nil {
		t.Fatal(err)
	}
	return c.String(), m.String(), h.String()
}

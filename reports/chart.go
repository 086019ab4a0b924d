package reports

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/runner-dev/runner/engine"
	"github.com/runner-dev/runner/engine/measure"
)

// The HTML report's charts are data here and drawings in the browser:
// each chart below is written into the page as JSON, and the page's own
// script (assets/report.js) draws it with uPlot (assets/uplot), both
// inlined, so that the file still opens offline. The page's tables hold
// every number the charts summarise, for a reader without JavaScript.

// maxPoints bounds the points of a timeline chart: longer timelines are
// summed into buckets of several seconds.
const maxPoints = 600

// The chart kinds, in the order a (phase, repeat) shows them. Charts of
// one kind share their y scale across the repeats of a phase.
const (
	kindPercentile = "percentile"   // latency by percentile, x = 1/(1−p) on a log scale
	kindPctTime    = "pct-time"     // p50/p90/p99 of each interval
	kindThroughput = "throughput"   // ok responses per second
	kindLatency    = "latency-time" // mean and max response time per second
	kindErrors     = "errors"       // errors per second
	kindInSystem   = "in-system"    // λ·W per second against the mean in-flight
	// kindStepPercentile is the flow steps' response times by percentile.
	kindStepPercentile = "step-percentile"
)

// Series colours: response time and errors red, service time and means
// blue, ok green, max orange, reference lines grey.
const (
	colorResp = "#d62728"
	colorServ = "#1f77b4"
	colorOK   = "#2ca02c"
	colorErr  = "#d62728"
	colorMean = "#1f77b4"
	colorMax  = "#ff7f0e"
	colorP90  = "#9467bd"
	colorRef  = "#7f7f7f"
)

// chart is the data of one chart, as report.js reads it.
type chart struct {
	// ID names the chart's element (data-chart) in the page.
	ID string `json:"id"`
	// Log is true for an x axis on a log scale (the percentile chart);
	// Ticks then label it. Steps draws each series as steps held from
	// one x to the next (per-second counts), not as lines between points.
	Log   bool   `json:"log,omitempty"`
	Ticks []tick `json:"ticks,omitempty"`
	Steps bool   `json:"steps,omitempty"`
	// XLabel and YLabel name the axes with their units.
	XLabel string `json:"xlabel"`
	YLabel string `json:"ylabel"`
	// X holds the x values, ascending; every series has one y per x.
	X      nums     `json:"x"`
	Series []series `json:"series"`
	// YMax is the top of the y axis (from 0), the same for the charts of
	// one kind across the repeats of a phase.
	YMax float64 `json:"ymax"`
	// Budgets are the rules' limits on what the chart shows, drawn as
	// dashed horizontal lines.
	Budgets []budgetLine `json:"budgets,omitempty"`
	// Mark is the x of a dashed vertical line: where the phase's own
	// length ends on a timeline that goes on into the drain grace; 0 for
	// none.
	Mark float64 `json:"mark,omitempty"`

	// Kind is one of the kinds above.
	Kind string `json:"kind"`
	// Title is shown above the chart, in the page (so that it wraps).
	Title string `json:"-"`
}

// series is one line of a chart.
type series struct {
	Label string `json:"label"`
	Color string `json:"color"`
	Dash  bool   `json:"dash,omitempty"`
	Y     nums   `json:"y"`
}

// budgetLine is a budget drawn at Y (in the chart's y unit).
type budgetLine struct {
	Label string  `json:"label"`
	Y     float64 `json:"y"`
}

// tick labels the x axis at V with L.
type tick struct {
	V float64 `json:"v"`
	L string  `json:"l"`
}

// nums are chart values; NaN (no value: a second without ok responses
// has no mean) is written as JSON null, which uPlot draws as a gap.
// Values keep 6 significant digits, plenty for a drawing.
type nums []float64

// MarshalJSON writes the values as a JSON array of numbers and nulls.
func (ns nums) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 8*len(ns)+2)
	b = append(b, '[')
	for i, v := range ns {
		if i > 0 {
			b = append(b, ',')
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			b = append(b, "null"...)
			continue
		}
		b = strconv.AppendFloat(b, v, 'g', 6, 64)
	}
	return append(b, ']'), nil
}

// pctPoint is the response time's p50, p90 and p99 over one interval of
// a phase; T is the interval's middle in seconds since the phase start. A
// percentile the interval holds too few samples for is negative (drawn as
// a gap; see percentileSeries).
type pctPoint struct {
	T             float64
	P50, P90, P99 time.Duration
}

// percentileSeries returns the nearest-rank p50, p90 and p99 of the ok
// response times of each interval of a phase (Summary.Intervals, by
// completion time), in time order, skipping intervals without ok
// responses. Neighbouring intervals are merged (their histograms added)
// when there are more than maxPoints. A percentile p of an interval with
// fewer than 1/(1−p/100) samples (p50: 2, p90: 10, p99: 100) would be its
// maximum whatever the distribution, so it is left out (negative). nil
// when the summary holds no per-interval histograms (a result from before
// them) or one cannot be decoded: then the report draws no
// percentiles-over-time chart.
func percentileSeries(s *measure.Summary) []pctPoint {
	ivs := s.Intervals
	step := (len(ivs) + maxPoints - 1) / max(maxPoints, 1)
	var out []pctPoint
	for i := 0; i < len(ivs); i += step {
		var d measure.Dist
		end := ivs[i].End()
		for _, iv := range ivs[i:min(i+step, len(ivs))] {
			r, err := iv.Response()
			if err != nil {
				return nil
			}
			d.Merge(r)
			end = iv.End()
		}
		if d.Count() == 0 {
			continue
		}
		pct := func(p float64) time.Duration {
			if float64(d.Count()) < 100/(100-p) {
				return -1
			}
			v, _ := d.Percentile(p)
			return v
		}
		// At the middle of the interval, as the per-second mean and max
		// are drawn, so that one second's spike sits at one x.
		mid := ivs[i].Start + (end-ivs[i].Start)/2
		out = append(out, pctPoint{T: mid.Seconds(), P50: pct(50), P90: pct(90), P99: pct(99)})
	}
	return out
}

// intervalPercentiles is the source of the percentiles-over-time chart:
// percentileSeries, which tests replace to draw the chart from points of
// their own.
var intervalPercentiles = percentileSeries

// percentileTicks label the x axis 1/(1−p) with the percentile p.
var percentileTicks = []tick{{1, "0"}, {2, "50"}, {10, "90"}, {100, "99"}, {1e3, "99.9"}, {1e4, "99.99"}, {1e5, "99.999"}, {1e6, "99.9999"}}

// percentileChart plots response and service time against the percentile
// p on a log scale of x = 1/(1−p), read with Dist.Percentile (nearest
// rank), with the limits of the rules on response-time statistics.
func percentileChart(title string, s *measure.Summary, bs []budget) chart {
	c := chart{Title: title + ": latency by percentile", Kind: kindPercentile, Log: true,
		XLabel: "percentile (log scale of 1/(1−p))", YLabel: "latency (ms)"}
	n := max(s.Response.Count(), s.Service.Count())
	if n == 0 {
		c.Title += " (no ok responses)"
	}
	c.percentileAxis(n)
	c.Series = []series{
		{Label: "response time", Color: colorResp, Y: c.curve(&s.Response)},
		{Label: "service time", Color: colorServ, Y: c.curve(&s.Service)},
	}
	c.Budgets = latencyBudgets(bs, func(b budget) bool { return true })
	return c
}

// stepColors colour the flow steps of a chart, in mix order, round.
var stepColors = []string{colorResp, colorServ, colorOK, colorMax, colorP90, "#8c564b", "#e377c2", "#17becf"}

// stepsChart plots the response time of each flow step (from when the
// step came due, ok responses) against the percentile, as
// percentileChart does, one series per step, with the rules' limits on
// the response time of a step it shows (step.login.p99 < 50ms), as
// percentileChart draws the phase's.
func stepsChart(title string, steps []engine.StepResult, bs []budget) chart {
	c := chart{Title: title + ": flow steps' response time by percentile (from when each step came due)", Kind: kindStepPercentile, Log: true,
		XLabel: "percentile (log scale of 1/(1−p))", YLabel: "response time (ms)"}
	var n int64
	for _, st := range steps {
		if st.Summary != nil {
			n = max(n, st.Summary.Response.Count())
		}
	}
	c.percentileAxis(n)
	for i, st := range steps {
		var d *measure.Dist
		if st.Summary != nil {
			d = &st.Summary.Response
		}
		c.Series = append(c.Series, series{Label: st.Name, Color: stepColors[i%len(stepColors)], Dash: i >= len(stepColors), Y: c.curve(d)})
	}
	for _, b := range bs {
		if b.Latency && slices.ContainsFunc(steps, func(st engine.StepResult) bool { return st.Name == b.Step }) {
			c.Budgets = append(c.Budgets, budgetLine{Label: b.Text, Y: b.Value})
		}
	}
	return c
}

// percentileAxis sets c's x axis, 1/(1−p), from 1 to the sample count n
// (at least 10, at most 10⁶: beyond 1/(1−p) = n every percentile is the
// maximum), with its percentile ticks.
func (c *chart) percentileAxis(n int64) {
	xmax := math.Max(10, math.Min(float64(n), 1e6))
	for _, t := range percentileTicks {
		if t.V <= xmax*1.0001 {
			c.Ticks = append(c.Ticks, t)
		}
	}
	const steps = 160
	for i := 0; i <= steps; i++ {
		c.X = append(c.X, math.Pow(xmax, float64(i)/steps))
	}
}

// curve is d's percentile at each x of c (p = 100·(1 − 1/x)), in ms; NaN
// where d has none.
func (c *chart) curve(d *measure.Dist) nums {
	ys := make(nums, len(c.X))
	for i, x := range c.X {
		v, ok := d.Percentile(math.Min(100*(1-1/x), 100))
		ys[i] = math.NaN()
		if ok {
			ys[i] = msf(v)
		}
	}
	return ys
}

// pctTimeChart plots the response time's p50, p90 and p99 of each interval
// (percentileSeries), with the rules' limits on response-time
// percentiles.
func pctTimeChart(title string, pts []pctPoint, elapsed time.Duration, bs []budget) chart {
	c := chart{Title: title + ": response time percentiles over time", Kind: kindPctTime,
		XLabel: "seconds since phase start (by completion; mid-interval)", YLabel: "ms"}
	p50, p90, p99 := make(nums, len(pts)), make(nums, len(pts)), make(nums, len(pts))
	for i, p := range pts {
		c.X = append(c.X, p.T)
		p50[i], p90[i], p99[i] = gapMs(p.P50), gapMs(p.P90), gapMs(p.P99)
	}
	c.Series = []series{
		{Label: "p50", Color: colorServ, Y: p50},
		{Label: "p90", Color: colorP90, Y: p90},
		{Label: "p99", Color: colorResp, Y: p99},
	}
	c.Budgets = latencyBudgets(bs, func(b budget) bool { return b.P > 0 })
	if len(pts) > 0 {
		c.Mark = mark(elapsed, pts[len(pts)-1].T)
	}
	return c
}

// gapMs is msf(d), or NaN (a gap in the line) for a negative d, a
// percentile left out (pctPoint).
func gapMs(d time.Duration) float64 {
	if d < 0 {
		return math.NaN()
	}
	return msf(d)
}

// latencyBudgets are the lines of the phase's own response-time budgets
// (not a flow step's) that keep says a chart shows.
func latencyBudgets(bs []budget, keep func(budget) bool) []budgetLine {
	var out []budgetLine
	for _, b := range bs {
		if b.Latency && b.Step == "" && keep(b) {
			out = append(out, budgetLine{Label: b.Text, Y: b.Value})
		}
	}
	return out
}

// bucketed sums a timeline into at most maxPoints buckets; step is the
// seconds per bucket.
func bucketed(tl []measure.TimelineBucket) (out []measure.TimelineBucket, step int) {
	step = (len(tl) + maxPoints - 1) / maxPoints
	if step <= 1 {
		return tl, 1
	}
	for i := 0; i < len(tl); i += step {
		var b measure.TimelineBucket
		for _, x := range tl[i:min(i+step, len(tl))] {
			b.OK += x.OK
			b.Errors += x.Errors
			b.ResponseSum += x.ResponseSum
			b.ResponseMax = max(b.ResponseMax, x.ResponseMax)
		}
		out = append(out, b)
	}
	return out, step
}

func per(step int) string {
	if step == 1 {
		return "per second"
	}
	return fmt.Sprintf("per %d s bucket", step)
}

// mark is where a phase of length elapsed ends on a timeline of length
// end seconds, when the timeline goes on past it; 0 otherwise.
func mark(elapsed time.Duration, end float64) float64 {
	if e := elapsed.Seconds(); e > 0 && e < end {
		return e
	}
	return 0
}

// stepChart is a timeline of per-bucket values, drawn as steps: x holds
// each bucket's start and, last, the end of the last bucket (which
// repeats its value).
func stepChart(title, kind, ylabel string, tl []measure.TimelineBucket, step int, elapsed time.Duration, ss ...stepSeries) chart {
	c := chart{Title: title, Kind: kind, Steps: true, YLabel: ylabel,
		XLabel: "seconds since phase start (by completion)"}
	for i := range tl {
		c.X = append(c.X, float64(i*step))
	}
	c.X = append(c.X, float64(len(tl)*step))
	for _, s := range ss {
		ys := make(nums, 0, len(c.X))
		for _, b := range tl {
			ys = append(ys, s.value(b)/float64(step))
		}
		if len(ys) > 0 {
			ys = append(ys, ys[len(ys)-1])
		} else {
			ys = append(ys, math.NaN())
		}
		c.Series = append(c.Series, series{Label: s.label, Color: s.color, Dash: s.dash, Y: ys})
	}
	c.Mark = mark(elapsed, float64(len(tl)*step))
	return c
}

// stepSeries is a series of a stepChart: value is a bucket's total, shown
// per second.
type stepSeries struct {
	label, color string
	dash         bool
	value        func(measure.TimelineBucket) float64
}

// throughputChart plots ok responses per second (what the timeline
// records), with the rules' limits on throughput.
func throughputChart(title string, s *measure.Summary, bs []budget) chart {
	tl, step := bucketed(s.Timeline)
	c := stepChart(title+": throughput", kindThroughput, "ok/s", tl, step, s.Elapsed,
		stepSeries{label: "ok/s " + per(step), color: colorOK, value: func(b measure.TimelineBucket) float64 { return float64(b.OK) }})
	if len(tl) == 0 {
		c.Title += " (empty timeline)"
	}
	for _, b := range bs {
		if !b.Latency && b.Step == "" && b.Metric == "throughput" {
			c.Budgets = append(c.Budgets, budgetLine{Label: b.Text, Y: b.Value})
		}
	}
	return c
}

// latencyTimeChart plots the mean and the max response time of each
// second (the timeline records counts, the sum and the max of response
// times: no percentiles), with the rules' limits on the mean and the max.
func latencyTimeChart(title string, s *measure.Summary, bs []budget) chart {
	tl, step := bucketed(s.Timeline)
	c := chart{Title: title + ": response time per second, mean and max", Kind: kindLatency,
		XLabel: "seconds since phase start (by completion)", YLabel: "ms"}
	mean, mx := make(nums, len(tl)), make(nums, len(tl))
	for i, x := range tl {
		c.X = append(c.X, float64(i*step)+float64(step)/2)
		mean[i], mx[i] = math.NaN(), math.NaN()
		if x.OK > 0 {
			mean[i], mx[i] = msf(x.ResponseSum/time.Duration(x.OK)), msf(x.ResponseMax)
		}
	}
	c.Series = []series{{Label: "max", Color: colorMax, Y: mx}, {Label: "mean", Color: colorMean, Y: mean}}
	c.Budgets = latencyBudgets(bs, func(b budget) bool { return b.Metric == "max" || b.Metric == "mean" })
	c.Mark = mark(s.Elapsed, float64(len(tl)*step))
	return c
}

// errorsChart plots errors per second.
func errorsChart(title string, s *measure.Summary) chart {
	tl, step := bucketed(s.Timeline)
	c := stepChart(title+": errors", kindErrors, "errors/s", tl, step, s.Elapsed,
		stepSeries{label: "errors/s " + per(step), color: colorErr, value: func(b measure.TimelineBucket) float64 { return float64(b.Errors) }})
	if s.Errors == 0 {
		c.Title += " (none)"
	}
	return c
}

// inSystemChart plots, since the timeline records no in-flight count,
// the number of requests in the system estimated per second by Little's
// law from the timeline (L = λ·W = Σ response time of the ok responses
// completed in the second / 1 s), against the phase's exact mean
// in-flight (Summary.InflightMean).
//
// With flow true (a phase that ran flows) the timeline's responses are
// iterations whose response time includes the think times, so the chart
// counts iterations in progress, virtual users thinking between steps
// included (engine.FlowLittleCounts), and says so.
func inSystemChart(title string, s *measure.Summary, flow bool) chart {
	tl, step := bucketed(s.Timeline)
	what, short, inflight, ylabel := "in system", "in system", "mean in-flight over the phase", "requests"
	if flow {
		// The legend's label is short (the title says what it counts):
		// a long one wraps its value onto a line of its own.
		what, short, inflight, ylabel = engine.FlowLittleCounts, "in progress", "mean iterations in progress over the phase", "iterations"
	}
	ss := []stepSeries{{label: short + " (ok, λ·W " + per(step) + ")", color: colorMean,
		value: func(b measure.TimelineBucket) float64 { return b.ResponseSum.Seconds() }}}
	if s.Elapsed > 0 && len(tl) > 0 {
		m := s.InflightMean()
		ss = append(ss, stepSeries{label: fmt.Sprintf("%s %.2f", inflight, m), color: colorRef, dash: true,
			value: func(measure.TimelineBucket) float64 { return m * float64(step) }})
	}
	return stepChart(title+": "+what+" per second ≈ λ·W (Little's law)", kindInSystem, ylabel, tl, step, s.Elapsed, ss...)
}

// phaseCharts are the charts of each repeat of one phase (prs, in repeat
// order), titled with red applied, each kind on one y scale across the
// repeats: the top of the highest series or budget of that kind, plus a
// tenth.
func phaseCharts(prs []*engine.PhaseResult, bs []budget, red func(string) string) [][]chart {
	out := make([][]chart, len(prs))
	top := map[string]float64{}
	for i, pr := range prs {
		title := red(chartTitle(pr))
		s := pr.Summary
		cs := []chart{percentileChart(title, s, bs)}
		if pts := intervalPercentiles(s); len(pts) > 0 {
			cs = append(cs, pctTimeChart(title, pts, s.Elapsed, bs))
		}
		cs = append(cs, throughputChart(title, s, bs), latencyTimeChart(title, s, bs), errorsChart(title, s), inSystemChart(title, s, isFlow(pr)))
		if isFlow(pr) {
			cs = append(cs, stepsChart(title, pr.Steps, bs))
		}
		for j := range cs {
			for k := range cs[j].Budgets {
				cs[j].Budgets[k].Label = red(cs[j].Budgets[k].Label)
			}
			top[cs[j].Kind] = math.Max(top[cs[j].Kind], cs[j].top())
		}
		out[i] = cs
	}
	for _, cs := range out {
		for j := range cs {
			cs[j].YMax = 1
			if t := top[cs[j].Kind]; t > 0 {
				cs[j].YMax = t * 1.1
			}
		}
	}
	return out
}

// top is the highest value the chart draws, series and budgets (0 for
// none).
func (c *chart) top() float64 {
	t := 0.0
	for _, s := range c.Series {
		for _, v := range s.Y {
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				t = math.Max(t, v)
			}
		}
	}
	for _, b := range c.Budgets {
		t = math.Max(t, b.Y)
	}
	return t
}

func msf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// chartTitle names a (phase, repeat).
func chartTitle(pr *engine.PhaseResult) string {
	return strings.TrimSpace(fmt.Sprintf("%s · repeat %d", pr.Phase.Name, pr.Repeat))
}

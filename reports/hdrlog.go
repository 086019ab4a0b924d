package reports

import (
	"fmt"
	"io"
	"regexp"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/runner-dev/runner/engine"
	"github.com/runner-dev/runner/engine/measure"
)

// tagUnsafe are the characters an interval log tag cannot hold.
var tagUnsafe = regexp.MustCompile(`[,\s]+`)

// HDRLog writes the run's latency histograms as an HdrHistogram interval
// log (format 1.3, readable by HdrHistogram's HistogramLogProcessor and
// HdrHistogram libraries), so that any percentile can be derived again
// later from the full distribution. Each (repeat, phase) is one interval
// per distribution, tagged `r<repeat>/<phase>/<response|service>` (spaces
// and commas in a phase name become `_`), from the phase's start to the
// end of its drain; then one line per interval of the phase's response
// times (measure.Summary.Intervals: 1 s for phases up to 10 minutes, by
// completion time; a line ends no later than the phase's completions,
// see hdrIntervals), tagged `r<repeat>/<phase>/response/interval`, so that
// percentiles over time can be derived (HistogramLogProcessor -tag …);
// then, for a phase that ran flows (whose own lines are its iterations),
// each step's response time (from when the step came due) and service
// time over the phase, tagged `r<repeat>/<phase>/step/<name>/response`
// and `…/service`.
// Timestamps are seconds from the log's StartTime (the run's start), to
// the millisecond. Values are microseconds; the log's max column is
// therefore in seconds (the library divides by 10^6), which the log's
// comment says, with HistogramLogProcessor's option for milliseconds.
// Empty distributions and intervals are left out. Secrets in the
// scenario's and phases' names are redacted before spaces become `_`.
func HDRLog(w io.Writer, r *Run) error {
	lw := hdr.NewHistogramLogWriter(w)
	start := r.Started
	if start.IsZero() {
		start = time.Unix(0, 0)
	}
	lw.SetBaseTime(start.UnixMilli())
	for _, step := range []func() error{
		lw.OutputLogFormatVersion,
		func() error {
			return lw.OutputComment(fmt.Sprintf("[runner %s, run %s, scenario %s: values in microseconds (HistogramLogProcessor -outputValueUnitRatio 1000 for milliseconds); max column in seconds]", r.Env.Runner, r.RunID, tagUnsafe.ReplaceAllString(r.redact(scenarioName(r)), "_")))
		},
		func() error { return lw.OutputStartTime(start.UnixMilli()) },
		func() error { return lw.OutputBaseTime(start.UnixMilli()) },
		lw.OutputLegend,
	} {
		if err := step(); err != nil {
			return err
		}
	}
	if r.Result == nil {
		return nil
	}
	for _, pr := range r.Result.Phases {
		if pr.Summary == nil || pr.Phase == nil {
			continue
		}
		prefix := fmt.Sprintf("r%d/%s/", pr.Repeat, tagUnsafe.ReplaceAllString(r.redact(pr.Phase.Name), "_"))
		if err := hdrPhase(lw, pr, prefix, pr.Summary); err != nil {
			return err
		}
		if err := hdrIntervals(lw, pr, prefix+"response/interval"); err != nil {
			return err
		}
		for _, st := range pr.Steps {
			if st.Summary == nil {
				continue
			}
			if err := hdrPhase(lw, pr, prefix+"step/"+tagUnsafe.ReplaceAllString(r.redact(st.Name), "_")+"/", st.Summary); err != nil {
				return err
			}
		}
	}
	return nil
}

// hdrPhase writes the response and service times of s, one of pr's
// summaries (its own or a flow step's), as one interval each over pr's
// wall time, tagged prefix + "response" and prefix + "service"; an empty
// distribution is left out.
func hdrPhase(lw *hdr.HistogramLogWriter, pr *engine.PhaseResult, prefix string, s *measure.Summary) error {
	for _, d := range []struct {
		kind string
		dist *measure.Dist
	}{{"response", &s.Response}, {"service", &s.Service}} {
		h := d.dist.Histogram()
		if h == nil {
			continue
		}
		h.SetTag(prefix + d.kind)
		h.SetStartTimeMs(pr.Start.UnixMilli())
		h.SetEndTimeMs(pr.Start.Add(pr.Wall).UnixMilli())
		if err := lw.OutputIntervalHistogram(h); err != nil {
			return err
		}
	}
	return nil
}

// hdrIntervals writes one line per interval of pr's response times,
// tagged tag. A line ends where its interval ends or where the phase's
// completions ended (measure.Summary.CompletionWindow), whichever comes
// first, so that its count over its length is the rate at which
// responses completed: the 1 s interval of a phase that lasted 13 ms is
// a line of 13 ms (never shorter than the log's 1 ms resolution), not one
// overlapping the next phase.
func hdrIntervals(lw *hdr.HistogramLogWriter, pr *engine.PhaseResult, tag string) error {
	window := pr.Summary.CompletionWindow()
	for i := range pr.Summary.Intervals {
		iv := &pr.Summary.Intervals[i]
		h, err := iv.Histogram()
		if err != nil {
			return fmt.Errorf("repeat %d, phase %s: %w", pr.Repeat, pr.Phase.Name, err)
		}
		if h == nil {
			continue
		}
		h.SetTag(tag)
		start := pr.Start.Add(iv.Start).UnixMilli()
		h.SetStartTimeMs(start)
		end := pr.Start.Add(min(iv.End(), max(window, iv.Start))).UnixMilli()
		h.SetEndTimeMs(max(end, start+1))
		if err := lw.OutputIntervalHistogram(h); err != nil {
			return err
		}
	}
	return nil
}

func scenarioName(r *Run) string {
	if r.Scenario == nil {
		return "scenario"
	}
	return r.Scenario.Name
}

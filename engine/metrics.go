package engine

import (
	"time"

	"github.com/runner-dev/runner/engine/measure"
)

// Metrics are the headline figures of one (repeat, phase), derived from
// its Summary once, so that readers of the JSON report need not decode
// histograms. Rates are per second; latencies are milliseconds; a value
// that cannot be computed (no samples) is null.
type Metrics struct {
	Throughput    float64  `json:"throughput"`
	AchievedRate  float64  `json:"achieved_rate"`
	CompletedRate float64  `json:"completed_rate"`
	OfferedRate   *float64 `json:"offered_rate"`
	ErrorRate     *float64 `json:"error_rate"`
	LittleL       float64  `json:"little_l"`
	InflightMean  float64  `json:"inflight_mean"`
	Response      Latency  `json:"response_time"`
	Service       Latency  `json:"service_time"`
	// SendLag is how long sent requests waited in the client before
	// going out (Sent − Intended): the generator's own delay plus the
	// wait for a free connection; all 0 in the closed model.
	SendLag Latency `json:"send_lag"`
	// Corrected is the coordinated-omission-corrected response time of a
	// closed phase with expected_rate (HdrHistogram's corrected
	// recording: a response longer than the expected interval adds the
	// samples it held back); absent otherwise.
	Corrected *Latency `json:"corrected_response_time,omitempty"`
}

// Latency is a distribution's nearest-rank percentiles and exact extremes
// and mean, in milliseconds.
type Latency struct {
	Samples int64    `json:"samples"`
	Min     *float64 `json:"min_ms"`
	P50     *float64 `json:"p50_ms"`
	P90     *float64 `json:"p90_ms"`
	P95     *float64 `json:"p95_ms"`
	P99     *float64 `json:"p99_ms"`
	P999    *float64 `json:"p999_ms"`
	Max     *float64 `json:"max_ms"`
	Mean    *float64 `json:"mean_ms"`
}

// Offered is the arrival rate an open phase actually offered: its
// arrivals (sent, dropped or never sent) per second of its elapsed time.
// For uniform arrivals it is the planned rate; for Poisson arrivals it is
// the rate of the arrivals drawn, so that a random draw is not mistaken for
// a target that could not keep up. ok is false for the closed model.
func Offered(pr *PhaseResult) (float64, bool) {
	if pr.Phase == nil || pr.Phase.Model != Open || pr.Summary.Elapsed <= 0 {
		return 0, false
	}
	return float64(pr.Summary.Arrivals) / pr.Summary.Elapsed.Seconds(), true
}

// MetricsOf computes the headline figures of a finished phase.
func MetricsOf(pr *PhaseResult) *Metrics {
	s := pr.Summary
	m := &Metrics{
		Throughput:    s.Throughput(),
		AchievedRate:  s.AchievedRate(),
		CompletedRate: s.CompletedRate(),
		LittleL:       s.LittleL(),
		InflightMean:  s.InflightMean(),
		Response:      latencyOf(&s.Response),
		Service:       latencyOf(&s.Service),
		SendLag:       latencyOf(&s.SendLag),
	}
	if r, ok := Offered(pr); ok {
		m.OfferedRate = &r
	}
	if s.Corrected != nil {
		c := latencyOf(s.Corrected)
		m.Corrected = &c
	}
	if r, ok := s.ErrorRate(); ok {
		m.ErrorRate = &r
	}
	return m
}

func latencyOf(d *measure.Dist) Latency {
	ms := func(v time.Duration, ok bool) *float64 {
		if !ok {
			return nil
		}
		f := float64(v) / float64(time.Millisecond)
		return &f
	}
	p := func(q float64) *float64 { return ms(d.Percentile(q)) }
	return Latency{
		Samples: d.Count(),
		Min:     ms(d.Min()),
		P50:     p(50), P90: p(90), P95: p(95), P99: p(99), P999: p(99.9),
		Max:  ms(d.Max()),
		Mean: ms(d.Mean()),
	}
}

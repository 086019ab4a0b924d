package reports

import (
	"bytes"
	"strings"
	"testing"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// The interval log reads back with HdrHistogram's own reader: one
// interval per (repeat, phase, distribution), each with the phase's exact
// count, min and max, so any percentile can be derived again.
func TestHDRLogRoundTrip(t *testing.T) {
	r := fixture(t)
	var b bytes.Buffer
	if err := HDRLog(&b, r); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	if !strings.HasPrefix(text, "#[Histogram log format version 1.3]") || !strings.Contains(text, "values in microseconds") {
		t.Fatalf("header:\n%s", text[:min(len(text), 400)])
	}
	rd := hdr.NewHistogramLogReader(strings.NewReader(text))
	var got []*hdr.Histogram
	for {
		h, err := rd.NextIntervalHistogram()
		if err != nil {
			t.Fatal(err)
		}
		if h == nil {
			break
		}
		got = append(got, h)
	}
	var want int
	for _, pr := range r.Result.Phases {
		for _, d := range []struct {
			kind string
			n    int64
			tag  string
		}{{"response", pr.Summary.Response.Count(), ""}, {"service", pr.Summary.Service.Count(), ""}} {
			if d.n == 0 {
				continue
			}
			if want >= len(got) {
				t.Fatalf("%d intervals read, more expected", len(got))
			}
			h := got[want]
			want++
			if h.TotalCount() != d.n || !strings.HasSuffix(h.Tag(), "/"+d.kind) || !strings.HasPrefix(h.Tag(), "r") {
				t.Errorf("interval %d: tag %q count %d, want %s with %d samples", want, h.Tag(), h.TotalCount(), d.kind, d.n)
			}
			dist := &pr.Summary.Response
			if d.kind == "service" {
				dist = &pr.Summary.Service
			}
			// The histogram's max is its top bucket's upper edge: within
			// 0.1 % (3 significant digits) of the exact max.
			if mx, _ := dist.Max(); float64(h.Max()) < float64(mx.Microseconds())*0.999 || float64(h.Max()) > float64(mx.Microseconds())*1.001+1 {
				t.Errorf("%s: max %d µs in the log, %s measured", h.Tag(), h.Max(), mx)
			}
		}
	}
	if want == 0 {
		t.Fatal("the fixture has no samples: nothing was tested")
	}
	if want != len(got) {
		t.Errorf("%d intervals in the log, %d phases' distributions", len(got), want)
	}
}

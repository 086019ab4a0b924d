package measure

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/runner-dev/runner/drivers"
)

// TestLazyRecorderAllocatesAsSamplesCome, from the breaker: 200 flow
// steps of 16 eager shards held gigabytes. A lazy recorder's shards hold
// no histogram until their first sample, and its summary is the same as
// an eager one's; an empty distribution still encodes and decodes.
func TestLazyRecorderAllocatesAsSamplesCome(t *testing.T) {
	lazy, eager := NewRecorder(16, Options{Lazy: true}), NewRecorder(16, Options{})
	for _, r := range []*Recorder{lazy, eager} {
		r.AddArrivals(3)
		for i := range 3 {
			r.Record(5, &Result{Seq: uint64(i + 1), Intended: 0, Sent: time.Millisecond, Done: time.Duration(i+2) * time.Millisecond, Outcome: drivers.Outcome{Class: drivers.OK, Responded: true}})
		}
	}
	held := 0
	for _, s := range lazy.shards {
		for _, h := range []*Dist{&s.response, &s.service, &s.sendLag, &s.iv} {
			if h.h != nil {
				held++
			}
		}
	}
	if held != 4 {
		t.Errorf("the lazy recorder holds %d histograms after samples on one shard, want 4", held)
	}
	a, b := lazy.Summary(time.Second), eager.Summary(time.Second)
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) != string(jb) {
		t.Errorf("lazy and eager summaries differ:\n%s\n%s", ja, jb)
	}
	var empty, back Dist
	j, err := json.Marshal(empty)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(j, &back); err != nil || back.Count() != 0 {
		t.Errorf("an empty distribution does not round-trip: %v (count %d)", err, back.Count())
	}
}

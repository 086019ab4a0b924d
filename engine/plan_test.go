package engine

import (
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/schema"
)

// runner plan says what the plan alone decides, and only that.
func TestDescribeExpectations(t *testing.T) {
	sc := &schema.Scenario{Version: 1, Name: "p", File: "p.yaml", Repeats: 2, Phases: []schema.Phase{
		{Name: "open", Open: &schema.Open{Rate: constRate(10), Connections: 50}, Duration: dur("30s")},
		{Name: "both", Closed: &schema.Closed{Connections: 2}, Requests: 300, Duration: dur("1s")},
		{Name: "count", Closed: &schema.Closed{Connections: 2, ExpectedRate: 100}, Requests: 300},
		{Name: "stairs", Ramp: &schema.Ramp{Connections: schema.Staircase{From: 0, To: 8, Step: 4, Every: dur("1s")}}},
	}}
	pl, err := Compile(sc, Limits{Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	out := pl.Describe()
	for _, want := range []string{
		"expected     300 requests; time 30s",
		"expected     at most 300 requests (closed model: the rest depends on the target); time 1s",
		"expected     300 requests; time depends on the target",
		"CO-corrected for one request per 20ms per connection",
		"staircase    4@1s → 8@2s",
		"2 repeat(s) of 4 phase(s)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("plan lacks %q:\n%s", want, out)
		}
	}
}

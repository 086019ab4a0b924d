package engine

import (
	"context"
	"testing"
	"time"

	"github.com/runner-dev/runner/drivers/fake"
	"github.com/runner-dev/runner/schema"
)

// BenchmarkClosedLoopOverhead measures the engine's own cost per request:
// a closed model over a fake target that answers at once, so every
// nanosecond and allocation is the engine's (scheduling, stamping,
// recording), not a driver's or a network's.
func BenchmarkClosedLoopOverhead(b *testing.B) {
	d := &fake.Driver{}
	sc := &schema.Scenario{Version: 1, Name: "b", File: "b.yaml", Repeats: 1, Phases: []schema.Phase{
		{Closed: &schema.Closed{Connections: 4}, Requests: max(b.N, 1)},
	}}
	pl, err := Compile(sc, Limits{Timeout: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	res, err := (&Runner{Driver: d, Timeout: time.Second}).Run(context.Background(), pl)
	if err != nil {
		b.Fatal(err)
	}
	if got := res.Phases[0].Summary.OK; got != int64(max(b.N, 1)) {
		b.Fatalf("ok %d, want %d", got, b.N)
	}
}

// BenchmarkOpenPacer measures the open model's pacer and hand-off at a
// rate far above what it can reach, so it runs flat out.
func BenchmarkOpenPacer(b *testing.B) {
	d := &fake.Driver{}
	sc := &schema.Scenario{Version: 1, Name: "b", File: "b.yaml", Repeats: 1, Phases: []schema.Phase{
		{Open: &schema.Open{Rate: schema.RateSpec{From: 1e9, To: 1e9}, Connections: 4}, Requests: max(b.N, 1)},
	}}
	pl, err := Compile(sc, Limits{Timeout: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	if _, err := (&Runner{Driver: d, Timeout: time.Second}).Run(context.Background(), pl); err != nil {
		b.Fatal(err)
	}
}

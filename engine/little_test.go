package engine

import (
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/engine/measure"
)

// closedThinking is a closed phase of n connections over elapsed whose
// connections each made `cycles` requests of w, thinking z after each.
func closedThinking(n int, elapsed, w, z time.Duration, cycles int) *PhaseResult {
	s := &measure.Summary{Elapsed: elapsed, Responded: int64(n * cycles), ResponseSum: time.Duration(n*cycles) * w}
	return &PhaseResult{
		Phase:                &PhasePlan{Model: Closed, Connections: n, ThinkTime: z},
		Summary:              s,
		ConnectionsRequested: n,
	}
}

// TestLittle_ThinkTime: with think time Z the closed model's law is
// N = λ·(W+Z); it is checked when the phase spans at least 10 cycles, and
// only shown (never warned) when a connection went round a few times at
// most, e.g. 10,000 idle connections thinking 1 h in a 60 s phase, where
// λ·(W+Z) with the full hour read 600,049 against 10,000.
func TestLittle_ThinkTime(t *testing.T) {
	// 100 connections, W 10 ms, Z 90 ms: 100 cycles in 10 s each.
	lc := Little(closedThinking(100, 10*time.Second, 10*time.Millisecond, 90*time.Millisecond, 100))
	if lc.Want != 100 || lc.L < 99.9 || lc.L > 100.1 {
		t.Errorf("steady thinking: L %.2f want %.0f (%s), want 100 vs 100", lc.L, lc.Want, lc.Against)
	}
	// 10,000 connections, one request of 1 ms each, then 1 h of thought
	// in a 60 s phase.
	lc = Little(closedThinking(10000, time.Minute, time.Millisecond, time.Hour, 1))
	if lc.Want != 0 || !strings.Contains(lc.Against, "not checked") {
		t.Errorf("idle connections: want %.0f against %q, want the law shown, not checked", lc.Want, lc.Against)
	}
	if lc.L > 10001 || lc.L < 9999 {
		t.Errorf("idle connections: L %.2f, want ≈ 10000 (no connection thinks longer than the phase)", lc.L)
	}
}

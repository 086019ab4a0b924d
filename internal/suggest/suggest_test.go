package suggest

import (
	"slices"
	"strings"
	"testing"
)

func TestDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"", "rate", 4},
		{"rate", "rate", 0},
		{"Rate", "rATE", 0},            // case is ignored
		{"rat", "rate", 1},             // insertion
		{"ratee", "rate", 1},           // deletion
		{"rote", "rate", 1},            // substitution
		{"inflgiht", "inflight", 1},    // transposition: one slip
		{"ca", "abc", 3},               // restricted: no edit of a transposed pair
		{"errorRate", "error_rate", 1}, // a separator is one slip
		{"größe", "grösse", 2},         // runes, not bytes
		{"connections", "conections", 1},
	} {
		if got := Distance(c.a, c.b); got != c.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
		if got := Distance(c.b, c.a); got != c.want {
			t.Errorf("Distance(%q, %q) = %d, want %d (symmetry)", c.b, c.a, got, c.want)
		}
	}
}

func TestLimit(t *testing.T) {
	for w, want := range map[string]int{"": 1, "to": 1, "rate": 1, "inflight": 2, "connections": 3, "größe": 1} {
		if got := Limit(w); got != want {
			t.Errorf("Limit(%q) = %d, want %d", w, got, want)
		}
	}
}

func TestNearest(t *testing.T) {
	known := []string{"p50", "p90", "p99", "p999", "error_rate", "errors", "rate"}
	for _, c := range []struct {
		word string
		max  int
		want []string
	}{
		{"p99x", 2, []string{"p99", "p999"}}, // ties, in the candidates' order
		{"P99", 1, []string{"p99"}},          // an exact match but for case
		{"errorRate", 3, []string{"error_rate"}},
		{"rat", 1, []string{"rate"}},
		{"throughput", 3, nil},                    // nothing within reach
		{"p9", 0, nil},                            // maxDist 0: exact (but for case) only
		{strings.Repeat("p", MaxLen+1), 100, nil}, // too long to be a slip
	} {
		if got := Nearest(c.word, known, c.max); !slices.Equal(got, c.want) {
			t.Errorf("Nearest(%q, %d) = %q, want %q", c.word, c.max, got, c.want)
		}
	}
	if got := Nearest("x", nil, 5); got != nil {
		t.Errorf("Nearest with no candidates = %q, want nil", got)
	}
}

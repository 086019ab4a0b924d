package engine

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// The union of the N segments' schedules is the one-generator schedule:
// every global arrival once, at its own intended offset, for uniform and
// seeded Poisson arrivals, constant and ramping rates, N = 1 … 7.
func TestSegmentSchedulesUnionIsTheSchedule(t *testing.T) {
	const arrivals = 1000
	curves := []RateCurve{
		{From: 500, To: 500, Over: 10 * time.Second},
		{From: 0, To: 800, Over: 5 * time.Second},
		{From: 300, To: 20, Over: 8 * time.Second},
	}
	for _, c := range curves {
		for _, kind := range []string{"uniform", "poisson"} {
			newSch := func() Schedule {
				if kind == "poisson" {
					return NewPoisson(c, 42)
				}
				return Uniform{Curve: c}
			}
			whole := newSch()
			want := make([]time.Duration, arrivals)
			for i := range want {
				want[i] = whole.At(int64(i))
			}
			for n := 1; n <= 7; n++ {
				got := make([]time.Duration, arrivals)
				seen := make([]int, arrivals)
				for k := range n {
					s := Segment{K: k, N: n}
					sch := s.Schedule(newSch())
					for i := int64(0); s.Global(i) < arrivals; i++ {
						g := s.Global(i)
						got[g] = sch.At(i)
						seen[g]++
					}
				}
				if i := slices.IndexFunc(seen, func(c int) bool { return c != 1 }); i >= 0 {
					t.Fatalf("%s %v, N=%d: global arrival %d taken %d times", kind, c, n, i, seen[i])
				}
				if !slices.Equal(got, want) {
					t.Fatalf("%s %v, N=%d: the segments' offsets differ from the schedule's", kind, c, n)
				}
			}
		}
	}
}

// Connections and a requests bound split exactly: the shares sum to the
// whole, differ by at most one, and the first segments take the rest.
func TestSegmentSharesSumToTheWhole(t *testing.T) {
	for n := 1; n <= 9; n++ {
		for _, c := range []int{0, 1, 2, 7, 50, 101} {
			sum, lo, hi := 0, c, 0
			for k := range n {
				share := Segment{K: k, N: n}.Connections(c)
				sum += share
				lo, hi = min(lo, share), max(hi, share)
				if want := c / n; k < c%n && share != want+1 || k >= c%n && share != want {
					t.Errorf("%d connections, segment %d/%d: %d", c, k, n, share)
				}
			}
			if sum != c || hi-lo > 1 {
				t.Errorf("%d connections over %d segments: sum %d, spread %d–%d", c, n, sum, lo, hi)
			}
		}
		for _, r := range []int64{0, 1, 3, 10, 1000, 1001} {
			var sum int64
			for k := range n {
				s := Segment{K: k, N: n}
				share := s.Requests(r)
				sum += share
				// Exactly the global arrivals below r that are this segment's.
				var owned int64
				for i := int64(0); s.Global(i) < r; i++ {
					owned++
				}
				if share != owned {
					t.Errorf("requests %d, segment %v: share %d, owns %d arrivals below it", r, s, share, owned)
				}
			}
			if sum != r {
				t.Errorf("requests %d over %d segments: shares sum to %d", r, n, sum)
			}
		}
	}
}

func TestParseSegment(t *testing.T) {
	for _, c := range []struct {
		text string
		want Segment
	}{{"0/1", Segment{0, 1}}, {"3/4", Segment{3, 4}}, {"0/10000", Segment{0, 10000}}} {
		if got, err := ParseSegment(c.text); err != nil || got != c.want {
			t.Errorf("%q: %v %v, want %v", c.text, got, err, c.want)
		}
	}
	for _, c := range []struct{ text, want string }{
		{"4/4", "K must be 0 to 3"}, {"-1/2", "K must be 0 to 1"}, {"1/0", "N must be 1 to"},
		{"0/10001", "N must be 1 to"}, {"a/b", "want K/N"}, {"2", "want K/N"}, {"", "want K/N"},
	} {
		if _, err := ParseSegment(c.text); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want an error saying %q", c.text, err, c.want)
		}
	}
	if !(Segment{}).Whole() || !(Segment{0, 1}).Whole() || (Segment{1, 2}).Whole() {
		t.Error("Whole: want the zero segment and 0/1 whole, 1/2 not")
	}
}

// Due of a segment's view of a uniform schedule (closed form) counts the
// segment's arrivals before t exactly as walking them does.
func TestSegmentDue(t *testing.T) {
	for _, c := range []RateCurve{{From: 500, To: 500, Over: 10 * time.Second}, {From: 0, To: 800, Over: 5 * time.Second}} {
		for n := 1; n <= 5; n++ {
			for k := range n {
				sch := Segment{K: k, N: n}.Schedule(Uniform{Curve: c})
				for _, at := range []time.Duration{0, time.Millisecond, 333 * time.Millisecond, time.Second, 4 * time.Second} {
					var walked int64
					for sch.At(walked) < at {
						walked++
					}
					if got := Due(sch, at, 0); got != walked {
						t.Errorf("%v, segment %d/%d, t=%s: Due %d, walked %d", c, k, n, at, got, walked)
					}
				}
			}
		}
	}
}

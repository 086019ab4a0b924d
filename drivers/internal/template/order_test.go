package template

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/runner-dev/runner/drivers"
)

// tenRows is a data file of rows r0 … r9 in one column.
func tenRows() *Data {
	d := &Data{File: "ten.csv", Columns: []string{"v"}}
	for i := range 10 {
		d.Rows = append(d.Rows, []string{fmt.Sprint("r", i)})
	}
	return d
}

// rowsOf renders {{data.v}} for seq 1 … len(slots), request seq on
// connection slot slots[seq−1].
func rowsOf(t *testing.T, d *Data, slots []int) string {
	t.Helper()
	tp, err := Parse("{{data.v}}", d)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for i, slot := range slots {
		out = append(out, string(tp.Render(nil, uint64(i+1), slot)))
	}
	return strings.Join(out, " ")
}

func TestDataOrders(t *testing.T) {
	slots := []int{0, 1, 2, 0, 1, 2, 11, 0, 5, 5, 5, 5}
	for _, tc := range []struct {
		order string
		seed  int64
		want  string
	}{
		// The default: seq 1 … 12 read rows 0 … 9, 0, 1, whatever the slot.
		{"", 0, "r0 r1 r2 r3 r4 r5 r6 r7 r8 r9 r0 r1"},
		{"rows", 0, "r0 r1 r2 r3 r4 r5 r6 r7 r8 r9 r0 r1"},
		// A virtual user keeps its row: slot s reads row s mod 10 (slot 11: row 1).
		{"connection", 0, "r0 r1 r2 r0 r1 r2 r1 r0 r5 r5 r5 r5"},
		// Rows ⌊mix(seed, seq)·10 / 2⁶⁴⌋, SplitMix64's finalizer, worked
		// out apart from this code (a few lines of Python).
		{"random", 7, "r3 r0 r9 r5 r4 r2 r4 r3 r1 r4 r1 r9"},
		// A negative seed is a seed like another (two's complement).
		{"random", -3, "r9 r9 r9 r4 r1 r0 r4 r8 r3 r3 r4 r5"},
	} {
		d := tenRows()
		if err := SetOrder(d, tc.order, tc.seed); err != nil {
			t.Fatalf("SetOrder(%q, %d): %v", tc.order, tc.seed, err)
		}
		if got := rowsOf(t, d, slots); got != tc.want {
			t.Errorf("order %q seed %d:\n got %s\nwant %s", tc.order, tc.seed, got, tc.want)
		}
	}
}

// A random order is a function of (seed, seq) alone: the same seed gives
// the same rows in any order of requests, from any goroutine; another
// seed other rows; and every row is drawn about as often as any other.
func TestRandomOrderIsDeterministicAndEven(t *testing.T) {
	d := tenRows()
	if err := SetOrder(d, "random", 42); err != nil {
		t.Fatal(err)
	}
	const n = 100_000
	first := make([]string, n+1)
	counts := map[string]int{}
	for seq := uint64(1); seq <= n; seq++ {
		first[seq] = d.Row(seq, int(seq%7))[0]
		counts[first[seq]]++
	}
	// Backwards, on another slot, from 8 goroutines at once.
	errs := make(chan error, 8)
	for g := range 8 {
		go func() {
			for seq := uint64(n - g); seq >= 1; seq -= 8 {
				if got := d.Row(seq, g)[0]; got != first[seq] {
					errs <- fmt.Errorf("seq %d read %s, then %s", seq, first[seq], got)
					return
				}
				if seq <= 8 {
					break
				}
			}
			errs <- nil
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	// 10⁴ expected per row, σ ≈ 95: 5 % is over 5σ.
	for i := range 10 {
		if c := counts[fmt.Sprint("r", i)]; c < 9500 || c > 10500 {
			t.Errorf("row %d drawn %d times in %d; want about %d", i, c, n, n/10)
		}
	}
	other := tenRows()
	if err := SetOrder(other, "random", 43); err != nil {
		t.Fatal(err)
	}
	same := 0
	for seq := uint64(1); seq <= 1000; seq++ {
		if other.Row(seq, 0)[0] == first[seq] {
			same++
		}
	}
	if same > 200 { // 100 expected by chance
		t.Errorf("seeds 42 and 43 agree on %d rows of 1000", same)
	}
}

func TestSetOrderErrors(t *testing.T) {
	for _, tc := range []struct {
		order   string
		seed    int64
		noData  bool
		key     string
		message string
	}{
		{"sorted", 0, false, "data_order", `data_order "sorted": expected rows, connection, random`},
		{"random", 0, false, "data_seed", "data_order random needs a data_seed, a nonzero integer"},
		{"rows", 5, false, "data_seed", "data_seed seeds data_order: random; the order here is rows"},
		{"", 5, false, "data_seed", "the order here is rows"},
		{"connection", 0, true, "data_order", "data_order applies to a data file, and there is none"},
		{"", 3, true, "data_seed", "data_seed applies to a data file"},
	} {
		d := tenRows()
		if tc.noData {
			d = nil
		}
		err := SetOrder(d, tc.order, tc.seed)
		var ce *drivers.ConfigError
		if err == nil || !strings.Contains(err.Error(), tc.message) || !errors.As(err, &ce) || ce.Key != tc.key {
			t.Errorf("SetOrder(%q, %d, data %v) = %v, want a ConfigError at %s containing %q", tc.order, tc.seed, !tc.noData, err, tc.key, tc.message)
		}
	}
	if err := SetOrder(nil, "", 0); err != nil {
		t.Errorf("no data, no order: %v", err)
	}
}

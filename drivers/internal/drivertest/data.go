package drivertest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runner-dev/runner/drivers"
)

// Users writes u.csv, a data file of one column user with the rows ann,
// bob and cy, in a new directory and returns the directory.
func Users(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "u.csv"), []byte("user\nann\nbob\ncy\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Received collects the messages a test server received. Its zero value
// is empty; it is safe for concurrent use.
type Received struct {
	mu  sync.Mutex
	got []string
}

// Add notes one message.
func (r *Received) Add(msg string) {
	r.mu.Lock()
	r.got = append(r.got, msg)
	r.mu.Unlock()
}

// Take returns the messages noted since the last Take, in order.
func (r *Received) Take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.got
	r.got = nil
	return out
}

// DataOrders checks a driver's data_order end to end. build makes the
// driver under test with data u.csv (Users) and the given data_order and
// data_seed, sending `{{data.user}}` as the whole message, to a server
// that notes each message in got. Rows go in turn by seq, by connection
// slot with connection, and with random the same for the same seed and
// otherwise for another.
func DataOrders(t *testing.T, got *Received, build func(order string, seed int64) (drivers.Driver, error)) {
	t.Helper()
	run := func(order string, seed int64, reqs [][2]int) string {
		t.Helper()
		got.Take()
		d, err := build(order, seed)
		if err != nil {
			t.Fatal(err)
		}
		c, err := d.Dial(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		for _, r := range reqs {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			out := c.Do(ctx, drivers.Request{Seq: uint64(r[0]), Slot: r[1]})
			cancel()
			if out.Class != drivers.OK {
				t.Fatalf("data_order %q: request %d: %s %v", order, r[0], out.Class, out.Err)
			}
		}
		return strings.Join(got.Take(), " ")
	}
	// (seq, slot) pairs.
	reqs := [][2]int{{1, 0}, {2, 1}, {3, 5}, {4, 2}, {5, 0}}
	if got, want := run("", 0, reqs), "ann bob cy ann bob"; got != want {
		t.Errorf("default order: %s, want %s", got, want)
	}
	if got, want := run("rows", 0, reqs), "ann bob cy ann bob"; got != want {
		t.Errorf("rows: %s, want %s", got, want)
	}
	if got, want := run("connection", 0, reqs), "ann bob cy cy ann"; got != want {
		t.Errorf("connection: %s, want %s", got, want)
	}
	var many [][2]int
	for seq := 1; seq <= 40; seq++ {
		many = append(many, [2]int{seq, seq % 3})
	}
	a, b, c := run("random", -5, many), run("random", -5, many), run("random", 6, many)
	if a != b || a == c || strings.Count(a, "ann") == 40 {
		t.Errorf("random: seed -5 gave\n%s\nthen\n%s\nseed 6\n%s", a, b, c)
	}
}

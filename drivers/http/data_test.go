package http

import (
	"context"
	"io"
	nethttp "net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/drivers"
	"github.com/runner-dev/runner/drivers/internal/drivertest"
	"github.com/runner-dev/runner/schema"
)

// doAt sends request seq on c as if on connection slot slot and fails
// the test unless it is ok.
func doAt(t *testing.T, c drivers.Conn, seq uint64, slot int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if out := c.Do(ctx, drivers.Request{Seq: seq, Slot: slot}); out.Class != drivers.OK {
		t.Fatalf("request %d: %s %s %v", seq, out.Class, out.Code, out.Err)
	}
}

// writeUsers writes users.csv (ann, bob, cy, with a password each) in a
// new directory and returns the directory.
func writeUsers(t *testing.T) string {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "users.csv"), []byte("user,password\nann,a1\nbob,\"b,2\"\ncy,c3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// {{data.NAME}} reaches the server in the path, a header and the body,
// from the row the data order picks: the server sees what the file says.
func TestDataInPathHeaderAndBody(t *testing.T) {
	var got drivertest.Received
	s := newServer(t, func(w nethttp.ResponseWriter, r *nethttp.Request) {
		b, _ := io.ReadAll(r.Body)
		got.Add(r.URL.Path + " " + r.Header.Get("X-User") + " " + string(b))
	})
	dir := writeUsers(t)
	for _, tc := range []struct {
		order string
		seed  int64
		// requests as (seq, slot) pairs
		reqs [][2]int
		want []string
	}{
		{"", 0, [][2]int{{1, 0}, {2, 0}, {3, 1}, {4, 1}},
			[]string{"/u/ann ann a1", "/u/bob bob b,2", "/u/cy cy c3", "/u/ann ann a1"}},
		{"connection", 0, [][2]int{{1, 0}, {2, 2}, {3, 1}, {4, 0}, {5, 4}},
			[]string{"/u/ann ann a1", "/u/cy cy c3", "/u/bob bob b,2", "/u/ann ann a1", "/u/bob bob b,2"}},
	} {
		t.Run(tc.order, func(t *testing.T) {
			got.Take()
			d, err := New(schema.HTTP{Method: "POST", Path: "/u/{{data.user}}", Headers: map[string]string{"X-User": "{{ data.user }}"},
				Body: "{{data.password}}", Data: "users.csv", DataOrder: tc.order, DataSeed: tc.seed}, s.URL, dir)
			if err != nil {
				t.Fatal(err)
			}
			c := dial(t, d)
			for _, r := range tc.reqs {
				doAt(t, c, uint64(r[0]), r[1])
			}
			if seen := got.Take(); strings.Join(seen, "|") != strings.Join(tc.want, "|") {
				t.Errorf("server saw %q, want %q", seen, tc.want)
			}
		})
	}
}

// The body's {{data.NAME}} reaches the server from the row each data
// order picks (drivertest.DataOrders), random included.
func TestDataOrders(t *testing.T) {
	var got drivertest.Received
	s := newServer(t, func(w nethttp.ResponseWriter, r *nethttp.Request) {
		b, _ := io.ReadAll(r.Body)
		got.Add(string(b))
	})
	dir := drivertest.Users(t)
	drivertest.DataOrders(t, &got, func(order string, seed int64) (drivers.Driver, error) {
		return New(schema.HTTP{Method: "POST", Body: "{{data.user}}", Data: "u.csv", DataOrder: order, DataSeed: seed}, s.URL, dir)
	})
}

// Values a path or a header reads from the data file are checked at New,
// as the literal text is, and the error names file, row and column; a
// bad order, a template over a missing column and a missing file are
// each reported at their key.
func TestDataErrors(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "bad.csv"), []byte("p,h\nok,fine\nwith space,\"two\nlines\"\n"), 0o644)
	for _, tc := range []struct {
		name string
		cfg  schema.HTTP
		key  string
		want string
	}{
		{"space in a path value", schema.HTTP{Path: "/{{data.p}}", Data: "bad.csv"}, "path",
			`path "/{{data.p}}": the data file ` + filepath.Join(dir, "bad.csv") + `, row 2, column "p": byte ' ' is not allowed`},
		{"line break in a header value", schema.HTTP{Headers: map[string]string{"X-H": "{{data.h}}"}, Data: "bad.csv"}, "headers.X-H",
			`row 2, column "h": byte '\n' is not allowed in a header value`},
		{"no such column", schema.HTTP{Body: "{{data.nope}}", Data: "bad.csv"}, "body", `no column "nope"; columns: p, h`},
		{"no data file", schema.HTTP{Path: "/{{data.p}}"}, "path", "no data file"},
		{"missing file", schema.HTTP{Path: "/{{data.p}}", Data: "missing.csv"}, "data", "missing.csv"},
		{"unknown order", schema.HTTP{Data: "bad.csv", DataOrder: "shuffled"}, "data_order", `data_order "shuffled"`},
		{"random without seed", schema.HTTP{Data: "bad.csv", DataOrder: "random"}, "data_seed", "needs a data_seed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.cfg, "http://127.0.0.1:1", dir)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v, want an error containing %q", err, tc.want)
			}
			if ps := problemKeys(err); len(ps) != 1 || ps[0] != tc.key {
				t.Errorf("problems at %v, want one at %s", ps, tc.key)
			}
		})
	}
}

// problemKeys lists the keys of the drivers.ConfigErrors err joins.
func problemKeys(err error) []string {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []string
		for _, e := range j.Unwrap() {
			out = append(out, problemKeys(e)...)
		}
		return out
	}
	if ce, ok := err.(*drivers.ConfigError); ok {
		return []string{ce.Key}
	}
	return []string{"(not a ConfigError: " + err.Error() + ")"}
}

// Rendering a request with data columns allocates nothing once the
// buffer has grown: values are appended, never built.
func TestDataRenderDoesNotAllocate(t *testing.T) {
	dir := writeUsers(t)
	d, err := New(schema.HTTP{Method: "POST", Path: "/u/{{data.user}}", Headers: map[string]string{"X-P": "{{data.password}}"},
		Body: "{{data.user}}:{{seq}}", Data: "users.csv", DataOrder: "random", DataSeed: 3}, "http://127.0.0.1:1", dir)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 0, 1024)
	seq := uint64(0)
	if n := testing.AllocsPerRun(1000, func() {
		seq++
		row := d.data.Row(seq, int(seq%4))
		buf = d.body.render(d.head.render(buf[:0], seq, row), seq, row)
	}); n != 0 {
		t.Errorf("%v allocations per rendering, want 0", n)
	}
	if !strings.Contains(string(buf), "POST /u/") {
		t.Errorf("rendered %q", buf)
	}
}

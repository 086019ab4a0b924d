package reports

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runner-dev/runner/drivers"
	"github.com/runner-dev/runner/engine"
	"github.com/runner-dev/runner/engine/measure"
	"github.com/runner-dev/runner/internal/clock"
	"github.com/runner-dev/runner/internal/sysinfo"
	"github.com/runner-dev/runner/schema"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/ (result-format.txt only once FormatVersion is raised)")

// fixture is a deterministic run: a warmup and a measured open phase over
// two repeats, with known samples, so its reports can be compared with
// golden files.
func fixture(t *testing.T) *Run {
	t.Helper()
	sc := &schema.Scenario{
		Version: 1, Name: "golden", File: "golden.yaml", Repeats: 2,
		Phases: []schema.Phase{
			{Name: "warm", Warmup: true, Closed: &schema.Closed{Connections: 2}, Duration: schema.Duration(time.Second)},
			{Name: "steady", Open: &schema.Open{Rate: schema.RateSpec{From: 100, To: 100}, Connections: 4}, Duration: schema.Duration(10 * time.Second)},
		},
		Assert:  []schema.Rule{{Expr: "errors == 0", Line: 9, Col: 5}, {Expr: "p50 < 20ms", Line: 10, Col: 5}},
		Secrets: []string{"s3cr3t-token"},
	}
	pl, err := engine.Compile(sc, engine.Limits{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	res := &engine.Result{}
	for rep := 1; rep <= 2; rep++ {
		for i := range pl.Phases {
			p := &pl.Phases[i]
			rec := measure.NewRecorder(1, measure.Options{Duration: 11 * time.Second})
			n := 1000
			if p.Warmup {
				n = 100
			}
			for k := 0; k < n; k++ {
				at := time.Duration(k) * 10 * time.Millisecond
				// Service time 1..10 ms by k mod 10; repeat 2 is 1 ms slower.
				svc := time.Duration(k%10+rep) * time.Millisecond
				out := drivers.Outcome{Class: drivers.OK, Responded: true}
				if k%100 == 99 {
					out = drivers.Outcome{Class: drivers.Status, Code: "503", Responded: true}
				}
				rec.AddArrivals(1)
				rec.Record(0, &measure.Result{Seq: uint64(k + 1), Intended: at, Sent: at, Done: at + svc, Outcome: out})
			}
			rec.AddConnectionsOpened(int64(p.Connections))
			elapsed := 10 * time.Second
			if p.Warmup {
				elapsed = time.Second
			}
			res.Phases = append(res.Phases, &engine.PhaseResult{
				Repeat: rep, Phase: p, Start: start.Add(time.Duration(rep*100+i*10) * time.Second),
				Summary: rec.Summary(elapsed), ConnectionsRequested: p.Connections, ConnectionsEstablished: p.Connections,
				Wall: elapsed, ClientCPU: 0.05, GCPauseMax: 120 * time.Microsecond,
				Server: map[string]float64{"requests": float64(n)},
			})
			if rep == 2 && !p.Warmup {
				// A spawned target's figures: one thread pinned, the
				// process low (a target-thread-bound warning).
				res.Phases[len(res.Phases)-1].Target = &engine.TargetUsage{CPU: 0.48, CPUMaxThread: 0.95, RSS: 12 << 20}
			}
			res.Phases[len(res.Phases)-1].Metrics = engine.MetricsOf(res.Phases[len(res.Phases)-1])
		}
	}
	r := &Run{
		RunID: "20261129T120000Z-abcdef", Tool: "runner", Scenario: sc, Plan: pl,
		Env: sysinfo.Env{OS: "linux", Arch: "amd64", Cores: 2, CoresAllowed: 1, GoVersion: "go1.26", Runner: "test",
			Timer: &clock.Resolution{Sleep: time.Millisecond, Samples: 25, Timer: 1080 * time.Microsecond, Precise: 55 * time.Microsecond, PreciseAvailable: true}},
		Target: "http://127.0.0.1:8080/?token=s3cr3t-token", Started: start, Ended: start.Add(time.Hour),
		Result: res,
	}
	r.Verdict = engine.Judge(pl, res)
	r.Across = engine.Across(res)
	r.Warnings = engine.Checks(pl, res)
	return r
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./reports -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs from the golden file (go test ./reports -update after checking):\n%s", name, got)
	}
}

func TestConsoleGolden(t *testing.T) {
	r := fixture(t)
	var b bytes.Buffer
	Console(&b, r, true)
	out := b.String()
	// Facts the golden file must hold whatever its layout: the failed rule
	// with its observed value, and no secret.
	for _, want := range []string{"FAIL         errors == 0", "errors=10", "PASS         p50 < 20ms", "verdict: FAIL", "warm · closed model", "never judged",
		"timer    a 1.000ms sleep overshoots by (median of 25) 1.080ms on a Go timer, 55.0µs on the precise clock",
		"target        cpu 48.0 % of the machine, busiest thread 95.0 % of a core, rss 12.0 MiB",
		"one target thread ran at 95 % of a core while the whole target used 48 % of the machine"} {
		if !strings.Contains(out, want) {
			t.Errorf("console lacks %q", want)
		}
	}
	if strings.Contains(out, "s3cr3t-token") {
		t.Error("console shows a secret")
	}
	golden(t, "console.golden", b.Bytes())
}

func TestTSVRowsGolden(t *testing.T) {
	r := fixture(t)
	var b bytes.Buffer
	b.WriteString(strings.Join(TSVColumns, "\t") + "\n")
	for _, pr := range r.Result.Phases {
		for _, row := range r.Rows(pr) {
			if len(row) != len(TSVColumns) {
				t.Fatalf("row has %d cells, header %d", len(row), len(TSVColumns))
			}
			b.WriteString(strings.Join(row, "\t") + "\n")
		}
	}
	// The leading 13 columns, note included, are fixed (docs/design.md,
	// "Outputs").
	first := "timestamp runId tool connections requests throughput p50 p95 p99 errors cpu gcPause note"
	if got := strings.Join(TSVColumns[:13], " "); got != first {
		t.Fatalf("first 12 columns %q, want %q", got, first)
	}
	// Throughput counts only ok responses: 990 of 1000 over 10 s.
	if !strings.Contains(b.String(), "\t1000\t99.0\t") {
		t.Errorf("throughput column is not 99.0:\n%s", b.String())
	}
	golden(t, "rows.golden.tsv", b.Bytes())
}

func TestJSONCompleteAndRedacted(t *testing.T) {
	r := fixture(t)
	path := filepath.Join(t.TempDir(), "out", "r.json")
	if err := WriteJSON(path, r); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte("s3cr3t-token")) {
		t.Fatal("JSON shows a secret")
	}
	if !bytes.Contains(b, []byte(`"p50 < 20ms"`)) {
		t.Fatal("rules are HTML-escaped in the JSON")
	}
	var back struct {
		RunID  string `json:"run_id"`
		Result struct {
			Phases []struct {
				Repeat  int             `json:"repeat"`
				Summary measure.Summary `json:"summary"`
			} `json:"phases"`
		} `json:"result"`
		Environment sysinfo.Env          `json:"environment"`
		Across      []engine.PhaseSpread `json:"across_repeats"`
	}
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.RunID != r.RunID || len(back.Result.Phases) != 4 || back.Environment.Cores != 2 || len(back.Across) != 2 {
		t.Fatalf("round trip lost data: %+v", back.RunID)
	}
	// The histograms survive: the same nearest-rank percentile after decoding.
	orig := r.Result.Phases[1].Summary
	dec := back.Result.Phases[1].Summary
	for _, p := range []float64{50, 90, 99, 100} {
		a, _ := orig.Response.Percentile(p)
		b, _ := dec.Response.Percentile(p)
		if a != b {
			t.Fatalf("p%g %s before, %s after the JSON round trip", p, a, b)
		}
	}
	if err := dec.Check(); err != nil {
		t.Fatal(err)
	}
	// No temporary file is left behind.
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".*tmp*"))
	if len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

// Appends from concurrent writers never interleave and write the header once.
func TestAppendTSVConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.tsv")
	const writers, each = 8, 40
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				row := make([]string, len(TSVColumns))
				for c := range row {
					row[c] = fmt.Sprintf("w%d-%d-%d", w, i, c)
				}
				if err := AppendTSV(path, [][]string{row}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 1+writers*each {
		t.Fatalf("%d lines, want %d", len(lines), 1+writers*each)
	}
	if lines[0] != strings.Join(TSVColumns, "\t") {
		t.Fatalf("first line is not the header: %q", lines[0])
	}
	for i, l := range lines[1:] {
		cells := strings.Split(l, "\t")
		if len(cells) != len(TSVColumns) {
			t.Fatalf("line %d has %d cells", i+2, len(cells))
		}
		if strings.HasPrefix(l, "timestamp") {
			t.Fatalf("header repeated at line %d", i+2)
		}
		prefix := strings.TrimSuffix(cells[0], "-0")
		for c, cell := range cells {
			if cell != fmt.Sprintf("%s-%d", prefix, c) {
				t.Fatalf("line %d mixes rows: %q", i+2, l)
			}
		}
	}
}

func TestAppendTSVRejectsShortRow(t *testing.T) {
	if err := AppendTSV(filepath.Join(t.TempDir(), "x.tsv"), [][]string{{"a"}}); err == nil {
		t.Fatal("a short row was appended")
	}
}

// TestIssue12_ScenarioNameStaysInItsDirectory: {scenario} expands to one
// path component, whatever the name holds.
func TestIssue12_ScenarioNameStaysInItsDirectory(t *testing.T) {
	for name, want := range map[string]string{
		"../../../tmp/evil": "out/.._.._.._tmp_evil.json",
		"/etc/x":            "out/_etc_x.json",
		`a\b`:               "out/a_b.json",
		"..":                "out/__.json",
		"plain name":        "out/plain name.json",
	} {
		r := &Run{Scenario: &schema.Scenario{Name: name}, RunID: "r1"}
		if got := r.Expand("out/{scenario}.json"); got != want {
			t.Errorf("name %q: %q, want %q", name, got, want)
		}
	}
}

// TestConsoleDrainUnderAMillisecondNotShown: a drain that rounds to 0 ms
// is not titled "+ drain 0s"; one of a few milliseconds is.
func TestConsoleDrainUnderAMillisecondNotShown(t *testing.T) {
	for _, c := range []struct {
		drain time.Duration
		want  string // in the phase's title; "" for no drain
	}{{300 * time.Microsecond, ""}, {3 * time.Millisecond, " + drain 3ms"}} {
		r := fixture(t)
		for _, pr := range r.Result.Phases {
			pr.Summary.LastDone = pr.Summary.Elapsed + c.drain
		}
		var b strings.Builder
		Console(&b, r, true)
		out := b.String()
		if c.want == "" && strings.Contains(out, "+ drain") || c.want != "" && !strings.Contains(out, c.want) {
			t.Errorf("drain %s: want %q in the titles (empty: none):\n%.600s", c.drain, c.want, out)
		}
	}
}

// A connection the client closed after the target's bad frame is not the
// server's close: "server closes bad-magic=10" blamed the target for our
// own close. The console says which is which.
func TestConsoleClosesSaysWhoClosed(t *testing.T) {
	r := fixture(t)
	r.Result.Phases[0].Summary.ClosesByCode = map[string]int64{"eof": 2, "bad-magic": 10, "too-long": 1}
	var b strings.Builder
	Console(&b, r, true)
	if want := "server closes eof=2; client closed after a bad frame bad-magic=10 too-long=1\n"; !strings.Contains(b.String(), want) {
		t.Errorf("want %q in:\n%s", want, b.String())
	}
}

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// compareScenario is a tiny closed-model scenario against the spawned
// reference target.
func compareScenario(delay string, conns, repeats int) string {
	return fmt.Sprintf(`version: 1
name: cmp
target: {serve: http, args: ["--delay", "%s"]}
driver: {http: {path: /}}
phases:
  - {name: steady, closed: {connections: %d}, requests: 1000}
repeats: %d
`, delay, conns, repeats)
}

// compareRun runs a scenario and returns the path of its JSON report.
func compareRun(t *testing.T, dir, name, yaml string) string {
	t.Helper()
	out := filepath.Join(dir, name+".json")
	code, stdout, stderr := cli(t, "run", "-q", "--json", out, scenario(t, name+".yaml", yaml))
	if code != exitPass {
		t.Fatalf("run %s: exit %d\n%s\n%s", name, code, stdout, stderr)
	}
	return out
}

// compareRow returns the line of the text output for one metric.
func compareRow(t *testing.T, out, metric string) string {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), metric+" ") {
			return l
		}
	}
	t.Fatalf("no %s row in:\n%s", metric, out)
	return ""
}

// TestCompare runs the same scenario three times, against a target that
// delays 1 ms, one that delays 5 ms, and one that delays 5 ms driven by
// twice the connections, then compares the reports.
func TestCompare(t *testing.T) {
	t.Parallel() // its runs wait on the target's delay, not on the CPU
	dir := t.TempDir()
	// 6 repeats a side: with 3 a side the smallest possible p is 0.1 and
	// no change could be called significant; 6 a side (smallest p 0.002)
	// leave room for a noisy repeat without losing the significance of a
	// 1 → 5 ms change. 1000 requests a repeat: the fewest a p99 claim
	// stands on (compare makes none from fewer).
	// 1 ms against 10 ms: a client slowed by the race detector and a
	// busy machine (a p99 of 30 ms was seen on the 1 ms side) stays below
	// a 10 ms floor in most repeats.
	fast := compareRun(t, dir, "fast", compareScenario("1ms", 5, 6))
	slow := compareRun(t, dir, "slow", compareScenario("10ms", 5, 6))
	slow4 := compareRun(t, dir, "slow4", compareScenario("10ms", 10, 2))

	t.Run("OneParameterSignificant", func(t *testing.T) {
		code, out, errs := cli(t, "compare", fast, slow)
		if code != exitPass {
			t.Fatalf("exit %d\n%s\n%s", code, out, errs)
		}
		t.Log(out)
		if !strings.Contains(out, "Setup differences: 1\n") || !strings.Contains(out, "Exactly one parameter differs") {
			t.Errorf("want exactly one difference:\n%s", out)
		}
		if !regexp.MustCompile(`target:\s+runner serve http --delay 1ms\s+→ runner serve http --delay 10ms`).MatchString(out) {
			t.Errorf("target difference not listed:\n%s", out)
		}
		if strings.Contains(out, "WARNING") {
			t.Errorf("unexpected warning:\n%s", out)
		}
		// The p99 change is significant, and its p-value printed.
		row := compareRow(t, out, "p99")
		m := regexp.MustCompile(`(p=0\.\d{3}|p<0\.001) significant \(higher, worse\)`).FindStringSubmatch(row)
		if m == nil {
			t.Fatalf("p99 change not reported significant: %s", row)
		}
		if p, err := strconv.ParseFloat(strings.TrimPrefix(m[1], "p="), 64); m[1] != "p<0.001" && (err != nil || p >= 0.05) {
			t.Errorf("p99 p-value %s, want < 0.05", m[1])
		}
		if row := compareRow(t, out, "throughput"); !strings.Contains(row, "significant (lower)") {
			t.Errorf("throughput drop not significant: %s", row)
		}
		code, md, errs := cli(t, "compare", "--format", "md", fast, slow)
		if code != exitPass {
			t.Fatalf("md: exit %d\n%s", code, errs)
		}
		for _, want := range []string{"| parameter | BASE | NEW |", "| target | `runner serve http --delay 1ms` | `runner serve http --delay 10ms` |", "| p99 (ms) |", m[1] + " significant (higher, worse) |"} {
			if !strings.Contains(md, want) {
				t.Errorf("markdown lacks %q:\n%s", want, md)
			}
		}
	})

	t.Run("TwoParametersWarnAndFewRepeats", func(t *testing.T) {
		code, out, errs := cli(t, "compare", fast, slow4)
		if code != exitPass {
			t.Fatalf("exit %d\n%s\n%s", code, out, errs)
		}
		t.Log(out)
		for _, want := range []string{"Setup differences: 2\n", "scenario.phases[0].closed.connections:", "WARNING: 2 parameters differ: a change cannot be attributed to one cause",
			"Not statistically summarized: BASE has 6 repeats, NEW 2"} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
		if row := compareRow(t, out, "p99"); !strings.Contains(row, "not summarized") || strings.Contains(row, "p=") {
			t.Errorf("p99 row with 2 repeats makes a claim: %s", row)
		}
	})

	t.Run("SameSetup", func(t *testing.T) {
		code, out, _ := cli(t, "compare", slow, slow)
		if code != exitPass || !strings.Contains(out, "The runs share their setup") || !strings.Contains(compareRow(t, out, "p99"), "no significant change") {
			t.Errorf("exit %d:\n%s", code, out)
		}
	})

	t.Run("DirectoryPooled", func(t *testing.T) {
		pool := filepath.Join(dir, "pool")
		os.Mkdir(pool, 0o755)
		for _, f := range []string{slow, slow4} {
			b, _ := os.ReadFile(f)
			os.WriteFile(filepath.Join(pool, filepath.Base(f)), b, 0o644)
		}
		os.WriteFile(filepath.Join(pool, "notes.json"), []byte(`{"hello": 1}`), 0o644)
		code, out, errs := cli(t, "compare", fast, pool)
		if code != exitPass {
			t.Fatalf("exit %d\n%s\n%s", code, out, errs)
		}
		for _, want := range []string{"(2 reports)", "NEW 8 repeats", "WARNING: NEW pools 2 reports whose setups differ"} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
		if !strings.Contains(errs, "notes.json") {
			t.Errorf("skipped non-report not mentioned on stderr: %q", errs)
		}
	})

	// mutate writes a copy of the fast report changed by f.
	mutate := func(t *testing.T, name string, f func(map[string]any)) string {
		b, err := os.ReadFile(fast)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		f(m)
		b, _ = json.Marshal(m)
		d := filepath.Join(t.TempDir(), name)
		os.Mkdir(d, 0o755)
		p := filepath.Join(d, name+".json")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}

	t.Run("BadInputs", func(t *testing.T) {
		notReport := filepath.Join(t.TempDir(), "x.json")
		os.WriteFile(notReport, []byte(`{"a": 1}`), 0o644)
		garbage := filepath.Join(t.TempDir(), "g.json")
		os.WriteFile(garbage, []byte(`not json`), 0o644)
		renamed := mutate(t, "renamed", func(m map[string]any) {
			for _, p := range m["result"].(map[string]any)["phases"].([]any) {
				p.(map[string]any)["phase"].(map[string]any)["name"] = "other"
			}
		})
		other := mutate(t, "other", func(m map[string]any) { m["scenario"].(map[string]any)["name"] = "other" })
		mixed := filepath.Dir(other)
		b, _ := os.ReadFile(fast)
		os.WriteFile(filepath.Join(mixed, "fast.json"), b, 0o644)
		for _, c := range []struct {
			name string
			args []string
			want string
		}{
			{"missing", []string{"compare", filepath.Join(dir, "nope.json"), fast}, "no such file"},
			{"not a report", []string{"compare", fast, notReport}, "not a runner JSON report"},
			{"not json", []string{"compare", garbage, fast}, "not a runner JSON report"},
			{"no common phase", []string{"compare", fast, renamed}, "no common phase"},
			{"mixed scenarios", []string{"compare", fast, mixed}, "mixes reports of several scenarios"},
			{"empty dir", []string{"compare", fast, t.TempDir()}, "holds no runner JSON report"},
			{"bad format", []string{"compare", "--format", "html", fast, slow}, "--format"},
			{"one arg", []string{"compare", fast}, "accepts 2 arg"},
		} {
			code, out, errs := cli(t, c.args...)
			if code != exitInvalid || !strings.Contains(errs, c.want) {
				t.Errorf("%s: exit %d, stderr %q, want 2 and %q\n%s", c.name, code, errs, c.want, out)
			}
		}
		// --scenario picks one scenario out of the mixed directory.
		if code, out, errs := cli(t, "compare", "--scenario", "cmp", fast, mixed); code != exitPass || !strings.Contains(out, "share their setup") {
			t.Errorf("--scenario: exit %d\n%s\n%s", code, out, errs)
		}
	})
}

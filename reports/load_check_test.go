package reports

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// editedReport writes the fixture's JSON report, decoded into generic
// maps, edited by edit (given repeat 1's steady phase, result.phases[1])
// and encoded again, to a file in a temporary directory, and returns its
// path.
func editedReport(t *testing.T, edit func(phase map[string]any)) string {
	t.Helper()
	b, err := fixture(t).redactedJSON()
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	phases := doc["result"].(map[string]any)["phases"].([]any)
	edit(phases[1].(map[string]any))
	if b, err = json.Marshal(doc); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "edited.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// A hostile tester edited saved results by hand: the summary's errors
// raised while the saved rules still said errors == 0 passed, negative
// counts, an elapsed time of 0, ok of 10^15 beside a histogram of 1000
// samples, intervals duplicated or out of order. `runner report` rendered
// each of them (verdicts contradicting the numbers beside them), though
// `runner merge` refused them. Load now refuses them all, naming the file,
// the repeat and the phase.
func TestLoadRefusesInconsistentSavedResults(t *testing.T) {
	if _, err := Load(editedReport(t, func(map[string]any) {})); err != nil {
		t.Fatalf("the fixture as written refused: %v", err)
	}
	summary := func(ph map[string]any) map[string]any { return ph["summary"].(map[string]any) }
	for _, c := range []struct {
		name string
		edit func(ph map[string]any)
		want string
	}{
		{"errors raised, classes and codes too", func(ph map[string]any) {
			s := summary(ph)
			s["ok"], s["errors"] = 985.0, 15.0
			s["errors_by_class"] = map[string]any{"status": 15.0}
			s["errors_by_code"] = map[string]any{"503": 15.0}
		}, "response distribution holds 990 samples, ok is 985"},
		{"negative counts", func(ph map[string]any) {
			s := summary(ph)
			s["arrivals"], s["requests"], s["ok"] = -5.0, -5.0, -5.0
		}, "arrivals is negative: -5"},
		{"elapsed and last completion 0", func(ph map[string]any) {
			s := summary(ph)
			s["elapsed_ns"], s["last_sent_ns"], s["last_done_ns"] = 0.0, 0.0, 0.0
		}, "last_done_ns 0 is before second 10 of the timeline"},
		{"ok 10^15", func(ph map[string]any) {
			s := summary(ph)
			s["arrivals"], s["requests"], s["ok"], s["responded"] = 1e15+10, 1e15+10, 1e15, 1e15+10
		}, "response distribution holds 990 samples, ok is 1000000000000000"},
		{"an interval duplicated", func(ph map[string]any) {
			s := summary(ph)
			ivs := s["intervals"].([]any)
			s["intervals"] = append(ivs, ivs[0])
		}, "starts before interval"},
		{"intervals reversed", func(ph map[string]any) {
			s := summary(ph)
			ivs := s["intervals"].([]any)
			for i, j := 0, len(ivs)-1; i < j; i, j = i+1, j-1 {
				ivs[i], ivs[j] = ivs[j], ivs[i]
			}
		}, "starts before interval"},
		{"a negative wall time", func(ph map[string]any) { ph["wall"] = -1.0 }, "wall is negative"},
	} {
		path := editedReport(t, c.edit)
		_, err := Load(path)
		if err == nil {
			t.Errorf("%s: loaded", c.name)
			continue
		}
		for _, want := range []string{path + ": ", "repeat 1, phase steady: ", c.want} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %v\nwant it to say %q", c.name, err, want)
			}
		}
	}
}

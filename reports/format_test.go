package reports

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoad_FormatVersion: a written report carries format_version "1.0";
// Load reads any 1.x and a report without the key (from before it
// existed, read as 1.0), and refuses a newer major or a malformed version
// with an error naming the file and the version.
func TestLoad_FormatVersion(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "r.json")
	if err := WriteJSON(path, fixture(t)); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc["format_version"] != "1.0" {
		t.Fatalf("format_version %v in the written report, want \"1.0\"", doc["format_version"])
	}
	write := func(name string, v any) string {
		t.Helper()
		d := map[string]any{}
		for k, x := range doc {
			d[k] = x
		}
		if v == nil {
			delete(d, "format_version")
		} else {
			d["format_version"] = v
		}
		b, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct {
		name string
		v    any
		want string // the version Load returns
	}{
		{"missing", nil, "1.0"},
		{"same", "1.0", "1.0"},
		{"newer minor", "1.7", "1.7"},
		{"older major", "0.3", "0.3"},
	} {
		r, err := Load(write(c.name+".json", c.v))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if r.FormatVersion != c.want {
			t.Errorf("%s: FormatVersion %q, want %q", c.name, r.FormatVersion, c.want)
		}
	}
	for _, c := range []struct {
		name  string
		v     any
		wants []string
	}{
		{"newer major", "2.0", []string{"format_version 2.0 is newer than this runner reads (1.0)"}},
		{"no minor", "1", []string{`format_version "1" is not MAJOR.MINOR`}},
		{"words", "one.two", []string{`format_version "one.two" is not MAJOR.MINOR`}},
		{"negative", "-1.0", []string{`format_version "-1.0" is not MAJOR.MINOR`}},
		{"a number", 1.0, []string{"format_version", "number"}},
	} {
		p := write(c.name+".json", c.v)
		_, err := Load(p)
		if err == nil {
			t.Errorf("%s: Load accepts format_version %v", c.name, c.v)
			continue
		}
		for _, w := range append(c.wants, p) {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not say %q", c.name, err, w)
			}
		}
	}
}

package reports

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteJSON_Mode0644: the JSON report is readable like the TSV
// (os.CreateTemp alone would leave it 0600).
func TestWriteJSON_Mode0644(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.json")
	if err := WriteJSON(path, fixture(t)); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o644 {
		t.Fatalf("mode %v, want 0644", st.Mode().Perm())
	}
}

// TestCheckJSON_UnwritablePathBeforeTraffic: CheckJSON finds before any
// traffic a report path that cannot be written, naming it; a good path
// is accepted, and nothing is created (not even its directory).
func TestCheckJSON_UnwritablePathBeforeTraffic(t *testing.T) {
	dir := t.TempDir()
	for _, path := range []string{"/proc/nope.json", dir, "/dev/full", "/proc/nope/r.json"} {
		if err := CheckJSON(path); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("CheckJSON(%s) = %v, want an error naming it", path, err)
		}
	}
	good := filepath.Join(dir, "sub", "r.json")
	if err := CheckJSON(good); err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("CheckJSON created %v", left)
	}
	if err := WriteJSON(good, fixture(t)); err != nil {
		t.Fatal(err)
	}
	if err := CheckJSON(good); err != nil {
		t.Fatalf("CheckJSON of an existing report: %v", err)
	}
}

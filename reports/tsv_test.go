package reports

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func tsvRow(tag string) []string {
	row := make([]string, len(TSVColumns))
	for i := range row {
		row[i] = fmt.Sprintf("%s-%d", tag, i)
	}
	return row
}

// TestAppendTSV_PartialLastLineStartsNewRow: a file whose last row was cut
// short (its writer was killed mid-line) gets the new rows on a line of
// their own, never glued to the partial one.
func TestAppendTSV_PartialLastLineStartsNewRow(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.tsv")
	header := strings.Join(TSVColumns, "\t")
	old := header + "\n" + strings.Join(tsvRow("a"), "\t") + "\n" + "2026-01-01T00:00:00.000Z\tcut-sh"
	if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := AppendTSV(path, [][]string{tsvRow("b")}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := old + "\n" + strings.Join(tsvRow("b"), "\t") + "\n"
	if string(b) != want {
		t.Fatalf("file is\n%q\nwant\n%q", b, want)
	}
	// A file ending in a newline gets no blank line.
	if err := AppendTSV(path, [][]string{tsvRow("c")}); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(path)
	if want += strings.Join(tsvRow("c"), "\t") + "\n"; string(b) != want {
		t.Fatalf("file is\n%q\nwant\n%q", b, want)
	}
}

// TestAppendTSV_RefusesOtherColumns: a file whose first line is not our
// header (another tool's, or other columns) is refused with an error
// naming it, and left untouched, rather than mixing formats.
func TestAppendTSV_RefusesOtherColumns(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"other.tsv":    "a\tb\n1\t2\n",
		"older.tsv":    strings.Join(TSVColumns[:12], "\t") + "\n",
		"noheader.tsv": strings.Join(tsvRow("x"), "\t") + "\n",
	} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		for what, err := range map[string]error{
			"AppendTSV": AppendTSV(path, [][]string{tsvRow("b")}),
			"CheckTSV":  CheckTSV(path),
		} {
			if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "header") {
				t.Errorf("%s %s: %v, want an error naming the file and its header", what, name, err)
			}
		}
		if b, _ := os.ReadFile(path); string(b) != content {
			t.Errorf("%s was changed:\n%q", name, b)
		}
	}
}

// TestCheckTSV_UnwritablePathBeforeTraffic: CheckTSV finds before any
// traffic a path that cannot be appended to, naming it; a good path is
// accepted, and nothing is created (not even its directory).
func TestCheckTSV_UnwritablePathBeforeTraffic(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/proc/nope.tsv", dir, "/proc/nope/r.tsv", filepath.Join(file, "sub", "r.tsv")} {
		if err := CheckTSV(path); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("CheckTSV(%s) = %v, want an error naming it", path, err)
		}
	}
	good := filepath.Join(dir, "sub", "r.tsv")
	if err := CheckTSV(good); err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("CheckTSV created %v", left)
	}
	if err := AppendTSV(good, [][]string{tsvRow("a")}); err != nil {
		t.Fatal(err)
	}
	if err := CheckTSV(good); err != nil {
		t.Fatalf("CheckTSV of our own file: %v", err)
	}
}

// TestAppendTSV_WriteFailureNamesFile: a write that fails (/dev/full:
// ENOSPC) is an error naming the file.
func TestAppendTSV_WriteFailureNamesFile(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	err := AppendTSV("/dev/full", [][]string{tsvRow("a")})
	if err == nil || !strings.Contains(err.Error(), "/dev/full") {
		t.Fatalf("AppendTSV(/dev/full) = %v, want an error naming it", err)
	}
}

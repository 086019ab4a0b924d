package reports

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestIssue12_LockOutput: a second lock of a locked output path is a
// *HeldError naming the path and what the holder wrote; released, the
// lock file is gone and the path can be locked again; a lock file left
// behind by a dead holder (no flock on it) blocks nobody.
func TestIssue12_LockOutput(t *testing.T) {
	path := filepath.Join(t.TempDir(), "new", "r.json")
	first, err := LockOutput("json", path, "pid 1, runner run a.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, err = LockOutput("json", path, "pid 2, runner run b.yaml")
	var held *HeldError
	if !errors.As(err, &held) || held.Holder != "pid 1, runner run a.yaml" || !strings.Contains(err.Error(), "json "+path+": another run is writing it (pid 1, runner run a.yaml") {
		t.Fatalf("second lock: %v, want a HeldError naming %s and its holder", err, path)
	}
	first.Release()
	first.Release() // a no-op
	if _, err := os.Stat(path + ".lock"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("released, the lock file is still there: %v", err)
	}
	if err := os.WriteFile(path+".lock", []byte("pid 3, crashed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	again, err := LockOutput("json", path, "pid 4")
	if err != nil {
		t.Fatalf("a stale lock file blocked: %v", err)
	}
	if b, _ := os.ReadFile(path + ".lock"); string(b) != "pid 4\n" {
		t.Errorf("lock file holds %q, want the new holder", b)
	}
	again.Release()
}

// TestIssue12_CheckOutputNamesItsFlag: CheckOutput's errors start with
// the format given (a Markdown path is not called "json"), and a name
// that fits NAME_MAX only without its temporary file's suffix is refused
// before any traffic, as is a directory still to be made whose name is
// too long.
func TestIssue12_CheckOutputNamesItsFlag(t *testing.T) {
	dir := t.TempDir()
	limit := nameMax(dir)
	fits := filepath.Join(dir, strings.Repeat("m", limit-wholeExtra))
	if err := CheckOutput("markdown", fits); err != nil {
		t.Errorf("a %d-byte name: %v", limit-wholeExtra, err)
	}
	for _, path := range []string{
		filepath.Join(dir, strings.Repeat("m", limit-wholeExtra+1)),
		filepath.Join(dir, "a", strings.Repeat("d", limit+1), "r.md"),
	} {
		err := CheckOutput("markdown", path)
		if err == nil || !strings.HasPrefix(err.Error(), "markdown "+path+": ") {
			t.Errorf("CheckOutput(markdown, …%d bytes) = %v, want an error starting with markdown and the path", len(path), err)
		}
	}
	if err := CheckOutput("html", dir); err == nil || !strings.HasPrefix(err.Error(), "html "+dir+": is a directory") {
		t.Errorf("CheckOutput(html, a directory) = %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) != 0 {
		t.Errorf("CheckOutput created %v", left)
	}
}

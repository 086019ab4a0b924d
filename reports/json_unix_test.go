//go:build unix

package reports

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestWriteJSON_RefusesNonRegular: WriteJSON never renames its report
// over something that is not a regular file (run as root it replaced
// /dev/full with a regular file). A FIFO stands in for the device here,
// since this test must not risk /dev/full itself.
func TestWriteJSON_RefusesNonRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	sub := filepath.Join(dir, "dir.json")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{fifo, sub} {
		err := WriteJSON(path, fixture(t))
		if err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("WriteJSON(%s) = %v, want an error naming it", path, err)
		}
		if err := CheckJSON(path); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("CheckJSON(%s) = %v, want an error naming it", path, err)
		}
	}
	if st, err := os.Lstat(fifo); err != nil || st.Mode().Type() != os.ModeNamedPipe {
		t.Fatalf("the FIFO was replaced: %v %v", st.Mode(), err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

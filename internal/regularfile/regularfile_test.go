package regularfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// On every system: a regular file is read whole or by prefix, one over
// the bound is refused, and a directory is refused by type.
func TestRegularAndDirectory(t *testing.T) {
	dir := t.TempDir()
	reg := filepath.Join(dir, "reg")
	if err := os.WriteFile(reg, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadFile(reg, 5); err != nil || string(b) != "hello" {
		t.Errorf("regular file: %q, %v", b, err)
	}
	if b, err := ReadPrefix(reg, 2); err != nil || string(b) != "he" {
		t.Errorf("prefix: %q, %v", b, err)
	}
	if _, err := ReadFile(reg, 4); err == nil || !strings.Contains(err.Error(), "larger than 4 bytes") {
		t.Errorf("over the bound: %v", err)
	}
	if _, err := ReadFile(dir, 1<<20); err == nil || !strings.Contains(err.Error(), "not a regular file (directory)") {
		t.Errorf("directory: %v", err)
	}
	if _, err := ReadFile(filepath.Join(dir, "missing"), 1); !os.IsNotExist(err) {
		t.Errorf("missing: %v", err)
	}
}

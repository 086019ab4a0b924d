//go:build unix

package regularfile

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestIssue12_FIFONeverBlocks: a FIFO is refused at once, whether the
// path names it or a symbolic link swapped to it does; /proc/kmsg, a
// "regular" file whose read blocks, fails instead of waiting; a regular
// file is read, and one over the bound refused.
func TestIssue12_FIFONeverBlocks(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("mkfifo:", err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(fifo, link); err != nil {
		t.Fatal(err)
	}
	paths := []string{fifo, link, "/dev/zero"}
	if _, err := os.Stat("/proc/kmsg"); err == nil {
		paths = append(paths, "/proc/kmsg")
	}
	for _, p := range paths {
		done := make(chan error, 1)
		go func() { _, err := ReadFile(p, 1<<20); done <- err }()
		select {
		case err := <-done:
			if err == nil {
				t.Errorf("%s: read, want refused", p)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: still blocked after 5 s", p)
		}
	}
	reg := filepath.Join(dir, "reg")
	if err := os.WriteFile(reg, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadFile(reg, 5); err != nil || string(b) != "hello" {
		t.Errorf("regular file: %q, %v", b, err)
	}
	if _, err := ReadFile(reg, 4); err == nil || !strings.Contains(err.Error(), "larger than 4 bytes") {
		t.Errorf("over the bound: %v", err)
	}
	if _, err := ReadFile(fifo, 1); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("fifo: %v", err)
	}
}

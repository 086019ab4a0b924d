//go:build unix

package schema

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A scenario that is a named pipe (or a device) is refused at once: opening
// a FIFO without a writer would block validate and run forever (issue 12).
func TestLoadRefusesNonRegularFile(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "s.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan error, 1)
	go func() { _, err := Load(fifo); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Fatalf("loading a FIFO: %v, want 'not a regular file'", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("loading a FIFO blocked")
	}
	if _, err := Load(t.TempDir()); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("loading a directory: %v", err)
	}
}

//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runner-dev/runner/internal/execute"
)

// TestCompileRefusesFIFOFiles: a payload_file or a tls.ca_file that is a
// named pipe is refused with a located problem, without waiting for a
// writer (os.ReadFile blocked on it for good, in validate as in run).
func TestCompileRefusesFIFOFiles(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, yaml := range map[string]string{
		"payload_file": "version: 1\ntarget: {url: \"tcp://127.0.0.1:1\"}\ndriver: {frame: {preset: lkdf, payload_file: pipe}}\n" +
			"phases: [{closed: {connections: 1}, requests: 1}]\n",
		"ca_file": "version: 1\ntarget: {url: \"https://127.0.0.1:1\"}\ndriver: {http: {tls: {ca_file: " + filepath.Join(dir, "pipe") + "}}}\n" +
			"phases: [{closed: {connections: 1}, requests: 1}]\n",
	} {
		t.Run(name, func(t *testing.T) {
			file := filepath.Join(dir, name+".yaml")
			done := make(chan error, 1)
			go func() { _, _, err := execute.CompileData(file, []byte(yaml), fuzzEnv); done <- err }()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), "not a regular file") || !strings.Contains(err.Error(), file+":3:") {
					t.Fatalf("error %v; want a problem at %s:3 saying not a regular file", err, file)
				}
			case <-time.After(10 * time.Second):
				// The goroutine stays blocked on the FIFO: open it for
				// writing so that it ends with the test binary.
				if w, err := os.OpenFile(filepath.Join(dir, "pipe"), os.O_WRONLY, 0); err == nil {
					w.Close()
				}
				t.Fatal("compile blocked on a FIFO for 10 s")
			}
		})
	}
}

// mkfifo makes a named pipe (syscall.Mkfifo).
func mkfifo(path string, mode uint32) error { return syscall.Mkfifo(path, mode) }

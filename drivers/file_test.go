//go:build unix

package drivers

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/runner-dev/runner/schema"
)

// TestReadFileBounded: a FIFO (which os.ReadFile would block on until a
// writer came), a device and a directory are refused without being
// read, a file over the bound is refused, and a regular file is read.
func TestReadFileBounded(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	small := filepath.Join(dir, "small")
	if err := os.WriteFile(small, []byte("12345"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		path string
		max  int64
		want string // in the error; "" for none
	}{
		{fifo, MaxFile, "not a regular file"},
		{"/dev/zero", MaxFile, "not a regular file"},
		{dir, MaxFile, "not a regular file"},
		{filepath.Join(dir, "nope"), MaxFile, "no such file"},
		{small, 4, "larger than 4 bytes"},
		{small, 5, ""},
	} {
		b, err := ReadFile(tt.path, tt.max)
		switch {
		case tt.want == "" && (err != nil || string(b) != "12345"):
			t.Errorf("ReadFile(%s, %d) = %q, %v; want its bytes", tt.path, tt.max, b, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), tt.path)):
			t.Errorf("ReadFile(%s, %d) error %v; want one naming the path and %q", tt.path, tt.max, err, tt.want)
		}
	}
	// The CA file goes through the same guard.
	if _, err := TLSConfig(&schema.TLS{CAFile: fifo}, "h", nil); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("TLSConfig with a FIFO ca_file: %v", err)
	}
}

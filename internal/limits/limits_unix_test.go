//go:build unix

package limits

import (
	"strings"
	"syscall"
	"testing"
)

func TestDescriptorsFitAndNot(t *testing.T) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if _, err := Descriptors(10); err != nil {
		t.Fatalf("10 connections should fit: %v", err)
	}
	if lim.Max > 1<<40 {
		t.Skip("no finite hard limit to exceed")
	}
	_, err := Descriptors(int(lim.Max))
	if err == nil {
		t.Fatalf("%d connections + reserve fit under hard limit %d", lim.Max, lim.Max)
	}
	for _, want := range []string{"file descriptors", "ulimit -n", "limit is"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("message %q lacks %q", err, want)
		}
	}
}

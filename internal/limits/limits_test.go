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

func TestPorts(t *testing.T) {
	lo, hi, ok := PortRange()
	if !ok {
		t.Skip("no port range file")
	}
	if err := Ports(hi - lo + 1); err != nil {
		t.Fatalf("the whole range should fit: %v", err)
	}
	if err := Ports(hi - lo + 2); err == nil || !strings.Contains(err.Error(), "ip_local_port_range") {
		t.Fatalf("one port too many: %v", err)
	}
}

package limits

import (
	"strings"
	"testing"
)

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

package sysinfo

import (
	"testing"
)

func TestCoresText(t *testing.T) {
	for _, c := range []struct {
		e    Env
		want string
	}{
		{Env{}, ""}, // unknown
		{Env{Cores: 1, CoresAllowed: 1, GOMAXPROCS: 1}, "1 core"},
		{Env{Cores: 2, CoresAllowed: 2, GOMAXPROCS: 2}, "2 cores"},
		{Env{Cores: 2}, "2 cores"}, // saved before cores_allowed was recorded
		// taskset -c 0 on a 2-core machine: Go's GOMAXPROCS follows.
		{Env{Cores: 2, CoresAllowed: 1, GOMAXPROCS: 1}, "2 cores (runner limited to 1 by CPU affinity)"},
		{Env{Cores: 4, CoresAllowed: 2, GOMAXPROCS: 1}, "4 cores (runner limited to 2 by CPU affinity, GOMAXPROCS 1)"},
		{Env{Cores: 2, CoresAllowed: 2, GOMAXPROCS: 1}, "2 cores (runner limited to 1 by GOMAXPROCS)"},
	} {
		if got := c.e.CoresText(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.e, got, c.want)
		}
	}
}

package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// A panic (a bug of runner's) exits 3, never the Go runtime's 2, which a
// CI gate would read as "invalid scenario, nothing was sent" (issue 12).
func TestPanicExitsCouldNotRun(t *testing.T) {
	var out, errb bytes.Buffer
	a := newApp(&out, &errb)
	a.beforeRun = func() { panic("boom") }
	if code := a.guarded(context.Background(), []string{"version"}); code != exitCouldNotRun {
		t.Fatalf("exit %d, want %d", code, exitCouldNotRun)
	}
	if !strings.Contains(errb.String(), "internal error") || !strings.Contains(errb.String(), "boom") {
		t.Errorf("stderr %q lacks the panic", errb.String())
	}
}

// A timeout or duration near the range of a time.Duration is refused
// before any traffic (it used to validate, then crash the run).
func TestHugeLengthsRefused(t *testing.T) {
	for _, c := range []struct{ name, yaml, want string }{
		{"timeout", "driver: {http: {path: /, timeout: 2562047h}}\nphases:\n  - {open: {rate: 1/s}, duration: 1s}\n", "driver timeout"},
		{"duration", "driver: {http: {path: /}}\nphases:\n  - {open: {rate: 1/s}, duration: 2562047h}\n", "phases[0].duration"},
		// Lengths that no single value states: a slow rate's requests, the
		// repeats' sum, and connections no machine has.
		{"slow-rate", "driver: {http: {path: /}}\nphases:\n  - {open: {rate: 0.000000000001/s}, requests: 2}\n", "phases[0]: its arrivals take"},
		{"repeats", "driver: {http: {path: /}}\nphases:\n  - {open: {rate: 1/s}, duration: 1000h}\nrepeats: 9223372036854775807\n", "repeats: 9223372036854775807 repeats of 1000h0m0s"},
		{"connections", "driver: {http: {path: /}}\nphases:\n  - {closed: {connections: 9223372036854775807}, duration: 1s}\n", "connections: at most 1000000"},
	} {
		file := scenario(t, c.name+".yaml", "version: 1\nname: huge\ntarget: {url: \"http://127.0.0.1:1\"}\n"+c.yaml)
		for _, cmd := range []string{"validate", "run"} {
			code, _, stderr := cli(t, cmd, file)
			if code != exitInvalid || !strings.Contains(stderr, c.want) {
				t.Errorf("%s %s: exit %d, stderr %q; want %d and %q", cmd, c.name, code, stderr, exitInvalid, c.want)
			}
		}
	}
}

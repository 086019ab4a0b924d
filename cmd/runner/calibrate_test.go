package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runner-dev/runner/internal/execute"
)

// calibrate measures and saves the client ceiling; a later run that
// achieves 80 % of it or more warns that the client may be the bottleneck.
func TestCalibrateAndCeilingWarning(t *testing.T) {
	cfg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfg)
	code, out, errOut := cli(t, "calibrate", "--connections", "4", "--duration", "300ms")
	if code != exitPass || !strings.Contains(out, "client ceiling") {
		t.Fatalf("calibrate: exit %d\n%s\n%s", code, out, errOut)
	}
	b, err := os.ReadFile(filepath.Join(cfg, "runner", "calibration.json"))
	if err != nil {
		t.Fatal(err)
	}
	var c execute.Calibration
	if err := json.Unmarshal(b, &c); err != nil || c.Rate <= 0 || c.Cores < 1 {
		t.Fatalf("saved %s (%v)", b, err)
	}
	if len(c.Repeats) != 3 || c.Repeats[1] != c.Rate || !strings.Contains(out, "repeats ") {
		t.Errorf("repeats %v, rate %v: want 3 repeats whose median is the rate, printed\n%s", c.Repeats, c.Rate, out)
	}
	// The warning, against a ceiling set by hand: a 200/s open phase is
	// at 200 % of a 100/s ceiling, and at 0.2 % of a 100000/s one.
	file := scenario(t, "s.yaml", `version: 1
name: ceiling
target: {serve: http}
driver: {http: {path: /x}}
phases:
  - {name: steady, open: {rate: 200/s, connections: 2}, duration: 500ms}
`)
	dir := t.TempDir()
	for _, ceiling := range []float64{100, 100000} {
		c.Rate = ceiling
		if err := os.WriteFile(filepath.Join(cfg, "runner", "calibration.json"), must(json.Marshal(c)), 0o644); err != nil {
			t.Fatal(err)
		}
		js := filepath.Join(dir, "r.json")
		cli(t, "run", "--log-level", "disabled", "--json", js, "--tsv", filepath.Join(dir, "r.tsv"), file)
		w, warned := warningCodes(readJSON(t, js))["client-ceiling"]
		switch {
		case ceiling == 100 && (!warned || !strings.Contains(w, "of this machine's client ceiling (100/s")):
			t.Errorf("200/s against a 100/s ceiling: warned %v %q", warned, w)
		case ceiling == 100000 && warned:
			t.Errorf("200/s against a 100000/s ceiling warned: %q", w)
		}
	}
	// Made on another kind of machine: not used.
	c.Rate, c.CPUModel = 100, "another CPU"
	os.WriteFile(filepath.Join(cfg, "runner", "calibration.json"), must(json.Marshal(c)), 0o644)
	js := filepath.Join(dir, "o.json")
	cli(t, "run", "--log-level", "disabled", "--json", js, "--tsv", filepath.Join(dir, "r.tsv"), file)
	if _, warned := warningCodes(readJSON(t, js))["client-ceiling"]; warned {
		t.Error("a calibration of another machine was used")
	}
	if code, _, _ := cli(t, "calibrate", "--connections", "0"); code != exitInvalid {
		t.Errorf("bad flags: exit %d", code)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// Flags calibrate cannot measure with are usage errors naming the flag,
// exit 2, before anything runs: a 1 ns repeat used to save a ceiling of
// 0 requests/s over a good calibration, and too many connections failed
// as a run (exit 3) citing a scenario file that does not exist.
func TestCalibrateRefusesUnmeasurableFlags(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	for _, args := range [][]string{
		{"--connections", "0"}, {"--connections", "1000001"}, {"--duration", "1ns"}, {"--duration", "2000h"},
	} {
		code, _, errOut := cli(t, append([]string{"calibrate"}, args...)...)
		if code != exitInvalid || !strings.Contains(errOut, args[0]+" ") {
			t.Errorf("calibrate %v: exit %d, %q; want %d naming %s", args, code, errOut, exitInvalid, args[0])
		}
	}
}

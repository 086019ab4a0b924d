package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/runner-dev/runner/reports"
)

// outputScenario is a short closed-model scenario against base, with
// extra YAML appended (e.g. an outputs key).
func outputScenario(t *testing.T, base, extra string) string {
	return scenario(t, "out.yaml", `version: 1
name: out
target: {url: "`+base+`"}
driver: {http: {path: /}}
phases:
  - {closed: {connections: 1}, requests: 20}
assert: [errors == 0]
`+extra)
}

// TestUnwritableOutputs_ExitBeforeTraffic: an output path that cannot be
// written (outputs.tsv or outputs.json, or their flags) is a usage error
// found before any traffic: exit 2, a message naming the path, and not
// one request at the target. (It used to send the load, print an error
// line and PASS, and exit 0.)
func TestUnwritableOutputs_ExitBeforeTraffic(t *testing.T) {
	base := target(t)
	dir := t.TempDir()
	// A FIFO stands in for /dev/full: before the fix a run as root renamed
	// its report over the device, which no test may risk.
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	plain := outputScenario(t, base, "")
	for _, tt := range []struct {
		name string
		file string
		args []string
		path string
	}{
		{"tsv in /proc", plain, []string{"--tsv", "/proc/nope.tsv"}, "/proc/nope.tsv"},
		{"tsv is a directory", plain, []string{"--tsv", dir}, dir},
		{"outputs.tsv in /proc", outputScenario(t, base, "outputs: {tsv: /proc/nope.tsv}\n"), nil, "/proc/nope.tsv"},
		{"json in /proc", plain, []string{"--json", "/proc/nope.json"}, "/proc/nope.json"},
		{"json is a directory", plain, []string{"--json", dir}, dir},
		{"json is a fifo", plain, []string{"--json", fifo}, fifo},
		{"tsv is a fifo", plain, []string{"--tsv", fifo}, fifo},
		{"tsv is a device", plain, []string{"--tsv", "/dev/full"}, "/dev/full"},
		{"outputs.json in /proc", outputScenario(t, base, "outputs: {json: /proc/nope.json}\n"), nil, "/proc/nope.json"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"run", "--log-level", "disabled"}, tt.args...)
			code, out, stderr := cli(t, append(args, tt.file)...)
			if code != exitInvalid || !strings.Contains(stderr, tt.path) || !strings.Contains(stderr, "nothing was sent") {
				t.Errorf("exit %d, want 2 with a message naming %s\nstdout:\n%s\nstderr:\n%s", code, tt.path, out, stderr)
			}
			if n := stats(t, base)["requests"]; n != 0 {
				t.Fatalf("the target received %g requests before the outputs were checked", n)
			}
		})
	}
	if st, err := os.Lstat(fifo); err != nil || st.Mode().Type() != os.ModeNamedPipe {
		t.Fatalf("the FIFO was replaced: %v %v", st.Mode(), err)
	}
}

// TestUnwritableOutputs_LostDuringRunExit3: a write that still fails
// during or after the run (TSV rows to /dev/full, which accepts the open;
// the final JSON report) loses results: exit 3, never 0, saying which
// file, and the verdict is not PASS.
func TestUnwritableOutputs_LostDuringRunExit3(t *testing.T) {
	base := target(t)
	p := outputScenario(t, base, "")
	js := filepath.Join(t.TempDir(), "r.json")

	t.Run("tsv", func(t *testing.T) {
		// The path passes the check before traffic; then the append fails
		// (a disk that fills up during the run).
		tsv := filepath.Join(t.TempDir(), "r.tsv")
		appendRows = func(path string, _ [][]string) error {
			return errors.New("append to " + path + ": no space left on device")
		}
		defer func() { appendRows = reports.AppendTSV }()
		code, out, stderr := cli(t, "run", "--log-level", "disabled", "--tsv", tsv, "--json", js, p)
		if code != exitCouldNotRun || !strings.Contains(stderr, tsv) || !strings.Contains(stderr, "results lost") {
			t.Fatalf("exit %d, want 3 naming %s\nstdout:\n%s\nstderr:\n%s", code, tsv, out, stderr)
		}
		if strings.Contains(out, "verdict: PASS") {
			t.Errorf("lost results printed PASS:\n%s", out)
		}
		// The JSON report, written after the failed append, says so.
		rep := readJSON(t, js)
		if rep["exit_code"].(float64) != exitCouldNotRun || !strings.Contains(rep["error"].(string), tsv) {
			t.Errorf("JSON report: exit_code %v, error %q", rep["exit_code"], rep["error"])
		}
	})

	t.Run("json", func(t *testing.T) {
		// The path passes the check before traffic; then every write fails.
		writeReport = func(path string, _ *reports.Run) error {
			return errors.New("json " + path + ": no space left on device")
		}
		defer func() { writeReport = reports.WriteJSON }()
		code, out, stderr := cli(t, "run", "--log-level", "disabled", "--json", js, p)
		if code != exitCouldNotRun || !strings.Contains(stderr, js) || !strings.Contains(stderr, "results lost") {
			t.Fatalf("exit %d, want 3 naming %s\nstdout:\n%s\nstderr:\n%s", code, js, out, stderr)
		}
		if strings.Contains(out, "verdict: PASS") {
			t.Errorf("lost results printed PASS:\n%s", out)
		}
	})
}

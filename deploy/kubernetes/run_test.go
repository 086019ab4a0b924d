package kubernetes

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// fakeKubectl stands for kubectl in run.sh's tests: it logs every call,
// keeps what is applied, says the Jobs ended as $FAKE_SEGMENTS and
// Complete, and that the merge's container exited $FAKE_CODE. The end of a
// pipe logs its call once it has read all its input, so after the call
// that wrote it.
const fakeKubectl = `#!/usr/bin/env bash
log() { echo "$*" >>"$FAKE_DIR/calls"; }
case "$1 $2" in
"apply -f")
	n=0
	[ -f "$FAKE_DIR/n" ] && read -r n <"$FAKE_DIR/n"
	echo $((n + 1)) >"$FAKE_DIR/n"
	cat >"$FAKE_DIR/applied-$n"
	log "$@"
	exit
	;;
esac
log "$@"
case "$1 $2" in
"create configmap") echo "configmap $*" ;;
"get job") if [ "$3" = runner-segments ]; then echo "$FAKE_SEGMENTS "; else echo "SuccessCriteriaMet Complete "; fi ;;
"get pods") printf '%s' "$FAKE_CODE" ;;
"logs job/runner-merge") echo "verdict" ;;
esac
`

// runScript runs run.sh against the fake kubectl and returns its exit
// code and the fake's directory.
func runScript(t *testing.T, segments, code string) (int, string) {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash:", err)
	}
	bin, dir := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "kubectl"), []byte(fakeKubectl), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bash, "run.sh")
	cmd.Env = append(os.Environ(),
		"PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"FAKE_DIR="+dir, "FAKE_SEGMENTS="+segments, "FAKE_CODE="+code,
		"RUNNER_IMAGE=registry.example.com/runner:v9", "START_DELAY=2 min", "POLL_SECONDS=0", "NAMESPACE=")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, dir
	case errors.As(err, &exit):
		t.Logf("run.sh output:\n%s", out)
		return exit.ExitCode(), dir
	}
	t.Fatalf("run.sh: %v\n%s", err, out)
	return -1, ""
}

// TestRunScriptGate: run.sh exits with the merge container's code, never
// passes when the segments Job failed or the merge left no code, and runs
// the merge after a failed segments Job (its report says what is missing).
func TestRunScriptGate(t *testing.T) {
	for _, tc := range []struct {
		segments, code string
		want           int
	}{
		{"Complete", "0", 0},
		{"Complete", "4", 4},
		{"FailureTarget Failed", "2", 2},
		{"Failed", "0", 3},
		{"Complete", "", 3},
	} {
		t.Run(tc.segments+"/"+tc.code, func(t *testing.T) {
			t.Parallel()
			got, dir := runScript(t, tc.segments, tc.code)
			if got != tc.want {
				t.Errorf("segments %s, merge exit %q: run.sh exited %d, want %d", tc.segments, tc.code, got, tc.want)
			}
			if _, err := os.Stat(filepath.Join(dir, "applied-2")); err != nil {
				t.Errorf("segments %s: the merge Job was not applied", tc.segments)
			}
		})
	}
}

// TestRunScriptSequence: the old Jobs go first, then the run's ConfigMap
// with a start instant START_DELAY ahead and the run's directory named
// after it, then the segments, and the merge only once they have ended;
// the image placeholder is replaced in what is applied.
func TestRunScriptSequence(t *testing.T) {
	before := time.Now().UTC()
	got, dir := runScript(t, "Complete", "0")
	if got != 0 {
		t.Fatalf("exit %d", got)
	}
	data, err := os.ReadFile(filepath.Join(dir, "calls"))
	if err != nil {
		t.Fatal(err)
	}
	calls := strings.Split(strings.TrimSpace(string(data)), "\n")
	var order []string
	for _, c := range calls {
		f := strings.Fields(c)
		order = append(order, strings.Join(f[:min(3, len(f))], " "))
	}
	want := []string{
		"delete job runner-segments", "create configmap runner-run", "apply -f -",
		"apply -f -", "get job runner-segments", "apply -f -", "get job runner-merge",
		"logs job/runner-merge", "get pods -l",
	}
	if strings.Join(order, "|") != strings.Join(want, "|") {
		t.Errorf("kubectl calls\n%s\nwant the order\n%s", strings.Join(order, "\n"), strings.Join(want, "\n"))
	}
	if !strings.Contains(calls[0], "--cascade=foreground") {
		t.Errorf("%q: the old pods must be gone before the new ones need their nodes", calls[0])
	}

	m := regexp.MustCompile(`--from-literal=START_AT=(\S+) --from-literal=RUN_ID=(\S+)`).FindStringSubmatch(calls[1])
	if m == nil {
		t.Fatalf("%q sets no START_AT and RUN_ID", calls[1])
	}
	start, err := time.Parse(time.RFC3339, m[1])
	if err != nil || !strings.HasSuffix(m[1], "Z") {
		t.Fatalf("START_AT %q is not an RFC 3339 UTC instant: %v", m[1], err)
	}
	if lead := start.Sub(before); lead < 110*time.Second || lead > 3*time.Minute {
		t.Errorf("START_AT %s is %v after the run began, want about START_DELAY (2 min)", m[1], lead)
	}
	if m[2] != start.Format("20060102T150405Z") {
		t.Errorf("RUN_ID %q, want the start instant %s without separators", m[2], start.Format("20060102T150405Z"))
	}

	for i, f := range []string{"", "scale-out.yaml", "merge-job.yaml"} {
		got, err := os.ReadFile(filepath.Join(dir, "applied-"+string(rune('0'+i))))
		if err != nil {
			t.Fatal(err)
		}
		if f == "" {
			if !strings.HasPrefix(string(got), "configmap create configmap runner-run") {
				t.Errorf("first applied %q, want the run's ConfigMap", got)
			}
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		want := strings.ReplaceAll(string(src), "RUNNER_IMAGE", "registry.example.com/runner:v9")
		if string(got) != want || !strings.Contains(want, "image: registry.example.com/runner:v9") {
			t.Errorf("applied %s is not the file with RUNNER_IMAGE replaced", f)
		}
	}
}

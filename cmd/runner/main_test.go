package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/runner-dev/runner/internal/schemacheck"
	"github.com/runner-dev/runner/targets/httptarget"
)

// asMain makes the test binary behave as the runner itself when set, so
// that `runner serve http`, which `run` spawns from its own executable,
// works when that executable is this test binary.
const asMain = "RUNNER_TEST_AS_MAIN"

func TestMain(m *testing.M) {
	// A fuzz worker is this test binary started by the fuzzing
	// coordinator, with its environment (asMain included) and -test.*
	// flags: it is a test, not the runner.
	if os.Getenv(asMain) == "1" && !slices.ContainsFunc(os.Args[1:], func(a string) bool { return strings.HasPrefix(a, "-test.") }) {
		a := newApp(os.Stdout, os.Stderr)
		setTestHooks(a, os.Args[1:])
		os.Exit(a.guarded(context.Background(), os.Args[1:]))
	}
	os.Setenv(asMain, "1")
	// A calibration saved on this machine (runner calibrate) would add
	// client-ceiling warnings to the tests' runs: the tests get a config
	// directory of their own, empty.
	cfg, err := os.MkdirTemp("", "runner-test-config-")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_CONFIG_HOME", cfg)
	widenParallel()
	code := m.Run()
	os.RemoveAll(cfg)
	os.Exit(code)
}

// parallelTests is how many parallel tests run at once unless -parallel
// says otherwise. This package's tests mostly wait on the wall clock
// (phases of seconds against a target's delay: the package uses about 45 %
// of one core over its run), so running more of them at once than there
// are cores shortens the suite without crowding the CPU. Tests whose
// figures depend on the generator keeping time (the truth tests, the
// scale-out proof) do not call t.Parallel and run alone, before these.
const parallelTests = 4

// widenParallel raises -test.parallel to parallelTests (or GOMAXPROCS,
// if that is more) when the command line did not set it.
func widenParallel() {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		flag.Set("test.parallel", strconv.Itoa(max(parallelTests, runtime.GOMAXPROCS(0))))
	}
}

// passedOrGeneratorBound reports whether a run that should pass did, or
// came out INCONCLUSIVE because the load generator, not the target, was
// the bottleneck (a machine other processes kept busy): the verdict the
// runner owes such a run. The caller still checks its counts.
func passedOrGeneratorBound(t *testing.T, code int, stdout string) bool {
	t.Helper()
	if code == exitPass {
		return true
	}
	if code == exitInconclusive && strings.Contains(stdout, "the load generator was the bottleneck") {
		t.Logf("INCONCLUSIVE: the load generator was the bottleneck on a busy machine; the counts are still checked")
		return true
	}
	return false
}

// cli runs the runner in-process and returns its exit code and output.
func cli(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	return cliWith(t, nil, args...)
}

// cliWith is cli with the invocation changed by with first (nil: as is):
// a test replaces a writer or a hook of its own invocation only.
func cliWith(t *testing.T, with func(*app), args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	a := newApp(&out, &errb)
	if with != nil {
		with(a)
	}
	code := a.run(context.Background(), args)
	return code, out.String(), errb.String()
}

// scenario writes a scenario file into a fresh temporary directory.
func scenario(t *testing.T, name, yaml string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// target starts the HTTP reference target in-process on a free loopback
// port, stopped when the test ends, and returns its base URL.
func target(t *testing.T, args ...string) string {
	t.Helper()
	cfg, err := httptarget.ParseArgs(append([]string{"--listen", "127.0.0.1:0"}, args...))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- httptarget.Serve(ctx, cfg, func(addr string) { ready <- addr }) }()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case addr := <-ready:
		return "http://" + addr
	case err := <-done:
		t.Fatalf("target: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("target not ready")
	}
	return ""
}

// stats reads the reference target's counters.
func stats(t *testing.T, base string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(base + "/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]float64
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

// readJSON decodes the JSON report at path into a generic value, after
// checking that it follows the published result schema
// (reports/result.schema.json): every report a test reads is held to it.
func readJSON(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s is not valid JSON: %v", path, err)
	}
	checkResultSchema(t, path, b)
	return v
}

// resultSchema is reports/result.schema.json, compiled once.
var resultSchema = sync.OnceValues(func() (*jsonschema.Schema, error) {
	return schemacheck.Compile(filepath.Join("..", "..", "reports", "result.schema.json"))
})

// checkResultSchema fails the test when b, the JSON report at path, does
// not follow reports/result.schema.json, with the validator's account of
// where.
func checkResultSchema(t *testing.T, path string, b []byte) {
	t.Helper()
	sch, err := resultSchema()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := schemacheck.Decode(b)
	if err != nil {
		t.Fatalf("%s is not valid JSON: %v", path, err)
	}
	if err := sch.Validate(doc); err != nil {
		t.Errorf("%s does not follow reports/result.schema.json: %v", path, err)
	}
}

// readTSV returns the header and the rows of a TSV file, checking that
// every line is complete.
func readTSV(t *testing.T, path string) ([]string, [][]string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) == 0 || b[len(b)-1] != '\n' {
		t.Fatalf("%s does not end in a newline", path)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	header := strings.Split(lines[0], "\t")
	var rows [][]string
	for i, l := range lines[1:] {
		r := strings.Split(l, "\t")
		if len(r) != len(header) {
			t.Fatalf("%s line %d has %d cells, header %d", path, i+2, len(r), len(header))
		}
		rows = append(rows, r)
	}
	return header, rows
}

// col returns the value of the named column in row.
func col(t *testing.T, header, row []string, name string) string {
	t.Helper()
	for i, h := range header {
		if h == name {
			return row[i]
		}
	}
	t.Fatalf("no column %q", name)
	return ""
}

// jsonNum reads a JSON number at a path of object keys.
func jsonNum(t *testing.T, v any, keys ...string) float64 {
	t.Helper()
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("%s: not an object", strings.Join(keys, "."))
		}
		v = m[k]
	}
	f, ok := v.(float64)
	if !ok {
		t.Fatalf("%s = %v, not a number", strings.Join(keys, "."), v)
	}
	return f
}

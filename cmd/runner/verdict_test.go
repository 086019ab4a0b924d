package main

import (
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Done-when: a closed-model run of 200 requests judged by a p99 rule is
// inconclusive (p99 needs 1000 samples): exit 4, never 0.
func TestTooFewSamplesIsInconclusive(t *testing.T) {
	base := target(t)
	p := scenario(t, "few.yaml", `version: 1
target: {url: "`+base+`"}
driver: {http: {path: /}}
phases:
  - {closed: {connections: 4}, requests: 200}
assert: [p99 < 1s, errors == 0]
`)
	code, out, stderr := cli(t, "run", "--log-level", "disabled", p)
	if code != exitInconclusive {
		t.Fatalf("exit %d, want 4\n%s\n%s", code, out, stderr)
	}
	if !strings.Contains(out, "INCONCLUSIVE p99 < 1s") || !strings.Contains(out, "200 samples, needs ≥ 1000") {
		t.Fatalf("console does not say why:\n%s", out)
	}
	// A failed rule wins over an inconclusive one.
	p = scenario(t, "few-fail.yaml", `version: 1
target: {url: "`+base+`"}
driver: {http: {path: /}}
phases:
  - {closed: {connections: 4}, requests: 200}
assert: [p99 < 1s, requests > 1000]
`)
	if code, out, _ := cli(t, "run", "--log-level", "disabled", p); code != exitFail {
		t.Fatalf("exit %d, want 1 (fail wins over inconclusive)\n%s", code, out)
	}
}

// Done-when: the reference target answering 503 to every 4th request gives
// error_rate 0.25 exactly, throughput that counts only the 2xx, and a
// failing `errors == 0` with exit 1. Bounded by count, so exact.
func TestEveryFourth503IsExactlyAQuarter(t *testing.T) {
	base := target(t, "--error-every", "4")
	dir := t.TempDir()
	p := scenario(t, "quarter.yaml", `version: 1
target: {url: "`+base+`"}
driver: {http: {path: /}}
phases:
  - {closed: {connections: 4}, requests: 400}
assert: [errors == 0]
`)
	js := filepath.Join(dir, "r.json")
	tsv := filepath.Join(dir, "r.tsv")
	code, out, stderr := cli(t, "run", "--log-level", "disabled", "--json", js, "--tsv", tsv, p)
	if code != exitFail {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, out, stderr)
	}
	if !strings.Contains(out, "FAIL         errors == 0") || !strings.Contains(out, "errors=100") {
		t.Fatalf("console lacks the failed rule and its observed value:\n%s", out)
	}
	header, rows := readTSV(t, tsv)
	if len(rows) != 1 {
		t.Fatalf("%d rows", len(rows))
	}
	row := rows[0]
	if got := col(t, header, row, "error_rate"); got != "0.2500" {
		t.Fatalf("error_rate %s, want 0.2500", got)
	}
	if col(t, header, row, "ok") != "300" || col(t, header, row, "errors") != "100" || col(t, header, row, "requests") != "400" {
		t.Fatalf("ok %s errors %s requests %s", col(t, header, row, "ok"), col(t, header, row, "errors"), col(t, header, row, "requests"))
	}
	// Throughput counts the 300 ok only: it is 3/4 of the achieved rate
	// (both over the same elapsed time; 1-decimal rounding allowed).
	thr, _ := strconv.ParseFloat(col(t, header, row, "throughput"), 64)
	ach, _ := strconv.ParseFloat(col(t, header, row, "achieved_rate"), 64)
	if ach <= 0 || math.Abs(thr-0.75*ach) > 0.1 {
		t.Fatalf("throughput %.1f is not 3/4 of achieved %.1f", thr, ach)
	}
	rep := readJSON(t, js)
	ph := rep["result"].(map[string]any)["phases"].([]any)[0].(map[string]any)
	s := ph["summary"].(map[string]any)
	if s["ok"].(float64) != 300 || s["errors_by_code"].(map[string]any)["503"].(float64) != 100 {
		t.Fatalf("summary ok %v errors_by_code %v", s["ok"], s["errors_by_code"])
	}
	if got := stats(t, base)["status_503"]; got != 100 {
		t.Fatalf("target counted %g 503s, client 100", got)
	}
}

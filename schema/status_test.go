package schema

import (
	"strings"
	"testing"
)

// A rule reading a frame layout's status code in a form the driver never
// writes (too few digits, lower case, a value beyond the field) is an
// error at the rule: it would read 0 whatever the target answers.
func TestStatusCodesInRules(t *testing.T) {
	// reads stands in for the engine's rules: the first word of the rule.
	reads := func(expr string) []string { return strings.Fields(expr)[:1] }
	src := "version: 1\ntarget: {url: \"tcp://127.0.0.1:9\"}\n" +
		"driver: {frame: {layout: {fields: [{name: s, size: u16, role: status}, {name: i, size: u32, role: id}, {name: l, size: u32, role: length}]}}}\n" +
		"phases: [{closed: {connections: 1}, duration: 1s}]\n" +
		"assert:\n" +
		"  - errors_by[\"status-0x1\"] == 0\n" +
		"  - errors_by[\"status-0x00ff\"] == 0\n" +
		"  - errors_by[\"status-0x10000\"] == 0\n" +
		"  - errors_by[\"status-0x0001\"] == 0\n" +
		"  - errors_by[\"503\"] == 0\n"
	want := []string{
		`s.yaml:6:5: assert[0]: errors_by["status-0x1"] never counts: the status field's codes are written status-0x0001 (upper case, 4 digits); did you mean errors_by["status-0x0001"]?`,
		`s.yaml:7:5: assert[1]: errors_by["status-0x00ff"] never counts: the status field's codes are written status-0x00FF (upper case, 4 digits); did you mean errors_by["status-0x00FF"]?`,
		`s.yaml:8:5: assert[2]: errors_by["status-0x10000"] never counts: a 2-byte status field's codes are status-0x and 4 hexadecimal digits, e.g. status-0x0001`,
	}
	_, err := ParseWith("s.yaml", []byte(src), Options{Env: testEnv, CheckRule: func(string) error { return nil }, RuleReads: reads})
	var got []string
	if err != nil {
		got = strings.Split(err.Error(), "\n")
	}
	if len(got) != len(want) {
		t.Fatalf("got %d problems, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("problem %d:\n got: %s\nwant: %s", i, got[i], want[i])
		}
	}
}

package reports

import (
	"strings"
	"testing"
)

// A report saved before each phase recorded its client's cores is judged
// on the cores its own environment recorded (affinity, then GOMAXPROCS),
// never on the cores of the machine that loads it.
func TestLoadFillsClientCoresFromRecordedEnvironment(t *testing.T) {
	for _, c := range []struct {
		env  string
		want int
	}{
		{`"cores": 8, "cores_allowed": 1, "gomaxprocs": 1`, 1},
		{`"cores": 8, "gomaxprocs": 3`, 3},
		{`"cores": 4`, 4},
		{``, 0},
	} {
		js := `{"run_id": "r1", "environment": {` + c.env + `}, "scenario": {"name": "s"}, "plan": {"repeats": 2},
		  "result": {"phases": [{"repeat": 1, "phase": {"name": "p"}, "summary": {}, "client_cpu": 0.9},
		                        {"repeat": 2, "phase": {"name": "p"}, "summary": {}, "client_cores": 6}]}}`
		r, err := parseRun([]byte(js))
		if err != nil {
			t.Fatalf("%s: %v", c.env, err)
		}
		if got := r.Result.Phases[0].ClientCores; got != c.want {
			t.Errorf("environment {%s}: client cores %d, want %d", c.env, got, c.want)
		}
		if got := r.Result.Phases[1].ClientCores; got != 6 {
			t.Errorf("environment {%s}: a recorded 6 became %d", c.env, got)
		}
	}
}

// A report edited by hand that lacks a part every run writes (a null
// rule, a null phase, a phase without its plan or summary, no scenario or
// no plan) is refused as not a runner JSON report, naming what is
// missing; every renderer used to dereference it and panic.
func TestLoadRefusesIncompleteReports(t *testing.T) {
	phase := `{"repeat": 1, "phase": {"name": "p"}, "summary": {}}`
	whole := func(scenario, plan, phases string) string {
		return `{"run_id": "r1"` + scenario + plan + `, "result": {"phases": [` + phases + `]}}`
	}
	const sc, pl = `, "scenario": {"name": "s"}`, `, "plan": {"repeats": 1, "rules": [{"rule": "errors == 0"}]}`
	if _, err := parseRun([]byte(whole(sc, pl, phase))); err != nil {
		t.Fatalf("a whole report refused: %v", err)
	}
	for _, c := range []struct{ js, want string }{
		{whole("", pl, phase), "no scenario"},
		{whole(sc, "", phase), "no plan"},
		{whole(sc, `, "plan": {"rules": [null]}`, phase), "plan.rules[0] is null"},
		{whole(sc, `, "plan": {"expect": [{"rule": "errors == 0"}, null]}`, phase), "plan.expect[1] is null"},
		{whole(sc, pl, phase+`, null`), "result.phases[1] is null"},
		{whole(sc, pl, `{"repeat": 1, "summary": {}}`), "result.phases[0].phase is missing"},
		{whole(sc, pl, `{"repeat": 1, "phase": {"name": "p"}}`), "result.phases[0].summary is missing"},
	} {
		_, err := parseRun([]byte(c.js))
		if err == nil || !strings.Contains(err.Error(), "not a runner JSON report: "+c.want) {
			t.Errorf("%s: %v, want not a runner JSON report: %s", c.js, err, c.want)
		}
	}
	// Client cores recorded as nonsense count as not recorded.
	r, err := parseRun([]byte(`{"run_id": "r1", "environment": {"cores": 2}` + sc + pl +
		`, "result": {"phases": [{"repeat": 1, "phase": {"name": "p"}, "summary": {}, "client_cores": -5}]}}`))
	if err != nil || r.Result.Phases[0].ClientCores != 2 {
		t.Errorf("client_cores -5: %v, %+v; want the environment's 2", err, r)
	}
}

package reports

import (
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
		js := `{"run_id": "r1", "environment": {` + c.env + `},
		  "result": {"phases": [{"repeat": 1, "client_cpu": 0.9}, {"repeat": 2, "client_cores": 6}]}}`
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

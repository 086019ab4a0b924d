package rules

import (
	"testing"
	"time"

	"github.com/expr-lang/expr"
)

type senv struct {
	P99  time.Duration `expr:"p99"`
	N    int64         `expr:"n"`
	F    float64       `expr:"f"`
	Med  struct{ P99 time.Duration `expr:"p99"` } `expr:"median()"`
	Srv  map[string]float64 `expr:"server"`
}

func TestScratch(t *testing.T) {
	env := senv{P99: 12 * time.Millisecond, N: 3, F: 2.5, Srv: map[string]float64{"a": 1}}
	for _, s := range []string{
		`p99 < 20`, `p99 < duration("20ms")`, `p99 / 2 < duration("10ms")`, `p99 / 2`, `p99 * 2`, `p99 * 2.5`, `2 * p99`, `p99 * f`, `p99 / p99`,
		`p99 + duration("1ms")`, `-p99`, `p99 == duration("12ms")`, `p99 > 1.5`, `abs(-p99)`, `max(p99, duration("1s"))`, `server.a`, `server.b`, `server.b == nil`, `n / 2`, `p99 % duration("5ms")`, `f < n`, `p99 < f`,
		`p99 - 1`, `p99 / duration("1ms") < 13`,
	} {
		p, err := expr.Compile(s, expr.Env(senv{}))
		if err != nil {
			t.Logf("%-30s compile error: %v", s, err)
			continue
		}
		out, err := expr.Run(p, env)
		t.Logf("%-30s -> %T %v err=%v", s, out, out, err)
	}
}

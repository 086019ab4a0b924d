package rules_test

import (
	"fmt"
	"strings"
	"time"

	"github.com/runner-dev/runner/drivers"
	"github.com/runner-dev/runner/engine/measure"
	"github.com/runner-dev/runner/engine/rules"
)

// phase records n ok requests whose response times are step, 2·step, …
// over a 10 s phase, plus the given errors.
func phase(n int, step time.Duration, errors int) *measure.Summary {
	rec := measure.NewRecorder(1, measure.Options{})
	for i := 1; i <= n; i++ {
		rec.AddArrivals(1)
		rec.Record(0, &measure.Result{Done: time.Duration(i) * step, Outcome: drivers.Outcome{Class: drivers.OK, Responded: true}})
	}
	for range errors {
		rec.AddArrivals(1)
		rec.Record(0, &measure.Result{Done: time.Second, Outcome: drivers.Outcome{Class: drivers.Status, Code: "503", Responded: true}})
	}
	return rec.Summary(10 * time.Second)
}

func ExampleCompile() {
	for _, src := range []string{"p99 < 20", "p99x < 20ms", "worst(offered_rate) > 100", "p99 < 20ms"} {
		_, err := rules.Compile(src)
		msg, _, _ := strings.Cut(fmt.Sprint(err), " (known")
		fmt.Printf("%-26s %s\n", src, msg)
	}
	// Output:
	// p99 < 20                   column 7: p99 is a duration: write the unit, e.g. 20ms
	// p99x < 20ms                column 1: unknown metric "p99x"; did you mean p99 or p999?
	// worst(offered_rate) > 100  column 1: offered_rate has no better or worse direction, so worst(offered_rate) means nothing; use median(offered_rate) or a per-repeat rule
	// p99 < 20ms                 <nil>
}

func ExampleRule_Eval() {
	// B19's phase (docs/design.md, "Field cases"): 1006 responses of 4·n ms. p99.9 needs 10000 samples.
	env := rules.NewEnv(phase(1006, 4*time.Millisecond, 0), rules.Extras{})
	for _, src := range []string{
		"p99 < 5s",
		"p90 == 3624ms",
		"p999 < 5s",
		"p999 < 5s and errors > 0",
	} {
		r, err := rules.Compile(src)
		if err != nil {
			fmt.Println(err)
			continue
		}
		v := r.Eval(env)
		fmt.Printf("%-26s %-12s %s\n", src, v.Status, v.Observed)
	}
	// Output:
	// p99 < 5s                   pass         p99=3.985408s
	// p90 == 3624ms              fail         p90=3.62496s
	// p999 < 5s                  inconclusive p999=4.020224s (1006 samples, needs ≥ 10000)
	// p999 < 5s and errors > 0   fail         p999=4.020224s (1006 samples, needs ≥ 10000) errors=0
}

func ExampleRule_Eval_approx() {
	// 2000 requests in 10 s at a planned 200/s: achieved 200/s.
	env := rules.NewEnv(phase(2000, time.Millisecond, 0), rules.Extras{OfferedRate: 200, Connections: 8})
	for _, src := range []string{
		"achieved_rate ≈ offered_rate",
		"approx(achieved_rate, offered_rate * 1.08, 0.05)",
		"throughput ≈ offered_rate and errors == 0",
	} {
		r, _ := rules.Compile(src)
		v := r.Eval(env)
		fmt.Printf("%-50s %s\n", src, v.Status)
	}
	// Output:
	// achieved_rate ≈ offered_rate                       pass
	// approx(achieved_rate, offered_rate * 1.08, 0.05)   fail
	// throughput ≈ offered_rate and errors == 0          pass
}

func ExampleJudge() {
	// Three repeats: p99 about 1 s, 3 s and 2 s (1000 samples each).
	var repeats []rules.Env
	for _, step := range []time.Duration{time.Millisecond, 3 * time.Millisecond, 2 * time.Millisecond} {
		repeats = append(repeats, rules.NewEnv(phase(1000, step, 0), rules.Extras{}))
	}
	for _, src := range []string{"p99 < 2500ms", "median(p99) < 2500ms", "worst(p99) < 2500ms"} {
		r, _ := rules.Compile(src)
		res := rules.Judge(r, repeats)
		fmt.Printf("%-22s %-5s %s\n", src, res.Status, res.Repeats[1].Observed)
	}
	// Output:
	// p99 < 2500ms           fail  p99=2.971648s
	// median(p99) < 2500ms   pass  median(p99)=1.980416s
	// worst(p99) < 2500ms    fail  worst(p99)=2.971648s
}

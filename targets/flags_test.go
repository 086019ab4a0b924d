package targets

import (
	"flag"
	"strings"
	"testing"
	"time"
)

func TestParseFlags(t *testing.T) {
	var d time.Duration
	var n int
	define := func(fs *flag.FlagSet) {
		fs.DurationVar(&d, "delay", time.Millisecond, "a delay")
		fs.IntVar(&n, "count", 0, "a count")
	}
	if err := ParseFlags("k", []string{"--delay", "5ms", "-count", "3"}, define); err != nil || d != 5*time.Millisecond || n != 3 {
		t.Fatalf("%v %s %d", err, d, n)
	}
	for args, want := range map[string]string{
		"--delay 5":   "a duration needs a unit, e.g. 5ms",
		"--count x":   `invalid value "x" for flag -count`,
		"--nope":      "flag provided but not defined: -nope",
		"--count 1 x": `unexpected argument "x"`,
	} {
		err := ParseFlags("k", strings.Fields(args), define)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", args, err, want)
		}
		if want != "a duration needs a unit, e.g. 5ms" && err != nil && strings.Contains(err.Error(), "needs a unit") {
			t.Errorf("%s: a unit hint for a flag that is not a duration: %v", args, err)
		}
	}
	if u := FlagUsage("k", define); !strings.Contains(u, "-delay duration") || !strings.Contains(u, "a count") {
		t.Errorf("usage %q", u)
	}
}

package main

import (
	"strings"
	"testing"
)

// TestServe_UnknownKindIsUsageError: `runner serve nope` and `runner
// serve` without a kind are usage errors (exit 2) naming the kinds, not
// the help text with exit 0.
func TestServe_UnknownKindIsUsageError(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "nope"}, `unknown reference target kind "nope"; kinds: http`},
		{[]string{"serve"}, "no reference target kind given; kinds: http"},
		// A slip gets the spelling a scenario's target.serve gets.
		{[]string{"serve", "frme"}, `unknown reference target kind "frme" (did you mean "frame"?); kinds: http`},
	} {
		code, out, stderr := cli(t, tt.args...)
		if code != exitInvalid || !strings.Contains(stderr, tt.want) {
			t.Errorf("runner %s: exit %d, stderr %q; want exit 2 and %q", strings.Join(tt.args, " "), code, stderr, tt.want)
		}
		if out != "" {
			t.Errorf("runner %s printed on stdout:\n%s", strings.Join(tt.args, " "), out)
		}
	}
	// Help is still help.
	if code, out, _ := cli(t, "serve", "--help"); code != exitPass || !strings.Contains(out, "reference target") {
		t.Errorf("runner serve --help: exit %d\n%s", code, out)
	}
}

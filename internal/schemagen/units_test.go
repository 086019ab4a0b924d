package main

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/runner-dev/runner/reports"
)

// legacyDurations are the result's time.Duration fields, by Go type and
// field, whose JSON key predates the unit rule and keeps its name (a
// rename is a new major format): integer nanoseconds without the _ns
// suffix. The README's Units paragraph lists each key.
var legacyDurations = map[string]string{
	"engine.PhasePlan.ThinkTime":        "think_time",
	"engine.PhasePlan.ExpectedInterval": "expected_interval",
	"engine.PhasePlan.Duration":         "duration",
	"engine.PhasePlan.Grace":            "grace",
	"engine.PhasePlan.ExpectedDuration": "expected_duration",
	"engine.Step.At":                    "at",
	"engine.RateCurve.Over":             "over",
	"clock.Resolution.Sleep":            "sleep",
	"clock.Resolution.Timer":            "timer_overshoot",
	"clock.Resolution.Precise":          "precise_overshoot",
	"engine.PhaseResult.Wall":           "wall",
	"engine.PhaseResult.LatenessMax":    "lateness_max",
	"engine.PhaseResult.GCPauseMax":     "gc_pause_max",
	"engine.PhaseResult.StartLag":       "start_lag",
}

// marshaler is json.Marshaler's type.
var marshaler = reflect.TypeFor[json.Marshaler]()

// TestResultDurationsFollowTheUnitRule: every duration the result
// document holds as a number (a time.Duration field) is integer
// nanoseconds under a key named *_ns, but for the legacy keys listed in
// legacyDurations and in the README; every *_ns key is an integer. The
// scenario's own durations are strings with their unit (schema.Duration).
func TestResultDurationsFollowTheUnitRule(t *testing.T) {
	types, err := reachable(reflect.TypeFor[reports.Run]())
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, ty := range types {
		if ty.Kind() != reflect.Struct || ty.Implements(marshaler) || reflect.PointerTo(ty).Implements(marshaler) {
			// A type that writes its own JSON (measure.Dist,
			// measure.Interval) has a hand-written schema, which the
			// real-run tests hold it to; its Go fields are not its keys.
			continue
		}
		fs, err := fields(ty)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range fs {
			key, _ := jsonName(f)
			e := f.Type
			for e.Kind() == reflect.Pointer || e.Kind() == reflect.Slice || e.Kind() == reflect.Array || e.Kind() == reflect.Map {
				e = e.Elem()
			}
			where := ty.String() + "." + f.Name
			switch {
			case e == reflect.TypeFor[time.Duration]() && legacyDurations[where] == key:
				seen[where] = true
			case e == reflect.TypeFor[time.Duration]() && !strings.HasSuffix(key, "_ns"):
				t.Errorf("%s is a duration written as %q: name its key *_ns (integer nanoseconds)", where, key)
			case strings.HasSuffix(key, "_ns") && e.Kind() != reflect.Int64:
				t.Errorf("%s is written as %q but is %s, not integer nanoseconds", where, key, e)
			}
		}
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, units, _ := strings.Cut(string(readme), "\n**Units.**")
	units, _, _ = strings.Cut(units, "\n\n")
	if units == "" {
		t.Fatal("README.md has no **Units.** paragraph")
	}
	for where, key := range legacyDurations {
		if !seen[where] {
			t.Errorf("legacyDurations lists %s (%q), which is no duration field of the result any more: remove it here and in the README", where, key)
		}
		if !strings.Contains(units, "`"+key+"`") {
			t.Errorf("the README's Units paragraph does not list the legacy key `%s` (%s)", key, where)
		}
	}
}

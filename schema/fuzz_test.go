package schema

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// FuzzParse: Parse never panics, and what it returns holds its contract:
// either a valid scenario with defaults filled in, which survives a JSON
// round trip, or a non-empty *Errors of positioned problems. The seed
// corpus is in testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse("fuzz.yaml", data, testEnv)
		if err != nil {
			var errs *Errors
			if !errors.As(err, &errs) || len(errs.List) == 0 {
				t.Fatalf("error %T %v, want a non-empty *Errors", err, err)
			}
			for _, e := range errs.List {
				if strings.Contains(e.Msg, "internal error") {
					t.Fatalf("%v", e)
				}
				if e.Line < 0 || e.Col < 0 || e.Msg == "" {
					t.Fatalf("malformed problem %+v", e)
				}
			}
			if s != nil {
				t.Fatal("a scenario returned with an error")
			}
			return
		}
		checkValid(t, s)
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		var back Scenario
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("unmarshal %s: %v", b, err)
		}
		if !reflect.DeepEqual(&back, jsonView(s)) {
			again, _ := json.Marshal(&back)
			t.Fatalf("JSON round trip differs:\n got %s\nwant %s", again, b)
		}
	})
}

// checkValid checks the guarantees of a loaded scenario that consumers rely on.
func checkValid(t *testing.T, s *Scenario) {
	t.Helper()
	if s.Version != 1 || s.Repeats < 1 || len(s.Phases) == 0 || s.Name == "" {
		t.Fatalf("invalid scenario accepted: %+v", s)
	}
	if (s.Target.URL == "") == (s.Target.Serve == "") {
		t.Fatalf("target %+v", s.Target)
	}
	if h := s.Driver.HTTP; h == nil || h.Timeout <= 0 || h.KeepAlive == nil || h.Method == "" || h.Path == "" {
		t.Fatalf("driver %+v", s.Driver.HTTP)
	}
	names := map[string]bool{}
	for _, ph := range s.Phases {
		if ph.Name == "" || names[ph.Name] {
			t.Fatalf("phase name %q empty or repeated", ph.Name)
		}
		names[ph.Name] = true
		models := 0
		if ph.Closed != nil {
			models++
			if ph.Closed.Connections < 1 {
				t.Fatalf("closed %+v", ph.Closed)
			}
		}
		if o := ph.Open; o != nil {
			models++
			if o.Connections < 1 || o.Inflight < 1 || o.Seed == 0 || o.Rate.From < 0 || o.Rate.To < 0 || o.Rate.From == 0 && o.Rate.To == 0 && ph.Duration <= 0 {
				t.Fatalf("open %+v", o)
			}
		}
		if r := ph.Ramp; r != nil {
			models++
			if c := r.Connections; c.From < 0 || c.From >= c.To || c.Step < 1 || c.Every <= 0 {
				t.Fatalf("ramp %+v", c)
			}
		}
		if models != 1 || ph.Duration < 0 || ph.Duration == 0 && ph.Requests == 0 && ph.Ramp == nil {
			t.Fatalf("phase %+v", ph)
		}
	}
	for _, r := range s.Assert {
		if strings.TrimSpace(r.Expr) == "" || r.Line < 1 || r.Phase != "" && !names[r.Phase] {
			t.Fatalf("rule %+v", r)
		}
	}
}

package schema

import (
	"strings"
	"testing"
	"time"
)

// An explicit 0 is a value, never "not given": every numeric key written
// as 0 either means exactly 0 or is a problem at its line and column that
// says what is accepted. None is replaced by a default.
func TestExplicitZero(t *testing.T) {
	phase := func(p string) string { return head + "phases:\n  - " + p + "\n" }
	accepted := []struct {
		name string
		src  string
		ok   func(s *Scenario) bool
	}{
		// A constant 0/s is a pause: the rate stays 0, not a default.
		{"rate 0/s is a pause", phase("{open: {rate: 0/s}, duration: 5s}"), func(s *Scenario) bool {
			o := s.Phases[0].Open
			return o.Rate == RateSpec{From: 0, To: 0} && s.Phases[0].Duration.D() == 5*time.Second
		}},
		{"rate 0/m is a pause too", phase("{open: {rate: 0/m}, duration: 5s}"), func(s *Scenario) bool {
			return s.Phases[0].Open.Rate == RateSpec{}
		}},
		// The duration ends a pause; the count bound is never reached.
		{"pause with a count bound too", phase("{open: {rate: 0/s}, duration: 5s, requests: 10}"), func(s *Scenario) bool {
			return s.Phases[0].Open.Rate.From == 0 && s.Phases[0].Requests == 10
		}},
		{"ramp from 0/s", phase("{open: {rate: {from: 0/s, to: 100/s}}, duration: 10s}"), func(s *Scenario) bool {
			return s.Phases[0].Open.Rate == RateSpec{From: 0, To: 100, Ramp: true}
		}},
		{"ramp to 0/s", phase("{open: {rate: {from: 100/s, to: 0/s}}, duration: 10s}"), func(s *Scenario) bool {
			return s.Phases[0].Open.Rate == RateSpec{From: 100, To: 0, Ramp: true}
		}},
		// think_time: 0s is no pause between a response and the next request.
		{"think_time 0s", phase("{closed: {connections: 2, think_time: 0s}, duration: 1s}"), func(s *Scenario) bool {
			return s.Phases[0].Closed.ThinkTime == 0 && s.Phases[0].Closed.Connections == 2
		}},
		{"ramp think_time 0s", phase("{ramp: {connections: {from: 0, to: 4, step: 2, every: 1s}, think_time: 0s}}"), func(s *Scenario) bool {
			return s.Phases[0].Ramp.ThinkTime == 0
		}},
		// A staircase from 0: no connection until the first stair.
		{"staircase from 0", phase("{ramp: {connections: {from: 0, to: 4, step: 2, every: 1s}}}"), func(s *Scenario) bool {
			return s.Phases[0].Ramp.Connections.From == 0
		}},
		// A frame field's constant and the type values may be 0.
		{"frame constants 0", "version: 1\ntarget: {url: \"tcp://127.0.0.1:9\"}\ndriver:\n  frame:\n    layout: {fields: [{name: v, size: u8, value: 0}, {name: k, size: u8, role: type}], request_type: 0, response_type: 0}\nphases: [{closed: {connections: 1}, duration: 1s}]\n", func(s *Scenario) bool {
			l := s.Driver.Frame.Layout
			return l.Fields[0].Value != nil && *l.Fields[0].Value == 0 && l.RequestType == 0 && l.ResponseType == 0
		}},
	}
	for _, tc := range accepted {
		t.Run(tc.name, func(t *testing.T) {
			if s := mustParse(t, tc.src); !tc.ok(s) {
				t.Fatalf("decoded %+v", s.Phases[0])
			}
		})
	}

	rejected := []struct {
		name, src, want string
	}{
		{"connections 0", phase("{closed: {connections: 0}, duration: 1s}"),
			"s.yaml:5:28: phases[0].closed.connections: expected at least 1 connection, found 0"},
		{"open connections 0", phase("{open: {rate: 1/s, connections: 0}, duration: 1s}"),
			"s.yaml:5:37: phases[0].open.connections: expected at least 1 connection, found 0"},
		{"inflight 0", phase("{open: {rate: 1/s, inflight: 0}, duration: 1s}"),
			"s.yaml:5:34: phases[0].open.inflight: expected at least 1 request in flight per connection, found 0"},
		{"seed 0", phase("{open: {rate: 1/s, arrivals: poisson, seed: 0}, duration: 1s}"),
			"s.yaml:5:49: phases[0].open.seed: expected a non-zero seed: any integer from -9223372036854775808 to 9223372036854775807 except 0 (leaving seed out means 1)"},
		{"requests 0", phase("{closed: {connections: 1}, requests: 0}"),
			"s.yaml:5:42: phases[0].requests: expected at least 1 request, found 0"},
		{"duration 0s", phase("{closed: {connections: 1}, duration: 0s}"),
			"s.yaml:5:42: phases[0].duration: expected a positive duration, found 0s"},
		{"expected_rate 0/s", phase("{closed: {connections: 1, expected_rate: 0/s}, duration: 1s}"),
			"s.yaml:5:46: phases[0].closed.expected_rate: expected a positive rate, found 0/s"},
		// A pause with only a count bound would never end.
		{"pause without duration", phase("{open: {rate: 0/s}, requests: 10}"),
			"s.yaml:5:19: phases[0].open.rate: 0/s is a pause, and a pause needs the phase's duration (e.g. duration: 5s); requests alone would never be reached"},
		{"ramp from 0/s to 0/s", phase("{open: {rate: {from: 0/s, to: 0/s}}, duration: 1s}"),
			"s.yaml:5:19: phases[0].open.rate: a ramp that goes nowhere: from and to are both 0/s; write rate: 0/s for a constant rate"},
		{"staircase to 0", phase("{ramp: {connections: {from: 0, to: 0, step: 1, every: 1s}}}"),
			"s.yaml:5:40: phases[0].ramp.connections.to: expected at least 1 connection, found 0 (a staircase steps connections up; for a stretch without traffic write a pause, open: {rate: 0/s})"},
		// Descending staircases are not supported.
		{"staircase down", phase("{ramp: {connections: {from: 64, to: 8, step: 8, every: 1s}}}"),
			"s.yaml:5:26: phases[0].ramp.connections: from 64 is not below to 8; a ramp steps connections up, never down (for fewer connections, follow it with a closed phase of fewer connections)"},
		{"staircase step 0", phase("{ramp: {connections: {from: 0, to: 4, step: 0, every: 1s}}}"),
			"s.yaml:5:49: phases[0].ramp.connections.step: expected a step of at least 1 connection, found 0"},
		{"staircase every 0s", phase("{ramp: {connections: {from: 0, to: 4, step: 1, every: 0s}}}"),
			"s.yaml:5:59: phases[0].ramp.connections.every: expected a positive duration, found 0s"},
		{"repeats 0", head + "phases: [{closed: {connections: 1}, duration: 1s}]\nrepeats: 0\n",
			"s.yaml:5:10: repeats: expected at least 1 repeat, found 0"},
		{"http timeout 0s", "version: 1\ntarget: {serve: http}\ndriver: {http: {timeout: 0s}}\nphases: [{closed: {connections: 1}, duration: 1s}]\n",
			"s.yaml:3:26: driver.http.timeout: expected a positive duration, found 0s"},
		{"http body_size 0B", "version: 1\ntarget: {serve: http}\ndriver: {http: {body_size: 0B}}\nphases: [{closed: {connections: 1}, duration: 1s}]\n",
			"s.yaml:3:28: driver.http.body_size: expected a positive size, found 0B"},
		{"frame timeout 0s", "version: 1\ntarget: {url: \"tcp://127.0.0.1:9\"}\ndriver: {frame: {preset: lkdf, timeout: 0s}}\nphases: [{closed: {connections: 1}, duration: 1s}]\n",
			"s.yaml:3:41: driver.frame.timeout: expected a positive duration, found 0s"},
		{"data_seed 0", "version: 1\ntarget: {serve: http}\ndriver: {http: {data: u.csv, data_order: random, data_seed: 0}}\nphases: [{closed: {connections: 1}, duration: 1s}]\n",
			"s.yaml:3:61: driver.http.data_seed: expected a nonzero integer, found 0"},
		{"pid 0", "version: 1\ntarget: {url: \"http://x:1\", pid: 0}\ndriver: {http: {}}\nphases: [{closed: {connections: 1}, duration: 1s}]\n",
			"s.yaml:2:34: target.pid: expected a process id ≥ 1, found 0"},
	}
	for _, tc := range rejected {
		t.Run(tc.name, func(t *testing.T) {
			got := problems(t, tc.src)
			if strings.Join(got, "\n") != tc.want {
				t.Fatalf("problems:\n got: %s\nwant: %s", strings.Join(got, "\n"), tc.want)
			}
		})
	}
}

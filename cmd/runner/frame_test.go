package main

// End-to-end tests of the binary frame driver against `runner serve
// frame` (issue 5).

import (
	"strings"
	"testing"
)

// frameScenario is a closed-model run of the lkdf preset against the
// spawned frame target with args, reconciled with its /stats.
func frameScenario(name, args, phases, rest string) string {
	return `version: 1
name: ` + name + `
target: {serve: frame, args: [` + args + `]}
driver:
  frame: {preset: lkdf, payload: '{{bytes 64}}', timeout: 2s}
phases:
` + phases + `reconcile:
  fetch: {path: /stats}
` + rest
}

// B17, the defect pinned: a hostile frame header (huge length, bad magic,
// unsolicited id) crashing the client or making it allocate.
//
// TestField_B17_HostileFrames: the target replaces every 100th reply
// with a malformed one. (a) length 0x80000000 then 10 bytes and silence,
// (b) length 0xFFFFFFFF, (c) magic "GET ": each is a bad-frame error
// with the declared value and the limit, as soon as the header is read;
// the connection is closed and re-dialled, and the client's memory does
// not grow by what the length asks for. (d) an unsolicited frame with an
// id never sent before the real reply: one unknown_id each, the reply
// still matches, and the run is INCONCLUSIVE (an unsolicited-replies
// warning: its replies are not known to be its requests'). (e) an empty
// payload is valid. No panic; the run ends with a verdict.
//
// Not parallel: the peak RSS wait4 reports for a child starts from this
// test process's own at the fork (Linux carries the high-water mark of the
// memory a vfork child shares across its exec), so other tests running
// meanwhile would show in the figure compared.
func TestField_B17_HostileFrames(t *testing.T) {
	rss := map[string]int64{} // the runner's peak RSS per variant
	for _, c := range []struct {
		kind, code string
		bad        bool
	}{
		{"zero-length", "", false}, // first: the benign baseline of memory
		{"huge-length", "too-long", true},
		{"max-length", "too-long", true},
		{"bad-magic", "bad-magic", true},
		{"unknown-id", "", false},
	} {
		t.Run(c.kind, func(t *testing.T) {
			yaml := frameScenario("b17-"+c.kind, `"--malformed-every", "100", "--malformed", "`+c.kind+`"`,
				"  - {name: main, closed: {connections: 4}, duration: 2s}\n", `  expect:
    - server.requests == requests
assert:
  - requests > 1000
`)
			want := exitPass
			if c.kind == "unknown-id" {
				want = exitInconclusive
			}
			r := fcRunScenario(t, "b17-"+c.kind, yaml, want)
			if c.kind == "unknown-id" && !strings.Contains(r.stdout, "replies answered no request (unknown id ") {
				t.Errorf("no unsolicited-replies warning:\n%s", r.stdout)
			}
			ph := r.phases(t)[0]
			faults := int64(jsonNum(t, ph, "server", "malformed_sent"))
			if faults < 10 {
				t.Fatalf("only %d faults sent", faults)
			}
			byCode, _ := ph["summary"].(map[string]any)["errors_by_code"].(map[string]any)
			errs := fcCount(t, ph, "errors")
			switch {
			case c.bad:
				// Every fault ends exactly the one request it answered.
				if n := int64(jsonNum(t, byCode, c.code)); n != faults || errs != faults {
					t.Errorf("errors %d, %s %d; want %d (one per fault)", errs, c.code, n, faults)
				}
				if re := fcCount(t, ph, "reconnects"); re < faults-4 || re > faults {
					t.Errorf("reconnects %d for %d bad frames", re, faults)
				}
				want := map[string]string{"too-long": "length ", "bad-magic": "magic 0x47455420, expected 0x4C4B4446"}[c.code]
				if c.kind == "huge-length" {
					want = "length 2147483648 > max 1048576"
				}
				if c.kind == "max-length" {
					want = "length 4294967295 > max 1048576"
				}
				if !strings.Contains(r.stdout, "e.g. "+c.code+": bad frame from the target: "+want) {
					t.Errorf("the console does not quote %q:\n%s", want, r.stdout)
				}
			case c.kind == "unknown-id":
				if u := fcCount(t, ph, "unknown_id"); u != faults || errs != 0 {
					t.Errorf("unknown_id %d errors %d; want %d and 0", u, errs, faults)
				}
			default:
				if errs != 0 || fcCount(t, ph, "ok") != fcCount(t, ph, "requests") {
					t.Errorf("errors %d: an empty payload is a valid reply", errs)
				}
			}
			// Peak RSS of the runner (and of the target it spawned and
			// reaped), against the benign variant's: growth under 20 MiB,
			// nothing near what a 2 GiB or 4 GiB length asks for. (The
			// race detector's shadow memory makes absolute values large.)
			rss[c.kind] = r.maxRSS
			if base, ok := rss["zero-length"]; ok && r.maxRSS-base > 20<<20 {
				t.Errorf("peak RSS %d MiB, %d MiB above the benign run's", r.maxRSS>>20, (r.maxRSS-base)>>20)
			}
			t.Logf("%s: %d faults, peak RSS %d MiB", c.kind, faults, r.maxRSS>>20)
		})
	}
}

// The target closes each connection after its 50th reply: the request in
// flight then is eof (never a timeout), and the next one re-dials.
func TestFrameServerCloses(t *testing.T) {
	t.Parallel()
	yaml := frameScenario("frame-close", `"--close-after", "50"`,
		"  - {name: main, closed: {connections: 4}, requests: 1000}\n", `  expect:
    - server.requests == requests
    - server.connections == connections_opened
assert:
  - timeouts == 0
`)
	r := fcRunScenario(t, "frame-close", yaml, exitPass)
	ph := r.phases(t)[0]
	closes := int64(jsonNum(t, ph, "server", "closed_by_server"))
	if re := fcCount(t, ph, "reconnects"); closes < 16 || re < closes-4 || re > closes {
		t.Errorf("closes %d, reconnects %d", closes, re)
	}
}

// Out-of-order replies with several in flight per connection (open
// model, in-flight 8) all pair with their own requests.
func TestFrameOutOfOrder(t *testing.T) {
	t.Parallel()
	yaml := frameScenario("frame-reorder", `"--reorder", "4"`,
		"  - {name: main, open: {rate: 2000/s, connections: 2, inflight: 8}, duration: 1s}\n", `  expect:
    - server.responses == ok
assert:
  - errors == 0 and dropped == 0 and unknown_id == 0 and duplicate_id == 0
  - ok == 2000
`)
	fcRunScenario(t, "frame-reorder", yaml, exitPass)
}

// Bad frames with several requests in flight per connection (the
// breaker's case): each fault is one bad-magic error, the other requests
// then in flight are bad-frame link-closed, a frame written as the
// connection closed is sent again on a new one, so the target counted
// every request, and a fault is never charged twice.
func TestFrameBadFramesInFlight(t *testing.T) {
	t.Parallel()
	yaml := frameScenario("frame-bad-inflight", `"--malformed-every", "10", "--malformed", "bad-magic"`,
		"  - {name: main, open: {rate: 2000/s, connections: 4, inflight: 8}, duration: 1s}\n", `  expect:
    - server.requests == requests
    - 'server.malformed_sent == errors_by["bad-magic"]'
assert:
  - cancelled == 0
  - 'errors == errors_by["bad-magic"] + errors_by["link-closed"]'
`)
	r := fcRunScenario(t, "frame-bad-inflight", yaml, exitPass)
	ph := r.phases(t)[0]
	t.Logf("requests %d, errors %d, faults %.0f", fcCount(t, ph, "requests"), fcCount(t, ph, "errors"), jsonNum(t, ph, "server", "malformed_sent"))
}

// The defect pinned: a reply cut mid-frame booking one request twice, or
// every request on the connection as the same error.
//
// TestField_MidFrameCut: 4 connections × 8 in flight (open model; each
// reply 20 ms late, so several are in flight on a connection when it
// ends). "cut": after each connection's 50th reply the target writes the
// first half of the 51st (its header whole) and closes. That request is
// short-read, exactly once per cut; every other request in flight on the
// connection lost its reply with it: eof link-closed. "close": after the
// 50th reply the target closes between frames: every request in flight
// is eof. Each request ends once (requests == ok + errors + cancelled),
// the client's counts reconcile with the target's (its whole responses
// are the client's ok, every request it took and answered neither whole
// nor half is a lost reply), and each close is one re-dial.
func TestField_MidFrameCut_OneShortReadRestLinkClosed(t *testing.T) {
	for _, c := range []struct {
		name, knob string
		lost       string // the code of the replies the close took
	}{
		{"cut", "--cut-after", "link-closed"},
		{"close", "--close-after", "eof"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			yaml := frameScenario("midframe-"+c.name, `"`+c.knob+`", "50", "--delay", "20ms"`,
				"  - {name: main, open: {rate: 1000/s, connections: 4, inflight: 8}, duration: 2s}\n", `  expect:
    - server.requests == requests
    - server.responses == ok
    - 'server.cut_sent == errors_by["short-read"]'
    - 'server.cut_sent == closes_by["short-read"]'
assert:
  - cancelled == 0
`)
			r := fcRunScenario(t, "midframe-"+c.name, yaml, exitPass)
			ph := r.phases(t)[0]
			sum := ph["summary"].(map[string]any)
			srv := func(k string) int64 { return int64(jsonNum(t, ph, "server", k)) }
			by := func(group, k string) int64 {
				m, _ := sum[group].(map[string]any)
				f, _ := m[k].(float64)
				return int64(f)
			}
			requests, ok, errs := fcCount(t, ph, "requests"), fcCount(t, ph, "ok"), fcCount(t, ph, "errors")
			cuts, closes := srv("cut_sent"), srv("closed_by_server")
			short, lost := by("errors_by_code", "short-read"), by("errors_by_code", c.lost)
			t.Logf("requests %d ok %d errors %d (short-read %d, %s %d); target: closes %d cuts %d requests %d responses %d",
				requests, ok, errs, short, c.lost, lost, closes, cuts, srv("requests"), srv("responses"))
			if closes < 10 {
				t.Fatalf("the target closed only %d connections", closes)
			}
			wantCuts := int64(0)
			if c.name == "cut" {
				wantCuts = closes
			}
			if cuts != wantCuts || short != cuts || by("errors_by_class", "short-read") != cuts {
				t.Errorf("short-read %d (class %d) for %d cuts of %d closes: want one per cut", short, by("errors_by_class", "short-read"), cuts, closes)
			}
			if errs != short+lost || by("errors_by_class", "eof") != lost || len(sum["errors_by_code"].(map[string]any)) > 2 {
				t.Errorf("errors %d, by code %v, by class %v: want only short-read and eof %s", errs, sum["errors_by_code"], sum["errors_by_class"], c.lost)
			}
			if want := srv("requests") - srv("responses") - cuts; lost != want || lost < closes {
				t.Errorf("%s %d; the target took %d requests, answered %d whole and cut %d: want %d (and several in flight per close)",
					c.lost, lost, srv("requests"), srv("responses"), cuts, want)
			}
			if cancelled := fcCount(t, ph, "cancelled"); requests != ok+errs+cancelled || ok != srv("responses") {
				t.Errorf("requests %d, ok %d + errors %d + cancelled %d; target responses %d", requests, ok, errs, cancelled, srv("responses"))
			}
			if re := fcCount(t, ph, "reconnects"); re < closes-4 || re > closes {
				t.Errorf("reconnects %d for %d closes", re, closes)
			}
		})
	}
}

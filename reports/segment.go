package reports

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/runner-dev/runner/engine"
	"github.com/runner-dev/runner/internal/clock"
)

// Segment is the block a scale-out segment's report carries: which part
// of which plan it ran, when it started, how good its clock was, and the
// fingerprints of the arrivals it was given, so that `runner merge` can
// check that the segments make up one run (docs/design.md, "Scale-out").
type Segment struct {
	// K and N: this is segment K (from 0) of N.
	K int `json:"k"`
	N int `json:"n"`
	// Source says where K and N came from: the flag, or the engine's
	// variables (--segment auto).
	Source string `json:"source,omitempty"`
	// StartAt is the instant the run's first phase was to start at (the
	// same for every segment); nil when the segment was started without
	// one. Each phase's lag after its instant is PhaseResult.StartLag.
	StartAt *time.Time `json:"start_at,omitempty"`
	// PhaseGap is the timetable's gap after each phase's drain bound
	// (runner run --phase-gap), in ns: every segment must keep the same.
	PhaseGap time.Duration `json:"phase_gap_ns,omitempty"`
	// PlanHash identifies the scenario and plan every segment must share
	// (PlanHash).
	PlanHash string `json:"plan_hash"`
	// Arrivals are the fingerprints of the open phases' arrivals this
	// segment was given, per repeat and phase (engine.ArrivalFingerprint).
	Arrivals []engine.Fingerprint `json:"arrivals,omitempty"`
	// Clock is the machine's clock synchronisation state when the
	// segment started: the evidence for how close to StartAt the segments
	// on other machines started.
	Clock clock.Sync `json:"clock"`
}

// Merged is the block of a result `runner merge` made from segments.
type Merged struct {
	// N is the number of segments; PlanHash the plan they share.
	N        int    `json:"n"`
	PlanHash string `json:"plan_hash"`
	// Segments are the merged reports, in segment order.
	Segments []MergedPart `json:"segments"`
}

// MergedPart is one segment of a merged result.
type MergedPart struct {
	File     string    `json:"file"`
	RunID    string    `json:"run_id"`
	Hostname string    `json:"hostname"`
	Outcome  string    `json:"outcome"`
	Segment  *Segment  `json:"segment"`
	Started  time.Time `json:"started"`
}

// PlanHash is the SHA-256, in hex, of the scenario and plan of r as its
// JSON report writes them (secrets redacted, so that the hash of a
// report never tests a guess of one): segments of one run share it, and
// segments of an edited scenario, another environment variable or
// another version of runner that plans differently do not.
func PlanHash(r *Run) (string, error) {
	b, err := json.Marshal(struct {
		Scenario any `json:"scenario"`
		Plan     any `json:"plan"`
	}{r.Scenario, r.Plan})
	if err != nil {
		return "", fmt.Errorf("plan hash: %w", err)
	}
	b, err = r.Redactor().JSON(b)
	if err != nil {
		return "", fmt.Errorf("plan hash: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

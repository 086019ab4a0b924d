package reports

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"

	"github.com/runner-dev/runner/engine"
	"github.com/runner-dev/runner/engine/rules"
)

// JUnit writes the run as JUnit XML for CI systems (Jenkins, GitLab,
// GitHub test reporters): a <testsuites> root holding one <testsuite>
// named after the scenario, with one <testcase> per rule and phase judged
// ("p99 < 20ms [phase steady]", classname the scenario name; the
// reconcile.expect rules have classname "<scenario>.reconcile"). A failed
// rule carries a <failure> with the observed values against the rule and
// the reason per repeat, a rule that could not be evaluated an <error>,
// an inconclusive one a <skipped message="inconclusive: …">; a passed one
// lists its observed values in <system-out>. A run that could not run
// adds a testcase with an <error> saying why, and so does an interrupted
// run (testcase "run interrupted", error type "interrupted"), so that CI
// never reads it as green; warnings that make the
// measurement unfit for a verdict add a skipped "measurement" testcase.
// The suite's time is the run's duration in seconds. Secret values are
// redacted. The output validates against testdata/junit-10.xsd.
func JUnit(w io.Writer, r *Run) error {
	return JUnitRuns(w, []*Run{r})
}

// JUnitRuns writes several runs (one scenario each) as one JUnit
// document: one <testsuite> per run, in order, under <testsuites>.
func JUnitRuns(w io.Writer, runs []*Run) error {
	doc := junitSuites{Name: "runner"}
	var total float64
	for _, r := range runs {
		s := junitSuiteOf(r)
		doc.Tests += s.Tests
		doc.Failures += s.Failures
		doc.Errors += s.Errors
		total += runDuration(r)
		doc.Suites = append(doc.Suites, s)
	}
	doc.Time = junitSeconds(total)
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	if err := enc.Close(); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Timestamp  string          `xml:"timestamp,attr,omitempty"`
	Properties []junitProperty `xml:"properties>property,omitempty"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

// junitCase's children are in the order the schema requires: skipped,
// error, failure, system-out.
type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	Error     *junitMessage `xml:"error,omitempty"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Body    string `xml:",chardata"`
}

func runDuration(r *Run) float64 {
	if r.Ended.After(r.Started) {
		return r.Ended.Sub(r.Started).Seconds()
	}
	return 0
}

func junitSeconds(s float64) string { return fmt.Sprintf("%.3f", s) }

func junitSuiteOf(r *Run) junitSuite {
	name := "scenario"
	if r.Scenario != nil {
		name = r.Scenario.Name
	}
	red := r.redact
	s := junitSuite{Name: red(name), Time: junitSeconds(runDuration(r))}
	if !r.Started.IsZero() {
		// No zone: the form every JUnit schema accepts.
		s.Timestamp = r.Started.UTC().Format("2006-01-02T15:04:05")
	}
	prop := func(k, v string) {
		if v != "" {
			s.Properties = append(s.Properties, junitProperty{k, red(v)})
		}
	}
	prop("run_id", r.RunID)
	prop("outcome", runOutcome(r))
	prop("exit_code", fmt.Sprint(r.ExitCode))
	prop("target", r.Target)
	if g := r.Merged; g != nil {
		prop("merged_segments", fmt.Sprint(g.N))
	}
	prop("runner_version", r.Env.Runner)
	prop("workdir_commit", r.Env.WorkdirCommit)

	measured := r.Result != nil && len(r.Result.Phases) > 0
	if r.Error != "" {
		s.Cases = append(s.Cases, junitCase{
			Name: "run", Classname: red(name), Time: junitSeconds(runDuration(r)),
			Error: &junitMessage{Type: "could-not-run", Message: red("could not run: " + r.Error), Body: red(r.Error)},
		})
	}
	if r.Error == "" && (runOutcome(r) == "interrupted" || (r.Result != nil && r.Result.Interrupted)) {
		// An interrupted run measured less than it planned: whatever its
		// rules say of what it did measure, CI must not read it as green.
		msg := "run interrupted: a signal stopped it before it completed"
		if r.Plan != nil && r.Result != nil {
			msg += fmt.Sprintf(" (%d of %d phase results recorded)", len(r.Result.Phases), r.Plan.Repeats*len(r.Plan.Phases))
		}
		s.Cases = append(s.Cases, junitCase{
			Name: "run interrupted", Classname: red(name), Time: junitSeconds(runDuration(r)),
			Error: &junitMessage{Type: "interrupted", Message: msg},
		})
	}
	if v := r.Verdict; v != nil && (r.Error == "" || measured) {
		for _, rr := range v.Rules {
			s.Cases = append(s.Cases, ruleCase(r, name, "rule", rr))
		}
		for _, rr := range v.Expect {
			s.Cases = append(s.Cases, ruleCase(r, name+".reconcile", "reconcile", rr))
		}
	}
	if inv := invalidatingWarnings(r); len(inv) > 0 && r.Error == "" {
		var msgs []string
		for _, w := range inv {
			msgs = append(msgs, w.Message)
		}
		s.Cases = append(s.Cases, junitCase{
			Name: "measurement", Classname: red(name), Time: junitSeconds(0),
			Skipped: &junitMessage{Message: red("inconclusive: " + invalidReason(r)), Body: red(strings.Join(msgs, "\n"))},
		})
	}
	if len(s.Cases) == 0 {
		// A suite without a testcase reads as "no tests" to some CI
		// systems: say what happened instead.
		c := junitCase{Name: "run", Classname: red(name), Time: junitSeconds(runDuration(r))}
		switch oc := runOutcome(r); oc {
		case "pass":
			c.SystemOut = "no rules: the run completed"
		default:
			c.Skipped = &junitMessage{Message: "not judged: " + oc}
		}
		s.Cases = append(s.Cases, c)
	}
	for _, c := range s.Cases {
		s.Tests++
		switch {
		case c.Failure != nil:
			s.Failures++
		case c.Error != nil:
			s.Errors++
		case c.Skipped != nil:
			s.Skipped++
		}
	}
	return s
}

// ruleCase is one rule judged on one phase.
func ruleCase(r *Run, classname, kind string, rr engine.RuleResult) junitCase {
	red := r.redact
	c := junitCase{
		Name:      red(fmt.Sprintf("%s [phase %s]", rr.Source, rr.Phase)),
		Classname: red(classname),
		// Judging a rule takes no time: the load's time is the suite's,
		// and giving each rule its phase's would count it once per rule
		// in the totals CI tools add up.
		Time: junitSeconds(0),
	}
	var lines, observed []string
	for i, pv := range rr.Repeats {
		line := fmt.Sprintf("repeat %d: %s: %s", ruleRepeatNumber(rr, i), strings.ToUpper(pv.Status.String()), pv.Observed)
		if pv.Reason != "" {
			line += " — " + pv.Reason
		}
		lines = append(lines, line)
		observed = append(observed, fmt.Sprintf("repeat %d %s", ruleRepeatNumber(rr, i), pv.Observed))
	}
	if len(rr.Repeats) == 0 && rr.Reason != "" {
		lines = append(lines, rr.Reason)
	}
	body := red(strings.Join(lines, "\n"))
	reason := rr.Reason
	if reason == "" {
		reason = "no reason given"
	}
	switch rr.Status {
	case rules.Pass:
		c.SystemOut = body
	case rules.Fail:
		msg := fmt.Sprintf("%s does not hold on phase %s", rr.Source, rr.Phase)
		if len(observed) > 0 {
			msg += ": observed " + strings.Join(observed, ", ")
		}
		c.Failure = &junitMessage{Type: kind, Message: red(msg + "; " + reason), Body: body}
	case rules.Error:
		c.Error = &junitMessage{Type: kind, Message: red(fmt.Sprintf("%s could not be evaluated on phase %s: %s", rr.Source, rr.Phase, reason)), Body: body}
	default:
		c.Skipped = &junitMessage{Message: red("inconclusive: " + reason), Body: body}
	}
	return c
}

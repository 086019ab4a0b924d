package rules

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/checker"
	"github.com/expr-lang/expr/compiler"
	"github.com/expr-lang/expr/conf"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/parser"
	"github.com/expr-lang/expr/vm"

	"github.com/runner-dev/runner/internal/counters"
)

// Rule is a compiled assertion. It is immutable and safe for concurrent use.
type Rule struct {
	src  string
	rw   *rewritten
	prog *vm.Program
	top  *clause
	refs []ref // every metric the rule reads, in order of first appearance
	// steps are the flow steps the rule names, in order of first
	// appearance, each with its first text offset (for CheckSteps).
	steps []stepUse
	// ops are the rule's arithmetic operations by text offset, to say
	// which one had no defined value at run time.
	ops map[int]opText
}

// clause is a node of a rule's boolean skeleton: and, or, not, or an atom
// (any other condition), each atom compiled on its own so that a rule can
// be judged with three-valued logic when some metric is unavailable.
type clause struct {
	op   string // "and", "or", "not", or "" for an atom
	kids []*clause
	prog *vm.Program
	refs []ref
	text string // the atom as written
	// sides are the two operands of an atom that compares (a < b, a ==
	// b, a ≈ b), compiled apart so that a false comparison can show
	// both values and their difference; nil otherwise.
	sides *[2]*vm.Program
}

// CompileError is a rule that does not compile: where and why.
type CompileError struct {
	// Rule is the rule's source as written.
	Rule string
	// Offset is the position in Rule in runes (0-based); Line and Column
	// are the same position 1-based, Column counted in runes.
	Offset, Line, Column int
	// Msg says what is wrong, lower-case.
	Msg string
}

// Error returns "column C: msg", or "line L, column C: msg" for a rule
// that spans lines.
func (e *CompileError) Error() string {
	if strings.Contains(e.Rule, "\n") {
		return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Column, e.Msg)
	}
	return fmt.Sprintf("column %d: %s", e.Column, e.Msg)
}

// Snippet returns the offending line of the rule with a caret under the
// position, for consoles.
func (e *CompileError) Snippet() string {
	lines := strings.Split(e.Rule, "\n")
	if e.Line < 1 || e.Line > len(lines) {
		return ""
	}
	return lines[e.Line-1] + "\n" + strings.Repeat(" ", max(e.Column-1, 0)) + "^"
}

// String returns the rule's source as written.
func (r *Rule) String() string {
	if r == nil {
		return ""
	}
	return r.src
}

// Metrics returns the metrics the rule reads, as written in rules
// (e.g. "p99", "median(p99)", `errors_by["503"]`), in order of first
// appearance.
func (r *Rule) Metrics() []string {
	if r == nil {
		return nil
	}
	out := make([]string, len(r.refs))
	for i, x := range r.refs {
		out[i] = x.String()
	}
	return out
}

// Compile compiles one rule against the typed metrics environment, so that
// unknown names, missing duration units and type errors are caught before
// any traffic. Its error is a *CompileError. Compile never panics.
func Compile(src string) (r *Rule, err error) {
	defer func() {
		if p := recover(); p != nil {
			r, err = nil, &CompileError{Rule: src, Line: 1, Column: 1, Msg: fmt.Sprintf("internal error: %v", p)}
		}
	}()
	rule, cerr := compile(src)
	if cerr != nil {
		return nil, cerr
	}
	return rule, nil
}

// MaxRuleLength, MaxRuleDepth and MaxRuleOperators bound a rule's size in
// bytes, the nesting of its brackets ((), [], {}) and its operators (a run
// of operator characters, or the words and, or, not, in), checked before
// it is compiled: a chain of operators is a tree as deep as it is long,
// and the compiler's work grows faster than the tree (2,700 additions in
// one rule took 0.6 s and 16 MB; 128 such rules, 77 s and 2 GB).
const (
	MaxRuleLength    = 8 << 10
	MaxRuleDepth     = 64
	MaxRuleOperators = 128
)

// operators counts the operators of src as MaxRuleOperators does, outside
// string literals, and returns the byte offset of the first one beyond
// the bound (or -1).
func operators(src string) (n, beyond int) {
	beyond = -1
	var quote byte
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case quote != 0:
			if c == '\\' {
				i++
			} else if c == quote {
				quote = 0
			}
			continue
		case c == '"' || c == '\'' || c == '`':
			quote = c
			continue
		case strings.HasPrefix(src[i:], "≈"):
			i += len("≈") - 1
		case strings.IndexByte("+-*/%<>=!&|^?", c) >= 0:
			for i+1 < len(src) && strings.IndexByte("+-*/%<>=!&|^", src[i+1]) >= 0 {
				i++
			}
		case isWordStart(src, i) && (standsAlone(src, i, "and") || standsAlone(src, i, "or") || standsAlone(src, i, "not") || standsAlone(src, i, "in")):
		default:
			continue
		}
		n++
		if n > MaxRuleOperators && beyond < 0 {
			beyond = i
		}
	}
	return n, beyond
}

// isWordStart reports whether src[i] begins a word (not inside one).
func isWordStart(src string, i int) bool {
	return i == 0 || !isWordByte(src[i-1])
}

// standsAlone reports whether the word w stands alone at src[i:].
func standsAlone(src string, i int, w string) bool {
	return strings.HasPrefix(src[i:], w) && (i+len(w) == len(src) || !isWordByte(src[i+len(w)]))
}

func isWordByte(c byte) bool {
	return c == '_' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// nesting returns the deepest bracket nesting of src and the byte offset
// where it is first reached; brackets inside string literals count too (a
// conservative bound).
func nesting(src string) (at, depth int) {
	d := 0
	for i := 0; i < len(src); i++ {
		switch src[i] {
		case '(', '[', '{':
			d++
			if d > depth {
				depth, at = d, i
			}
		case ')', ']', '}':
			d--
		}
	}
	return at, depth
}

// compile is Compile without the recover, so that fuzzing sees panics.
func compile(src string) (*Rule, *CompileError) {
	if strings.TrimSpace(src) == "" {
		return nil, &CompileError{Rule: src, Line: 1, Column: 1, Msg: "empty rule"}
	}
	// Bounded before the compiler sees it: its work grows faster than the
	// rule (120,000 nested parentheses took 53 s), and CI gates validate
	// files from pull requests.
	if len(src) > MaxRuleLength {
		return nil, &CompileError{Rule: src[:MaxRuleLength], Line: 1, Column: 1, Msg: fmt.Sprintf("rule of %d bytes: at most %d; split it into several rules", len(src), MaxRuleLength)}
	}
	if at, depth := nesting(src); depth > MaxRuleDepth {
		return nil, &CompileError{Rule: src, Line: 1, Column: at + 1, Msg: fmt.Sprintf("brackets nested %d deep: at most %d", depth, MaxRuleDepth)}
	}
	if n, at := operators(src); at >= 0 {
		return nil, &CompileError{Rule: src, Line: 1, Column: at + 1, Msg: fmt.Sprintf("%d operators: at most %d; split it into several rules", n, MaxRuleOperators)}
	}
	rw, cerr := rewrite(src)
	if cerr != nil {
		return nil, cerr
	}
	tree, err := parser.Parse(rw.text)
	if err != nil {
		return nil, rw.exprError(err)
	}
	c := &checkState{rw: rw, lets: map[string]bool{}, letUnits: map[string]unit{}, ops: map[int]opText{}}
	ast.Walk(&tree.Node, letCollector(c.lets))
	u, cerr := c.check(tree.Node)
	if cerr != nil {
		return nil, cerr
	}
	if u != boolUnit {
		what := "a " + u.String()
		if u == unknownUnit {
			what = "not known to be true or false"
		}
		return nil, rw.errorAtText(startOf(tree.Node), "a rule must be true or false, e.g. p99 < 20ms; this one is %s", what)
	}
	cfg := newConfig(rw, true)
	checked, err := checker.ParseCheck(rw.text, cfg)
	if err != nil {
		return nil, rw.exprError(err)
	}
	prog, err := compiler.Compile(checked, cfg)
	if err != nil {
		return nil, rw.exprError(err)
	}
	r := &Rule{src: src, rw: rw, prog: prog, ops: c.ops}
	r.top, err = buildClause(checked.Node, checked.Source, cfg, newConfig(rw, false), rw)
	if err == nil && r.top.op == "" {
		r.top.text = strings.TrimSpace(src) // one atom: the whole rule
	}
	if err != nil {
		return nil, rw.exprError(err)
	}
	r.refs = readRefs(&checked.Node)
	sv := &stepVisitor{lets: c.lets}
	ast.Walk(&tree.Node, sv)
	r.steps = sv.uses
	return r, nil
}

// stepUse is a flow step a rule names and where it first does.
type stepUse struct {
	name string
	at   int // text offset of the name
}

// stepVisitor collects the flow steps a parsed (unpatched) tree names:
// the NAME of every step.NAME (also inside median(), worst() and after
// baseline.).
type stepVisitor struct {
	lets map[string]bool
	uses []stepUse
}

// Visit implements ast.Visitor.
func (v *stepVisitor) Visit(node *ast.Node) {
	m, ok := (*node).(*ast.MemberNode)
	if !ok || m.Method {
		return
	}
	p, ok := path(m)
	if !ok || v.lets[p[0]] || !(len(p) == 2 || len(p) == 3 && p[0] == "baseline") || p[len(p)-2] != stepGroup {
		return
	}
	name := p[len(p)-1]
	for _, u := range v.uses {
		if u.name == name {
			return
		}
	}
	v.uses = append(v.uses, stepUse{name: name, at: m.Property.Location().From})
}

// Steps returns the names of the flow steps the rule reads
// (step.NAME.*), in order of first appearance; nil when it reads none.
func (r *Rule) Steps() []string {
	if r == nil {
		return nil
	}
	var out []string
	for _, u := range r.steps {
		out = append(out, u.name)
	}
	return out
}

// CheckSteps checks the flow steps the rule reads against known, the
// names of the steps of the plan's flows (engine.Plan.FlowSteps): a
// rule is compiled before the plan is built, so Compile accepts any step
// name and the plan checks them here, before any traffic. The error, a
// *CompileError at the first unknown step's name, says what is known:
// the nearest names ("did you mean login?") and every step, or, when
// known is empty, that the scenario has no flows. A rule that reads no
// step passes.
func (r *Rule) CheckSteps(known []string) error {
	if r == nil {
		return nil
	}
	for _, u := range r.steps {
		if slices.Contains(known, u.name) {
			continue
		}
		if len(known) == 0 {
			return r.rw.errorAtText(u.at, "%s: the scenario has no flows, so there is no step to read (step.NAME.* reads a step of driver.http.flows)", stepPrefix(u.name))
		}
		msg := fmt.Sprintf("unknown step %q", u.name)
		if s := suggest(u.name, known); len(s) > 0 {
			msg += "; did you mean " + orList(s) + "?"
		}
		return r.rw.errorAtText(u.at, "%s (the flows' steps: %s)", msg, strings.Join(known, " "))
	}
	return nil
}

// exprError converts an error of expr's parser, checker or compiler into
// a CompileError at the user's position.
func (rw *rewritten) exprError(err error) *CompileError {
	var fe *file.Error
	if errors.As(err, &fe) {
		return rw.errorAtText(fe.From, "%s", rw.asWritten(fe.From, fe.Message)+syntaxHint(fe.Message))
	}
	msg, _, _ := strings.Cut(err.Error(), "\n")
	return rw.errorAt(0, "%s", msg)
}

// newConfig is the expr configuration rules compile with: the typed env,
// a boolean result (asBool; false for the operands of a comparison), the
// front end's patches, approx and abs, only the builtins of allowedCalls,
// and checked arithmetic (arithOptions) for every operator, which also
// lets durations scale by numbers (p99 * 1.5, p99 / 2) and divide into
// ratios (p99 / p50).
func newConfig(rw *rewritten, asBool bool) *conf.Config {
	cfg := conf.CreateNew()
	opts := []expr.Option{
		expr.Env(root{}),
		expr.DisableAllBuiltins(),
		expr.Function("approx", approxFunc,
			new(func(any, any) bool), new(func(any, any, any) bool)),
		expr.Function("abs", absFunc,
			new(func(int) int64), new(func(int64) int64), new(func(float64) float64), new(func(any) any)),
		expr.Patch(patcher{rw}),
	}
	for name, c := range allowedCalls {
		if c.builtin {
			opts = append(opts, expr.EnableBuiltin(name))
		}
	}
	opts = append(opts, arithOpts...)
	if asBool {
		opts = append(opts, expr.AsBool())
	}
	for _, opt := range opts {
		opt(cfg)
	}
	for name := range cfg.Disabled {
		delete(cfg.Builtins, name)
	}
	// cfg.Check() would verify the operator overloads on every compile,
	// at a quarter of its cost; TestConfigChecks runs it once.
	return cfg
}

// allowedCalls are the functions a rule can call; builtin marks expr's
// own builtins (the others are the front end's). Everything else expr
// offers (now, date, fromJSON, repeat, map, filter, …) is rejected at
// compile time: a rule reads only the phase's metrics, and must give the
// same verdict every time, in bounded time and memory.
var allowedCalls = map[string]struct {
	builtin bool
	usage   string
}{
	"abs":    {false, "abs(x)"},
	"ceil":   {true, "ceil(x)"},
	"floor":  {true, "floor(x)"},
	"round":  {true, "round(x)"},
	"len":    {true, `len(errors_by)`},
	"approx": {false, "approx(a, b, tol)"},
	"median": {false, "median(p99)"},
	"worst":  {false, "worst(p99)"},
}

// callNames lists allowedCalls for messages, in a fixed order.
// (min and max are metrics, so they cannot be functions.)
const callNames = "abs, ceil, floor, round, len, approx, median, worst"

// DefaultTolerance is the relative tolerance of a ≈ b.
const DefaultTolerance = 0.05

// approxFunc implements approx(a, b[, tol]) and a ≈ b:
//
//	|a − b| ≤ tol · max(|a|, |b|),  tol = 0.05 unless given,
//
// so the tolerance is relative to the larger magnitude, symmetric in a and
// b, and 0 ≈ 0 holds. a and b are numbers or durations (durations compare
// in nanoseconds); tol is a fraction ≥ 0 (a computed negative tolerance
// is undefined: the atom is neither true nor false). NaN is never
// approximately anything.
func approxFunc(args ...any) (any, error) {
	if len(args) < 2 || len(args) > 3 {
		return nil, fmt.Errorf("approx takes 2 or 3 arguments, got %d", len(args))
	}
	a, aok := toFloat(args[0])
	b, bok := toFloat(args[1])
	tol := DefaultTolerance
	if len(args) == 3 {
		t, ok := toFloat(args[2])
		if !ok {
			return nil, fmt.Errorf("approx tolerance must be a number ≥ 0, got %T", args[2])
		}
		if t < 0 || math.IsNaN(t) {
			return nil, undefined("approx tolerance below 0", "")
		}
		tol = t
	}
	if !aok || !bok {
		return nil, fmt.Errorf("approx compares numbers or durations, got %T and %T", args[0], args[1])
	}
	return Approx(a, b, tol), nil
}

// Approx reports whether |a − b| ≤ tol · max(|a|, |b|): the definition of
// a ≈ b (tol = DefaultTolerance) and approx(a, b, tol).
func Approx(a, b, tol float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return false
	}
	if a == b { // also equal infinities
		return true
	}
	if math.IsInf(a, 0) || math.IsInf(b, 0) {
		return false
	}
	return math.Abs(a-b) <= tol*math.Max(math.Abs(a), math.Abs(b))
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case float64:
		return x, true
	case time.Duration:
		return float64(x), true
	case int32:
		return float64(x), true
	case float32:
		return float64(x), true
	case uint64:
		return float64(x), true
	}
	return 0, false
}

// patcher rewrites the parsed expr tree before type checking: `==` tokens
// that were `≈` become approx(a, b), duration literals become constants,
// median(x) / worst(x) become reads of the cross-repeat views, and a
// server series' labels are sorted (counters.Canonical).
type patcher struct{ rw *rewritten }

// Visit implements ast.Visitor.
func (p patcher) Visit(node *ast.Node) {
	switch n := (*node).(type) {
	case *ast.BinaryNode:
		if n.Operator == "==" && p.rw.approx[n.Location().From] {
			callee := &ast.IdentifierNode{Value: "approx"}
			callee.SetLocation(n.Location())
			ast.Patch(node, &ast.CallNode{Callee: callee, Arguments: []ast.Node{n.Left, n.Right}})
		}
	case *ast.IntegerNode:
		if d, ok := p.rw.durs[n.Location().From]; ok {
			ast.Patch(node, &ast.ConstantNode{Value: d})
		}
	case *ast.IdentifierNode:
		// p75 → p().p75: a percentile without a field of its own.
		if _, ok := extraPercentile(n.Value); ok {
			ast.Patch(node, pctsRead(&ast.IdentifierNode{Value: pctsField}, n.Value, n.Location()))
		}
		// x → f().x: a catalogue metric without a field of its own.
		if f := extField(n.Value); f != "" {
			ast.Patch(node, pctsRead(&ast.IdentifierNode{Value: f}, n.Value, n.Location()))
		}
	case *ast.UnaryNode:
		if n.Operator != "-" {
			break
		}
		switch k := n.Node.(type) {
		case *ast.ConstantNode:
			// -20ms: the literal child is already a constant.
			if d, ok := k.Value.(time.Duration); ok {
				ast.Patch(node, &ast.ConstantNode{Value: -d})
			}
		case *ast.IntegerNode, *ast.FloatNode:
		default:
			// -x is 0 - x, so that it goes through checked arithmetic
			// (the negation of the least int64 overflows).
			zero := &ast.IntegerNode{Value: 0}
			zero.SetLocation(n.Location())
			ast.Patch(node, &ast.BinaryNode{Operator: "-", Left: zero, Right: n.Node})
		}
	case *ast.MemberNode:
		// server["m{b=\"2\",a=\"1\"}"] → server["m{a=\"1\",b=\"2\"}"]: a
		// series is read by its canonical name (labels sorted), the one
		// the fetch stores, whatever order the rule wrote its labels in.
		if s, ok := n.Property.(*ast.StringNode); ok && !n.Method {
			if bp, ok := path(n.Node); ok && len(bp) > 0 && bp[len(bp)-1] == "server" {
				if c := counters.Canonical(s.Value); c != s.Value {
					key := &ast.StringNode{Value: c}
					key.SetLocation(s.Location())
					n.Property = key
				}
			}
		}
		// service.p75 → service.p().p75.
		if s, ok := n.Property.(*ast.StringNode); ok && !n.Method {
			// baseline.x → baseline.f().x, step.login.x → step.login.f().x:
			// a catalogue metric without a field.
			if f := extField(s.Value); f != "" {
				if bp, ok := path(n.Node); ok && (len(bp) == 1 && bp[0] == "baseline" || isStepPath(bp)) {
					prop := &ast.StringNode{Value: f}
					prop.SetLocation(n.Location())
					inner := &ast.MemberNode{Node: n.Node, Property: prop}
					ast.Patch(node, pctsRead(inner, s.Value, n.Location()))
					break
				}
			}
			if _, ok := extraPercentile(s.Value); ok {
				if bp, ok := path(n.Node); ok && len(bp) > 0 && (isLatencyGroup(bp[len(bp)-1]) || bp[len(bp)-1] == "baseline" || isStepPath(bp)) {
					prop := &ast.StringNode{Value: pctsField}
					prop.SetLocation(n.Location())
					inner := &ast.MemberNode{Node: n.Node, Property: prop}
					ast.Patch(node, pctsRead(inner, s.Value, n.Location()))
				}
			}
		}
	case *ast.BuiltinNode:
		if view := viewOf(n.Name); view != "" && len(n.Arguments) == 1 {
			ast.Patch(node, rebase(n.Arguments[0], view, n.Location()))
		}
	case *ast.CallNode:
		if id, ok := n.Callee.(*ast.IdentifierNode); ok {
			if view := viewOf(id.Value); view != "" && len(n.Arguments) == 1 {
				ast.Patch(node, rebase(n.Arguments[0], view, n.Location()))
			}
		}
	}
}

// isStepPath reports whether a member chain's path names one flow step
// (step.login, median().step.login, baseline.step.login), whose members
// are metrics.
func isStepPath(p []string) bool {
	return len(p) >= 2 && p[len(p)-2] == stepGroup
}

// pctsRead is the read of percentile name from the Pcts map base.
func pctsRead(base ast.Node, name string, loc file.Location) ast.Node {
	base.SetLocation(loc)
	prop := &ast.StringNode{Value: name}
	prop.SetLocation(loc)
	m := &ast.MemberNode{Node: base, Property: prop}
	m.SetLocation(loc)
	return m
}

func viewOf(fn string) string {
	switch fn {
	case "median":
		return viewMedian
	case "worst":
		return viewWorst
	}
	return ""
}

// rebase turns a metric reference x into view.x: p99 → median().p99,
// service.p99 → median().service.p99.
func rebase(n ast.Node, view string, loc file.Location) ast.Node {
	var out ast.Node
	switch n := n.(type) {
	case *ast.IdentifierNode:
		v := &ast.IdentifierNode{Value: view}
		v.SetLocation(loc)
		prop := &ast.StringNode{Value: n.Value}
		prop.SetLocation(n.Location())
		out = &ast.MemberNode{Node: v, Property: prop}
	case *ast.MemberNode:
		out = &ast.MemberNode{Node: rebase(n.Node, view, loc), Property: n.Property, Optional: n.Optional}
	default:
		return n
	}
	out.SetLocation(loc)
	return out
}

// letCollector records the names of `let` variables.
type letCollector map[string]bool

// Visit implements ast.Visitor.
func (l letCollector) Visit(node *ast.Node) {
	if v, ok := (*node).(*ast.VariableDeclaratorNode); ok {
		l[v.Name] = true
	}
}

// refVisitor collects the metrics a checked tree reads, walking it with
// ast.Walk: every identifier and member chain that resolves to a metric.
type refVisitor struct {
	refs    []ref
	seen    map[ref]bool
	callees map[ast.Node]bool
}

// Visit implements ast.Visitor.
func (v *refVisitor) Visit(node *ast.Node) {
	var r ref
	switch n := (*node).(type) {
	case *ast.IdentifierNode:
		if v.callees[n] {
			return
		}
		p, _ := path(n)
		x, res, _ := resolve(p)
		// The server group whole (len(server)) may read any counter.
		if res != isMetric && (res != isGroup || x.group != "server" || x.view != "") {
			return
		}
		r = x
	case *ast.MemberNode:
		if p, ok := path(n); ok {
			x, res, _ := resolve(p)
			if res != isMetric {
				return
			}
			r = x
		} else if bp, ok := path(n.Node); ok {
			// A map group read with a computed key: errors_by[code].
			x, res, _ := resolve(bp)
			if res != isGroup || !isMapGroup(x.group) {
				return
			}
			r = x
		} else {
			return
		}
	default:
		return
	}
	if !v.seen[r] {
		v.seen[r] = true
		v.refs = append(v.refs, r)
	}
}

// readRefs returns the metrics the tree at node reads, in order of first
// appearance. A first walk collects the callees of calls, which are
// function names, not metrics.
func readRefs(node *ast.Node) []ref {
	callees := calleeVisitor{}
	ast.Walk(node, callees)
	v := &refVisitor{seen: map[ref]bool{}, callees: callees}
	ast.Walk(node, v)
	return v.refs
}

// calleeVisitor collects the callee nodes of calls, and the identifiers
// a member is read from (server in server.x): neither is a metric read
// on its own.
type calleeVisitor map[ast.Node]bool

// Visit implements ast.Visitor.
func (c calleeVisitor) Visit(node *ast.Node) {
	switch n := (*node).(type) {
	case *ast.CallNode:
		c[n.Callee] = true
	case *ast.MemberNode:
		if id, ok := n.Node.(*ast.IdentifierNode); ok {
			c[id] = true
		}
	}
}

// buildClause splits a checked tree into its boolean skeleton and compiles
// each atom on its own.
//
// cfg compiles atoms (a boolean result), sideCfg the operands of a
// comparison.
func buildClause(n ast.Node, src file.Source, cfg, sideCfg *conf.Config, rw *rewritten) (*clause, error) {
	switch x := n.(type) {
	case *ast.BinaryNode:
		op := map[string]string{"and": "and", "&&": "and", "or": "or", "||": "or"}[x.Operator]
		if op != "" {
			l, err := buildClause(x.Left, src, cfg, sideCfg, rw)
			if err != nil {
				return nil, err
			}
			r, err := buildClause(x.Right, src, cfg, sideCfg, rw)
			if err != nil {
				return nil, err
			}
			return &clause{op: op, kids: []*clause{l, r}}, nil
		}
	case *ast.UnaryNode:
		if x.Operator == "not" || x.Operator == "!" {
			k, err := buildClause(x.Node, src, cfg, sideCfg, rw)
			if err != nil {
				return nil, err
			}
			return &clause{op: "not", kids: []*clause{k}}, nil
		}
	}
	prog, err := compiler.Compile(&parser.Tree{Node: n, Source: src}, cfg)
	if err != nil {
		return nil, err
	}
	node := n
	c := &clause{prog: prog, refs: readRefs(&node), text: atomText(n, rw)}
	var l, r ast.Node
	switch x := n.(type) {
	case *ast.BinaryNode:
		switch x.Operator {
		case "==", "!=", "<", "<=", ">", ">=":
			l, r = x.Left, x.Right
		}
	case *ast.CallNode:
		if id, ok := x.Callee.(*ast.IdentifierNode); ok && id.Value == "approx" && len(x.Arguments) >= 2 {
			l, r = x.Arguments[0], x.Arguments[1]
		}
	}
	if l != nil {
		lp, errL := compiler.Compile(&parser.Tree{Node: l, Source: src}, sideCfg)
		rp, errR := compiler.Compile(&parser.Tree{Node: r, Source: src}, sideCfg)
		if errL == nil && errR == nil {
			c.sides = &[2]*vm.Program{lp, rp}
		}
	}
	return c, nil
}

// spanVisitor finds the text range a subtree covers.
type spanVisitor struct{ from, to int }

// Visit implements ast.Visitor.
func (s *spanVisitor) Visit(node *ast.Node) {
	loc := (*node).Location()
	if loc.To <= loc.From {
		return
	}
	s.from = min(s.from, loc.From)
	s.to = max(s.to, loc.To)
}

// atomText returns an atom's source as written.
func atomText(n ast.Node, rw *rewritten) string {
	s := &spanVisitor{from: math.MaxInt, to: -1}
	node := n
	ast.Walk(&node, s)
	if s.to > s.from {
		if t := rw.extent(s.from, s.to); t != "" {
			return t
		}
	}
	return n.String()
}

// isMapGroup reports whether group is read by key: errors_by["503"],
// closes_by["1000"], server.x or server["x"].
func isMapGroup(group string) bool {
	return group == "errors_by" || group == "closes_by" || group == "server"
}

// units are the duration units a rule can write after a number.
var units = []string{"ns", "us", "µs", "ms", "s", "m", "h"}

// syntaxHint adds what a newcomer most likely meant to a syntax error of
// expr's parser: `=` for `==`, a space between a number and its unit.
func syntaxHint(msg string) string {
	switch {
	case strings.Contains(msg, `unexpected token Operator("=")`):
		return "; did you mean == (a comparison)?"
	case strings.HasPrefix(msg, `unexpected token Identifier("`):
		id := strings.TrimSuffix(strings.TrimPrefix(msg, `unexpected token Identifier("`), `")`)
		if slices.Contains(units, id) {
			return "; write the unit right after the number, without a space: 50" + id
		}
	}
	return ""
}

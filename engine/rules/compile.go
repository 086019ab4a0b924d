package rules

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/builtin"
	"github.com/expr-lang/expr/checker"
	"github.com/expr-lang/expr/compiler"
	"github.com/expr-lang/expr/conf"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/parser"
	"github.com/expr-lang/expr/vm"
)

// Rule is a compiled assertion. It is immutable and safe for concurrent use.
type Rule struct {
	src  string
	rw   *rewritten
	prog *vm.Program
	top  *clause
	refs []ref // every metric the rule reads, in order of first appearance
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
	return r, nil
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
// and median(x) / worst(x) become reads of the cross-repeat views.
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
		// service.p75 → service.p().p75.
		if s, ok := n.Property.(*ast.StringNode); ok && !n.Method {
			// baseline.x → baseline.f().x: a catalogue metric without a field.
			if f := extField(s.Value); f != "" {
				if bp, ok := path(n.Node); ok && len(bp) == 1 && bp[0] == "baseline" {
					prop := &ast.StringNode{Value: f}
					prop.SetLocation(n.Location())
					inner := &ast.MemberNode{Node: n.Node, Property: prop}
					ast.Patch(node, pctsRead(inner, s.Value, n.Location()))
					break
				}
			}
			if _, ok := extraPercentile(s.Value); ok {
				if bp, ok := path(n.Node); ok && len(bp) > 0 && (isLatencyGroup(bp[len(bp)-1]) || bp[len(bp)-1] == "baseline") {
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

// checkState is the front end's own pass over the parsed tree: it knows
// the metrics, so it can say "unknown metric p98; did you mean p95?" and
// "p99 is a duration: write the unit", which expr's checker cannot.
type checkState struct {
	rw   *rewritten
	lets map[string]bool
	// letUnits are the units of the let variables checked so far.
	letUnits map[string]unit
	// ops are the arithmetic operators by text offset, for the messages
	// of undefined results at run time.
	ops map[int]opText
}

// opText is an arithmetic operation as written: the whole operation and
// its right operand (the divisor of / and %).
type opText struct{ whole, right string }

// noteOp records the operation n (binary, or unary minus with a nil left)
// for run-time messages.
func (c *checkState) noteOp(n ast.Node, right ast.Node) {
	c.ops[n.Location().From] = opText{whole: atomText(n, c.rw), right: atomText(right, c.rw)}
}

func (c *checkState) errAt(n ast.Node, format string, args ...any) *CompileError {
	return c.rw.errorAtText(n.Location().From, format, args...)
}

// errAtStart is errAt at the first character of the subtree n.
func (c *checkState) errAtStart(n ast.Node, format string, args ...any) *CompileError {
	return c.rw.errorAtText(startOf(n), format, args...)
}

// startOf returns the text offset of the first token of the subtree n.
func startOf(n ast.Node) int {
	s := &spanVisitor{from: math.MaxInt, to: -1}
	ast.Walk(&n, s)
	if s.to < 0 {
		return n.Location().From
	}
	return s.from
}

// path returns the constant path of a member chain: service.p99 →
// [service p99], errors_by["503"] → [errors_by 503]; ok is false when a
// property is computed or the chain does not start at an identifier.
func path(n ast.Node) (p []string, ok bool) {
	switch n := n.(type) {
	case *ast.IdentifierNode:
		if n.Value == pctsField || isExtField(n.Value) { // p75 as the patcher rewrote it: p().p75
			return []string{}, true
		}
		return []string{n.Value}, true
	case *ast.MemberNode:
		base, ok := path(n.Node)
		if !ok || n.Method {
			return nil, false
		}
		s, ok := n.Property.(*ast.StringNode)
		if !ok {
			return nil, false
		}
		if s.Value == pctsField || isExtField(s.Value) {
			return base, true
		}
		return append(base, s.Value), true
	}
	return nil, false
}

// resolution is what a constant path names.
type resolution int

const (
	notFound resolution = iota
	isMetric
	isGroup
)

// resolve reads a path as a metric reference. It returns the reference,
// whether the path names a metric or a group (a prefix such as `service`),
// and for an unknown name a message.
func resolve(p []string) (r ref, res resolution, msg string) {
	r, res, msg, _ = resolveAt(p)
	return r, res, msg
}

// resolveAt is resolve that also says at which segment of p an unknown
// name is.
func resolveAt(p []string) (r ref, res resolution, msg string, at int) {
	if len(p) == 0 {
		return ref{}, notFound, "empty name", 0
	}
	off := 0
	if p[0] == viewMedian || p[0] == viewWorst || p[0] == "baseline" {
		r.view = p[0]
		p, off = p[1:], 1
		if len(p) == 0 {
			return r, isGroup, "", 0
		}
	}
	derive()
	head := p[0]
	_, known := topLevel[head]
	if _, ok := extraPercentile(head); ok {
		known = true
	}
	if known {
		if len(p) > 1 {
			return r, notFound, fmt.Sprintf("%s is a metric, it has no member %q", head, p[1]), off + 1
		}
		r.name = head
		return r, isMetric, "", 0
	}
	if !slices.Contains(groups, head) || head == "baseline" {
		known := append(slices.Clone(topNames), groups...)
		if hint := percentileHint(head); hint != "" {
			return r, notFound, fmt.Sprintf("unknown metric %q: %s", head, hint), off
		}
		return r, notFound, unknownMsg(head, known, "known metrics: "+strings.Join(topNames, " ")+
			"; groups: service.* failed.* corrected.* errors_by[code] closes_by[code] server.* client.* target.* baseline.*"), off
	}
	r.group = head
	if len(p) == 1 {
		return r, isGroup, "", 0
	}
	r.name = p[1]
	if len(p) > 2 {
		return r, notFound, fmt.Sprintf("%s has no member %q", r, p[2]), off + 2
	}
	if names, ok := memberNames[head]; ok {
		_, extra := extraPercentile(r.name)
		if _, ok := members[head][r.name]; !ok && !(extra && isLatencyGroup(head)) {
			if hint := percentileHint(r.name); hint != "" && isLatencyGroup(head) {
				return r, notFound, fmt.Sprintf("unknown metric %q: %s", head+"."+r.name, hint), off + 1
			}
			return r, notFound, unknownMsg(head+"."+r.name, prefixed(head, names),
				head+".* has "+strings.Join(names, " ")), off + 1
		}
	}
	return r, isMetric, "", 0
}

// segment returns the node of a member chain n (of count segments) that
// holds segment k: the root identifier for 0, the k-th member after it.
func segment(n ast.Node, k, count int) ast.Node {
	for i := count - 1; i > k; i-- {
		m, ok := n.(*ast.MemberNode)
		if !ok {
			return n
		}
		n = m.Node
	}
	if m, ok := n.(*ast.MemberNode); ok && k > 0 {
		return m.Property
	}
	return n
}

func prefixed(group string, names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = group + "." + n
	}
	return out
}

func unknownMsg(name string, known []string, list string) string {
	msg := fmt.Sprintf("unknown metric %q", name)
	if s := suggest(name, known); len(s) > 0 {
		msg += "; did you mean " + orList(s) + "?"
	}
	return msg + " (" + list + ")"
}

func orList(s []string) string {
	if len(s) == 1 {
		return s[0]
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

// groupExample shows how a group is read.
var groupExample = map[string]string{
	"service": "service.p99", "failed": "failed.p99", "corrected": "corrected.p99", "errors_by": `errors_by["503"]`, "closes_by": `closes_by["1006"]`,
	"server": "server.<counter>", "client": "client.cpu", "target": "target.cpu", "baseline": "baseline.p99",
}

// usesName reports whether the identifier name occurs in n.
func usesName(n ast.Node, name string) bool {
	v := &nameVisitor{name: name}
	ast.Walk(&n, v)
	return v.found
}

type nameVisitor struct {
	name  string
	found bool
}

func (v *nameVisitor) Visit(node *ast.Node) {
	if id, ok := (*node).(*ast.IdentifierNode); ok && id.Value == v.name {
		v.found = true
	}
}

// check infers the unit of n and checks names, views and units.
func (c *checkState) check(n ast.Node) (unit, *CompileError) {
	switch n := n.(type) {
	case *ast.IntegerNode:
		if _, ok := c.rw.durs[n.Location().From]; ok {
			return durationUnit, nil
		}
		return numberUnit, nil
	case *ast.FloatNode:
		return numberUnit, nil
	case *ast.BoolNode:
		return boolUnit, nil
	case *ast.StringNode:
		return stringUnit, nil
	case *ast.IdentifierNode, *ast.MemberNode:
		return c.checkRef(n)
	case *ast.UnaryNode:
		u, err := c.check(n.Node)
		if err != nil {
			return 0, err
		}
		switch n.Operator {
		case "not", "!":
			return boolUnit, nil
		case "-", "+":
			if u != numberUnit && u != durationUnit {
				return 0, c.errAt(n, "%s applies to a number; this is %s", n.Operator, unitPhrase(u))
			}
			if n.Operator == "+" {
				break
			}
			if u == durationUnit && !c.isDurationLiteral(n.Node) {
				return 0, c.errAt(n, "a duration cannot be negated; write 0s - %s", c.describe(n.Node))
			}
			if _, lit := constNumber(n.Node); !lit {
				c.noteOp(n, n.Node)
			}
		}
		return u, nil
	case *ast.BinaryNode:
		return c.checkBinary(n)
	case *ast.BuiltinNode:
		return c.checkCall(n, n.Name, n.Arguments)
	case *ast.CallNode:
		if id, ok := n.Callee.(*ast.IdentifierNode); ok {
			if _, metric := topLevel[id.Value]; (metric || slices.Contains(groups, id.Value)) && !c.lets[id.Value] {
				return 0, c.errAt(n, "%s is a metric, not a function", id.Value)
			}
			return c.checkCall(n, id.Value, n.Arguments)
		}
		if _, err := c.check(n.Callee); err != nil {
			return 0, err // p99.Hours(): says what to write instead
		}
		return 0, c.errAt(n, "only functions can be called: %s", callNames)
	case *ast.ConditionalNode:
		cu, err := c.check(n.Cond)
		if err != nil {
			return 0, err
		}
		if cu != boolUnit {
			return 0, c.errAtStart(n.Cond, "the condition of ?: must be true or false; this is %s", unitPhrase(cu))
		}
		a, err := c.check(n.Exp1)
		if err != nil {
			return 0, err
		}
		b, err := c.check(n.Exp2)
		if err != nil {
			return 0, err
		}
		switch {
		case a == b:
			return a, nil
		case a == durationUnit && b == numberUnit:
			return 0, c.mixError(n, n.Exp1, n.Exp2)
		case a == numberUnit && b == durationUnit:
			return 0, c.mixError(n, n.Exp2, n.Exp1)
		}
		return unknownUnit, nil
	case *ast.VariableDeclaratorNode:
		u, err := c.check(n.Value)
		if err != nil {
			return 0, err
		}
		if u == unknownUnit {
			return 0, c.errAtStart(n.Value, "let holds a number, a duration, true/false or a string; this value is none of them")
		}
		if !usesName(n.Expr, n.Name) {
			// `let x = p99 < 1ns; errors == 0` would judge errors alone.
			return 0, c.errAtStart(n.Value, "let %s is never used: its value would not be judged; write one rule per entry", n.Name)
		}
		c.letUnits[n.Name] = u
		return c.check(n.Expr)
	case *ast.SequenceNode:
		// Only the last statement of a sequence would be judged: `p99 <
		// 1ns; errors == 0` would pass on errors alone.
		parts := make([]string, len(n.Nodes))
		for i, x := range n.Nodes {
			parts[i] = "`" + atomText(x, c.rw) + "`"
		}
		at := n.Nodes[min(1, len(n.Nodes)-1)]
		return 0, c.errAtStart(at, "one rule per entry: split this into %d rules, %s (with `;` only the last part would be judged)",
			len(n.Nodes), strings.Join(parts, " and "))
	case *ast.ChainNode:
		return c.check(n.Node)
	case *ast.ArrayNode:
		for _, x := range n.Nodes {
			u, err := c.check(x)
			if err != nil {
				return 0, err
			}
			if u == unknownUnit || u == boolUnit {
				return 0, c.errAtStart(x, "a list holds numbers, durations or strings, e.g. errors in [0, 1]")
			}
		}
		return unknownUnit, nil
	case *ast.NilNode:
		return unknownUnit, nil
	case *ast.SliceNode:
		return 0, c.errAt(n, "slices are not part of the rule language")
	case *ast.MapNode, *ast.PairNode:
		return 0, c.errAtStart(n, "map literals are not part of the rule language; metrics such as errors_by[\"503\"] are read by key")
	case *ast.PredicateNode, *ast.PointerNode:
		return 0, c.errAtStart(n, "predicates are not part of the rule language")
	}
	return 0, c.errAtStart(n, "%s is not part of the rule language", atomText(n, c.rw))
}

// checkAll checks nodes whose units do not matter.
func (c *checkState) checkAll(nodes ...ast.Node) (unit, *CompileError) {
	for _, x := range nodes {
		if x == nil {
			continue
		}
		if _, err := c.check(x); err != nil {
			return 0, err
		}
	}
	return unknownUnit, nil
}

// checkRef checks an identifier or member chain against the metrics.
func (c *checkState) checkRef(n ast.Node) (unit, *CompileError) {
	p, ok := path(n)
	if ok && c.lets[p[0]] {
		if len(p) > 1 {
			return 0, c.errAt(n, "%s is a value, it has no members", p[0])
		}
		u, known := c.letUnits[p[0]]
		if !known {
			return 0, c.errAt(n, "%s is used before its let", p[0])
		}
		return u, nil
	}
	if !ok {
		m := n.(*ast.MemberNode)          // identifiers always have a path
		if m.Method && c.isView(m.Node) { // median(p99).Hours()
			if _, err := c.check(m.Node); err != nil {
				return 0, err
			}
			if p, ok := path(viewArg(m.Node)); ok {
				r, _, _ := resolve(p)
				return 0, c.noMembers(m, ref{view: viewOf(calleeName(m.Node)), group: r.group, name: r.name})
			}
		}
		bp, bok := path(m.Node)
		if !bok || c.lets[bp[0]] {
			return 0, c.errAt(m, "only errors_by, closes_by and server are read by key, e.g. errors_by[\"503\"]")
		}
		r, res, msg := resolve(bp)
		switch {
		case res == notFound:
			return 0, c.errAt(m.Node, "%s", msg)
		case res == isGroup && isMapGroup(r.group) && !m.Method:
			u, err := c.check(m.Property)
			if err != nil {
				return 0, err
			}
			if u != stringUnit {
				return 0, c.errAtStart(m.Property, "%s is read by a string key, e.g. %s", r.group, groupExample[r.group])
			}
			return numberUnit, nil
		case res == isMetric:
			return 0, c.noMembers(m, r)
		}
		// A group read with a computed name or a method call.
		group, ex := r.group, groupExample[r.group]
		if group == "" { // baseline alone
			group, ex = r.view, groupExample[r.view]
		} else if r.view == "baseline" {
			group, ex = "baseline."+group, "baseline."+ex
		}
		return 0, c.errAt(m, "%s needs a constant name, e.g. %s", group, ex)
	}
	r, res, msg, at := resolveAt(p)
	switch res {
	case notFound:
		return 0, c.errAt(segment(n, at, len(p)), "%s", msg)
	case isGroup:
		if r.view == viewMedian || r.view == viewWorst {
			return 0, c.errAt(n, "unknown metric %q", strings.Join(p, "."))
		}
		ex := groupExample[r.group]
		if r.group == "" {
			ex = groupExample["baseline"]
		}
		return 0, c.errAt(n, "%s is a group, not a metric: write e.g. %s", strings.Join(p, "."), ex)
	}
	if r.view == "baseline" && r.group == "baseline" {
		return 0, c.errAt(n, "baseline.baseline is not a metric")
	}
	return r.def().unit, nil
}

// noMembers explains that metric r (read by m.Node) is a value, with no
// members or methods: p99.Hours(), p99[0].
func (c *checkState) noMembers(m *ast.MemberNode, r ref) *CompileError {
	name := ""
	if s, ok := m.Property.(*ast.StringNode); ok {
		name = s.Value
	}
	if !m.Method {
		return c.errAt(m, "%s is a metric, it has no members", r)
	}
	if r.def().unit != durationUnit {
		return c.errAt(m, "%s is a metric, it has no method %s(); compare it as it is, e.g. %s > 0", r, name, r)
	}
	// A duration in some unit is a division by that unit: p99 / 1ms.
	unit := map[string]string{"Hours": "1h", "Minutes": "1m", "Seconds": "1s", "Milliseconds": "1ms", "Microseconds": "1us", "Nanoseconds": "1ns"}[name]
	if unit == "" {
		return c.errAt(m, "%s is a metric, it has no method %s(); compare it with a duration (%s < 20ms), or divide it by one for a number (%s / 1ms)", r, name, r, r)
	}
	return c.errAt(m, "%s is a metric, it has no method %s(); for the number of %s write %s / %s", r, name, strings.ToLower(name), r, unit)
}

// isView reports whether n is median(x) or worst(x) with one argument.
func (c *checkState) isView(n ast.Node) bool {
	return viewOf(calleeName(n)) != "" && viewArg(n) != nil
}

// calleeName returns the name of the function n calls, if n is a call.
func calleeName(n ast.Node) string {
	switch x := n.(type) {
	case *ast.BuiltinNode:
		return x.Name
	case *ast.CallNode:
		if id, ok := x.Callee.(*ast.IdentifierNode); ok {
			return id.Value
		}
	}
	return ""
}

// viewArg returns the one argument of call n, or nil.
func viewArg(n ast.Node) ast.Node {
	var args []ast.Node
	switch x := n.(type) {
	case *ast.BuiltinNode:
		args = x.Arguments
	case *ast.CallNode:
		args = x.Arguments
	}
	if len(args) != 1 {
		return nil
	}
	return args[0]
}

func (c *checkState) isDurationLiteral(n ast.Node) bool {
	i, ok := n.(*ast.IntegerNode)
	if ok {
		_, ok = c.rw.durs[i.Location().From]
	}
	return ok
}

// describe names a node for messages: the metric it reads, or its text.
func (c *checkState) describe(n ast.Node) string {
	switch x := n.(type) {
	case *ast.BuiltinNode:
		if v := viewOf(x.Name); v != "" && len(x.Arguments) == 1 {
			return x.Name + "(" + c.describe(x.Arguments[0]) + ")"
		}
	case *ast.CallNode:
		if id, ok := x.Callee.(*ast.IdentifierNode); ok && viewOf(id.Value) != "" && len(x.Arguments) == 1 {
			return id.Value + "(" + c.describe(x.Arguments[0]) + ")"
		}
	case *ast.IntegerNode:
		if d, ok := c.rw.durs[x.Location().From]; ok {
			return d.String()
		}
		return strconv.Itoa(x.Value)
	case *ast.FloatNode:
		return strconv.FormatFloat(x.Value, 'f', -1, 64)
	}
	if p, ok := path(n); ok {
		if r, res, _ := resolve(p); res == isMetric {
			return r.String()
		}
		return strings.Join(p, ".")
	}
	return "this expression"
}

// mixError explains a duration used with a bare number.
func (c *checkState) mixError(op ast.Node, dur, num ast.Node) *CompileError {
	name := c.describe(dur)
	switch num.(type) {
	case *ast.IntegerNode, *ast.FloatNode:
		return c.errAt(num, "%s is a duration: write the unit, e.g. %sms", name, c.describe(num))
	}
	return c.errAt(op, "%s is a duration and %s is a number: compare durations with durations (e.g. 20ms), or make a number with %s / 1ms",
		name, c.describe(num), name)
}

func (c *checkState) checkBinary(n *ast.BinaryNode) (unit, *CompileError) {
	l, err := c.check(n.Left)
	if err != nil {
		return 0, err
	}
	r, err := c.check(n.Right)
	if err != nil {
		return 0, err
	}
	mixed := func() *CompileError {
		switch {
		case l == durationUnit && r == numberUnit:
			return c.mixError(n, n.Left, n.Right)
		case l == numberUnit && r == durationUnit:
			return c.mixError(n, n.Right, n.Left)
		}
		return nil
	}
	op := n.Operator
	if _, ok := arithOps[op]; ok {
		if err := c.checkArith(n, l, r); err != nil {
			return 0, err
		}
	}
	if op == "==" && c.rw.approx[n.Location().From] {
		if err := mixed(); err != nil {
			return 0, err
		}
		for i, u := range []unit{l, r} {
			if u == boolUnit || u == stringUnit {
				hint := ""
				if un, ok := []ast.Node{n.Left, n.Right}[i].(*ast.UnaryNode); ok && (un.Operator == "not" || un.Operator == "!") {
					hint = "; not binds tighter than ≈ (as it does than ==): write not (a ≈ b)"
				}
				return 0, c.errAt(n, "≈ compares numbers or durations, not a %s%s", u, hint)
			}
		}
		return boolUnit, nil
	}
	switch op {
	case "..":
		return 0, c.checkRange(n)
	case "matches":
		if _, ok := n.Right.(*ast.StringNode); !ok {
			return 0, c.errAtStart(n.Right, "matches takes a string literal pattern, e.g. \"^5\"")
		}
		return boolUnit, nil
	case "and", "&&", "or", "||":
		for i, u := range []unit{l, r} {
			if u != boolUnit {
				return 0, c.errAtStart([]ast.Node{n.Left, n.Right}[i], "%s joins conditions (true or false); this is %s", op, unitPhrase(u))
			}
		}
		return boolUnit, nil
	case "in", "contains", "startsWith", "endsWith":
		return boolUnit, nil
	case "==", "!=", "<", ">", "<=", ">=":
		if err := mixed(); err != nil {
			return 0, err
		}
		return boolUnit, nil
	case "+", "-":
		if err := mixed(); err != nil {
			return 0, err
		}
		if l == r {
			return l, nil
		}
	case "*":
		switch {
		case l == durationUnit && r == durationUnit:
			return 0, c.errAt(n, "cannot multiply two durations (%s * %s)", c.describe(n.Left), c.describe(n.Right))
		case l == durationUnit || r == durationUnit:
			return durationUnit, nil
		case l == numberUnit && r == numberUnit:
			return numberUnit, nil
		}
	case "/":
		switch {
		case l == durationUnit && r == durationUnit:
			return numberUnit, nil
		case l == durationUnit:
			return durationUnit, nil
		case r == durationUnit:
			return 0, c.errAt(n, "cannot divide a number by a duration")
		case l == numberUnit && r == numberUnit:
			return numberUnit, nil
		}
	case "%", "**", "^":
		if l == durationUnit || r == durationUnit {
			return 0, c.errAt(n, "%s is not defined for durations", op)
		}
		if l == numberUnit && r == numberUnit {
			return numberUnit, nil
		}
	case "??":
		if l != unknownUnit {
			return l, nil
		}
		return r, nil
	}
	return unknownUnit, nil
}

// unitPhrase names a unit for messages: "a number", "a value of unknown
// kind".
func unitPhrase(u unit) string {
	if u == unknownUnit {
		return "a value of unknown kind"
	}
	return "a " + u.String()
}

// maxRange is the most elements a constant range (1..5) may have: ranges
// are built as lists when the rule runs.
const maxRange = 1000

// checkRange allows a range only between integer literals, of at most
// maxRange elements, so that a rule cannot allocate without bound.
func (c *checkState) checkRange(n *ast.BinaryNode) *CompileError {
	lo, okL := n.Left.(*ast.IntegerNode)
	hi, okR := n.Right.(*ast.IntegerNode)
	if !okL || !okR || c.isDurationLiteral(n.Left) || c.isDurationLiteral(n.Right) {
		return c.errAt(n, "a range is between two whole numbers written out, e.g. errors in 0..5; for a computed bound compare: a <= x and x <= b")
	}
	if int64(hi.Value)-int64(lo.Value) >= maxRange {
		return c.errAt(n, "a range holds at most %d numbers; compare instead: %d <= x and x <= %d", maxRange, lo.Value, hi.Value)
	}
	return nil
}

// checkArith checks the operands of an arithmetic operator: both numbers
// or durations (or two strings joined by +), and no constant zero
// divisor. It records the operation for run-time messages.
func (c *checkState) checkArith(n *ast.BinaryNode, l, r unit) *CompileError {
	if n.Operator == "+" && l == stringUnit && r == stringUnit {
		return nil
	}
	for i, u := range []unit{l, r} {
		if u != numberUnit && u != durationUnit {
			return c.errAtStart([]ast.Node{n.Left, n.Right}[i], "%s computes with numbers or durations; this is %s", n.Operator, unitPhrase(u))
		}
	}
	if n.Operator == "/" || n.Operator == "%" {
		if isConstZero(n.Right) {
			return c.errAtStart(n.Right, "division by zero: the divisor is always 0")
		}
	}
	c.noteOp(n, n.Right)
	return nil
}

// isConstZero reports whether n is a literal zero: 0, 0.0, 0s, -0, (0).
func isConstZero(n ast.Node) bool {
	switch x := n.(type) {
	case *ast.IntegerNode:
		return x.Value == 0
	case *ast.FloatNode:
		return x.Value == 0
	case *ast.UnaryNode:
		return (x.Operator == "-" || x.Operator == "+") && isConstZero(x.Node)
	}
	return false
}

func (c *checkState) checkCall(n ast.Node, name string, args []ast.Node) (unit, *CompileError) {
	if _, metric := topLevel[name]; metric && !c.lets[name] {
		return 0, c.errAt(n, "%s is a metric, not a function", name)
	}
	if _, ok := allowedCalls[name]; !ok {
		return 0, c.unknownCall(n, name)
	}
	switch name {
	case "median", "worst":
		return c.checkView(n, name, args)
	case "approx":
		if len(args) != 2 && len(args) != 3 {
			return 0, c.errAt(n, "approx takes 2 or 3 arguments: approx(a, b) or approx(a, b, tolerance)")
		}
		var us []unit
		for _, a := range args {
			u, err := c.check(a)
			if err != nil {
				return 0, err
			}
			us = append(us, u)
		}
		switch {
		case us[0] == durationUnit && us[1] == numberUnit:
			return 0, c.mixError(n, args[0], args[1])
		case us[0] == numberUnit && us[1] == durationUnit:
			return 0, c.mixError(n, args[1], args[0])
		}
		for i := range 2 {
			if us[i] != numberUnit && us[i] != durationUnit {
				return 0, c.errAtStart(args[i], "approx compares numbers or durations; this is %s", unitPhrase(us[i]))
			}
		}
		if len(args) == 3 && us[2] != numberUnit {
			return 0, c.errAt(args[2], "the tolerance of approx is a fraction, e.g. 0.1 for 10 %%")
		}
		if len(args) == 3 {
			if f, ok := constNumber(args[2]); ok && f < 0 {
				return 0, c.errAt(args[2], "the tolerance of approx must be ≥ 0")
			}
		}
		return boolUnit, nil
	case "abs", "ceil", "floor", "round":
		c.ops[n.Location().From] = opText{whole: atomText(n, c.rw)}
		if len(args) != 1 {
			return 0, c.errAt(n, "%s takes one number: %s", name, allowedCalls[name].usage)
		}
		u, err := c.check(args[0])
		switch {
		case err != nil:
			return 0, err
		case u == durationUnit && name == "abs":
			return 0, c.errAt(n, "abs is not defined for durations; compare both ways, e.g. p99 - p50 < 5ms and p50 - p99 < 5ms")
		case u == durationUnit:
			return 0, c.errAt(n, "%s is not defined for durations; make a number first, e.g. %s(p99 / 1ms)", name, name)
		case u != numberUnit:
			return 0, c.errAtStart(args[0], "%s takes a number; this is %s", name, unitPhrase(u))
		}
		return numberUnit, nil
	case "len":
		if len(args) != 1 {
			return 0, c.errAt(n, "len takes one argument, e.g. len(errors_by)")
		}
		if p, ok := path(args[0]); ok && !c.lets[p[0]] {
			if r, res, _ := resolve(p); res == isGroup && isMapGroup(r.group) {
				return numberUnit, nil // len(errors_by): how many codes occurred
			}
		}
		u, err := c.check(args[0])
		if err != nil {
			return 0, err
		}
		if _, list := args[0].(*ast.ArrayNode); u != stringUnit && !list {
			return 0, c.errAtStart(args[0], "len counts the codes of errors_by, closes_by or server, or a string's characters; this is %s", unitPhrase(u))
		}
		return numberUnit, nil
	}
	return 0, c.unknownCall(n, name)
}

// unknownCall explains a call of a function rules do not offer.
func (c *checkState) unknownCall(n ast.Node, name string) *CompileError {
	if _, ok := builtin.Index[name]; !ok {
		msg := "unknown function " + name
		if s := suggest(name, strings.Split(callNames, ", ")); len(s) > 0 {
			msg += "; did you mean " + orList(s) + "?"
		}
		return c.errAt(n, "%s (rules can call %s)", msg, callNames)
	}
	why := ""
	switch name {
	case "now", "date", "timezone", "duration":
		why = ": a rule reads only the phase's metrics and gives the same verdict every time"
	}
	return c.errAt(n, "%s() is not available in rules%s; rules can call %s", name, why, callNames)
}

func constNumber(n ast.Node) (float64, bool) {
	switch x := n.(type) {
	case *ast.IntegerNode:
		return float64(x.Value), true
	case *ast.FloatNode:
		return x.Value, true
	case *ast.UnaryNode:
		if f, ok := constNumber(x.Node); ok && x.Operator == "-" {
			return -f, true
		}
	}
	return 0, false
}

// checkView checks median(x) and worst(x): x must be one metric of this
// run, and worst needs a metric with a direction.
func (c *checkState) checkView(n ast.Node, name string, args []ast.Node) (unit, *CompileError) {
	if len(args) != 1 {
		return 0, c.errAt(n, "%s takes one metric, e.g. %s(p99)", name, name)
	}
	p, ok := path(args[0])
	if !ok || c.lets[p[0]] {
		return 0, c.errAtStart(args[0], "%s takes one metric, e.g. %s(p99), not an expression", name, name)
	}
	r, res, msg := resolve(p)
	switch {
	case res == notFound:
		return 0, c.errAtStart(args[0], "%s", msg)
	case r.view != "":
		return 0, c.errAtStart(args[0], "%s takes a metric of this run, not %s", name, strings.Join(p, "."))
	case res == isGroup:
		return 0, c.errAtStart(args[0], "%s is a group, not a metric: write e.g. %s(%s)", strings.Join(p, "."), name, groupExample[r.group])
	case r.name == "":
		return 0, c.errAtStart(args[0], "%s needs a constant name", r.group)
	}
	def := r.def()
	if name == "worst" && def.dir == neutral {
		return 0, c.errAt(n, "%s has no better or worse direction, so worst(%s) means nothing; use median(%s) or a per-repeat rule", r, r, r)
	}
	return def.unit, nil
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
		if res != isMetric {
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

// calleeVisitor collects the callee nodes of calls.
type calleeVisitor map[ast.Node]bool

// Visit implements ast.Visitor.
func (c calleeVisitor) Visit(node *ast.Node) {
	if call, ok := (*node).(*ast.CallNode); ok {
		c[call.Callee] = true
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

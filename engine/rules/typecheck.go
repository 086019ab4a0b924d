package rules

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/builtin"
)

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
	if head == stepGroup {
		return resolveStep(r, p, off)
	}
	if !slices.Contains(groups, head) || head == "baseline" {
		known := append(slices.Clone(topNames), groups...)
		if hint := percentileHint(head); hint != "" {
			return r, notFound, fmt.Sprintf("unknown metric %q: %s", head, hint), off
		}
		return r, notFound, unknownMsg(head, known, "known metrics: "+strings.Join(topNames, " ")+
			"; groups: service.* failed.* corrected.* errors_by[code] closes_by[code] server.* client.* target.* step.NAME.* baseline.*"), off
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

// resolveStep resolves a path into the flow steps, p = [step NAME rest…]
// (off segments of a view before it): step alone and step.NAME are
// groups; step.NAME.METRIC reads one of the per-step metrics
// (metricDef.step), step.NAME.service.p99 and step.NAME.failed.p99 one
// of the step's latency groups. Which steps exist is known only to the
// plan (Rule.CheckSteps).
func resolveStep(r ref, p []string, off int) (ref, resolution, string, int) {
	if len(p) == 1 {
		r.group = stepGroup
		return r, isGroup, "", 0
	}
	r.step = p[1]
	if len(p) == 2 {
		return r, isGroup, "", 0
	}
	head, prefix := p[2], stepPrefix(r.step)+"."
	def, known := topLevel[head]
	if _, ok := extraPercentile(head); ok {
		def, known = metricDef{step: true}, true
	}
	switch {
	case known && !def.step:
		return r, notFound, fmt.Sprintf("%s is not measured per step: a step has no %s of its own (%s)", prefix+head, head, stepList()), off + 2
	case known && len(p) > 3:
		return r, notFound, fmt.Sprintf("%s is a metric, it has no member %q", prefix+head, p[3]), off + 3
	case known:
		r.name = head
		return r, isMetric, "", 0
	case slices.Contains(groups, head) && !stepHasGroup(head):
		return r, notFound, fmt.Sprintf("%s.* is not measured per step (%s)", prefix+head, stepList()), off + 2
	case slices.Contains(groups, head):
		r.group = head
		if len(p) == 3 {
			return r, isGroup, "", 0
		}
		r.name = p[3]
		if len(p) > 4 {
			return r, notFound, fmt.Sprintf("%s has no member %q", r, p[4]), off + 4
		}
		_, extra := extraPercentile(r.name)
		if d, ok := members[head][r.name]; !(ok && d.step) && !extra {
			if hint := percentileHint(r.name); hint != "" {
				return r, notFound, fmt.Sprintf("unknown metric %q: %s", prefix+head+"."+r.name, hint), off + 3
			}
			return r, notFound, unknownMsg(prefix+head+"."+r.name, prefixed(prefix+head, memberNames[head]),
				head+".* has "+strings.Join(memberNames[head], " ")), off + 3
		}
		return r, isMetric, "", 0
	}
	if hint := percentileHint(head); hint != "" {
		return r, notFound, fmt.Sprintf("unknown metric %q: %s", prefix+head, hint), off + 2
	}
	msg := fmt.Sprintf("unknown metric %q", prefix+head)
	if s := suggest(head, stepNames); len(s) > 0 {
		msg += "; did you mean " + orList(prefixed(strings.TrimSuffix(prefix, "."), s)) + "?"
	}
	return r, notFound, msg + " (" + stepList() + ")", off + 2
}

// stepHasGroup reports whether a flow step has latency group g of its
// own (service, failed; not corrected).
func stepHasGroup(g string) bool {
	for _, d := range members[g] {
		if d.step {
			return true
		}
	}
	return false
}

// stepList lists the metrics read per flow step, for messages: the
// top-level ones, then the groups as service.*.
func stepList() string {
	var out []string
	for _, n := range stepNames {
		if g, _, ok := strings.Cut(n, "."); ok {
			n = g + ".*"
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return "step metrics: " + strings.Join(out, " ")
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
	"step": "step.login.p99",
}

// exampleOf shows how a metric of group reference r is read: service.p99,
// step.login.p99, step.login.service.p99.
func exampleOf(r ref) string {
	switch {
	case r.step != "" && r.group == "":
		return stepPrefix(r.step) + ".p99"
	case r.step != "":
		return stepPrefix(r.step) + "." + groupExample[r.group]
	case r.group == "":
		return groupExample["baseline"]
	}
	return groupExample[r.group]
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
		if r.step != "" {
			group, ex = r.String(), exampleOf(r)
		} else if group == "" { // baseline alone
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
		what := "a group"
		if r.step != "" && r.group == "" {
			what = "a flow step"
		}
		return 0, c.errAt(n, "%s is %s, not a metric: write e.g. %s", strings.Join(p, "."), what, exampleOf(r))
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
		return 0, c.errAtStart(args[0], "%s is a group, not a metric: write e.g. %s(%s)", strings.Join(p, "."), name, exampleOf(r))
	case r.name == "":
		return 0, c.errAtStart(args[0], "%s needs a constant name", r.group)
	}
	def := r.def()
	if name == "worst" && def.dir == neutral {
		return 0, c.errAt(n, "%s has no better or worse direction, so worst(%s) means nothing; use median(%s) or a per-repeat rule", r, r, r)
	}
	return def.unit, nil
}

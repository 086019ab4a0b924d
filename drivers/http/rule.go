package http

import (
	"fmt"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/vm"
)

// ruleEnv is what a success rule sees.
type ruleEnv struct {
	// Status is the response status code.
	Status int `expr:"status"`
	// Headers maps each canonical header name to its first value; filled
	// only when the rule mentions `headers`.
	Headers map[string]string `expr:"headers"`
	// Body is the response body, at most MaxRuleBody bytes; filled only
	// when the rule mentions `body`.
	Body string `expr:"body"`
}

// rule is a compiled success rule and what it reads, so the driver keeps
// bodies and builds header maps only when the rule needs them.
type rule struct {
	src         string
	prog        *vm.Program
	needBody    bool
	needHeaders bool
}

// compileRule compiles src against ruleEnv; it must yield a bool.
func compileRule(src string) (*rule, error) {
	var refs identifiers
	prog, err := expr.Compile(src, expr.Env(ruleEnv{}), expr.AsBool(), expr.Patch(&refs))
	if err != nil {
		return nil, fmt.Errorf("success rule `%s`: %w", src, err)
	}
	return &rule{src: src, prog: prog, needBody: refs["body"], needHeaders: refs["headers"]}, nil
}

// eval runs the rule on m (reused: it keeps its stack) with env, passed
// by pointer so that it is not boxed anew for every response. A runtime
// error counts as "not successful".
func (r *rule) eval(m *vm.VM, env *ruleEnv) (bool, error) {
	out, err := m.Run(r.prog, env)
	if err != nil {
		return false, fmt.Errorf("success rule `%s`: %w", r.src, err)
	}
	ok, _ := out.(bool)
	return ok, nil
}

// identifiers collects the variable names a rule mentions.
type identifiers map[string]bool

// Visit implements ast.Visitor.
func (ids *identifiers) Visit(node *ast.Node) {
	if n, ok := (*node).(*ast.IdentifierNode); ok {
		if *ids == nil {
			*ids = identifiers{}
		}
		(*ids)[n.Value] = true
	}
}

package rules

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"reflect"
	"time"

	"github.com/expr-lang/expr"
)

// undefinedError is a value a rule computed that has no defined number: a
// division by zero at run time, an integer or duration overflow, a power
// that is not finite, an approx tolerance below 0. The atom that computed
// it is neither true nor false, so the rule is judged in three-valued
// logic (a rule whose verdict depends on it is INCONCLUSIVE), never
// passed on a wrapped integer, an infinity or NaN.
type undefinedError struct {
	kind string // "division by zero", "integer overflow", …
	op   string // the operator, "" for approx
}

func (e *undefinedError) Error() string { return e.kind }

// undefined is an undefinedError of kind for operator op.
func undefined(kind, op string) error { return &undefinedError{kind: kind, op: op} }

// arithOps are the operators rules evaluate with checked arithmetic, each
// with the name of its implementation (a name no rule can write).
var arithOps = map[string]string{
	"+": "op+", "-": "op-", "*": "op*", "/": "op/", "%": "op%", "**": "op**", "^": "op^",
}

// arithOpts are arithOptions, built once.
var arithOpts = arithOptions()

// arithOptions returns the expr options that route the arithmetic
// operators through checkedArith, so that no operation wraps silently or
// yields a non-finite value. Every operand combination a rule can write
// has an overload with the exact result type (int64 for two integers,
// float64 with a float, time.Duration for durations); a last (any, any)
// overload covers operands whose type expr cannot tell (a ternary of an
// int and a float) and string concatenation.
func arithOptions() []expr.Option {
	durT := reflect.TypeFor[time.Duration]()
	intT, i64T, fT, anyT := reflect.TypeFor[int](), reflect.TypeFor[int64](), reflect.TypeFor[float64](), reflect.TypeFor[any]()
	nums := []reflect.Type{intT, i64T, fT}
	fn := func(a, b, out reflect.Type) any {
		return reflect.New(reflect.FuncOf([]reflect.Type{a, b}, []reflect.Type{out}, false)).Interface()
	}
	numeric := func(a, b reflect.Type, op string) reflect.Type {
		switch {
		case op == "/" || op == "**" || op == "^":
			return fT
		case a == fT || b == fT:
			return fT
		}
		return i64T
	}
	var opts []expr.Option
	for op, name := range arithOps {
		var types []any
		for _, a := range nums {
			for _, b := range nums {
				types = append(types, fn(a, b, numeric(a, b, op)))
			}
		}
		switch op {
		case "+", "-":
			types = append(types, fn(durT, durT, durT))
		case "*":
			for _, n := range nums {
				types = append(types, fn(durT, n, durT), fn(n, durT, durT))
			}
		case "/":
			for _, n := range nums {
				types = append(types, fn(durT, n, durT))
			}
			types = append(types, fn(durT, durT, fT))
		}
		types = append(types, fn(anyT, anyT, anyT))
		opts = append(opts, expr.Function(name, arithFunc(op), types...), expr.Operator(op, name))
	}
	return opts
}

// arithFunc returns the implementation of op for expr.
func arithFunc(op string) func(args ...any) (any, error) {
	return func(args ...any) (any, error) {
		if len(args) != 2 {
			return nil, fmt.Errorf("%s takes 2 operands", op)
		}
		return checkedArith(op, args[0], args[1])
	}
}

// number is an operand of checked arithmetic.
type number struct {
	i     int64 // the value of an integer or a duration
	f     float64
	isInt bool // an int or int64: exact integer arithmetic
	isDur bool // a time.Duration (also isInt)
}

func asNumber(v any) (number, bool) {
	switch x := v.(type) {
	case int:
		return number{i: int64(x), f: float64(x), isInt: true}, true
	case int64:
		return number{i: x, f: float64(x), isInt: true}, true
	case time.Duration:
		return number{i: int64(x), f: float64(x), isInt: true, isDur: true}, true
	case float64:
		return number{f: x}, true
	}
	return number{}, false
}

// checkedArith computes a op b with the rules' semantics:
//
//   - integers (counters, literals) add, subtract, multiply and take
//     remainders exactly in int64; an overflow is undefined, never a
//     wrapped value;
//   - a float operand makes the result a float64; a result that is not
//     finite (±Inf, NaN) is undefined;
//   - `/` of two numbers is a float64 ratio (as expr defines it); `/` or
//     `%` by zero is undefined;
//   - durations add and subtract with durations, scale by numbers
//     (rounded to the nanosecond) and divide into a float64 ratio; an
//     out-of-range duration is undefined;
//   - `**` and `^` are float64 powers.
//
// Undefined results are *undefinedError. Operands a rule cannot combine
// (the front end rejects them at compile time) are a plain error.
func checkedArith(op string, a, b any) (any, error) {
	if sa, ok := a.(string); ok && op == "+" {
		if sb, ok := b.(string); ok {
			return sa + sb, nil
		}
	}
	x, okA := asNumber(a)
	y, okB := asNumber(b)
	if !okA || !okB {
		return nil, fmt.Errorf("cannot compute %T %s %T", a, op, b)
	}
	if (op == "/" || op == "%") && y.f == 0 {
		return nil, undefined("division by zero", op)
	}
	switch {
	case x.isDur && y.isDur:
		switch op {
		case "+", "-":
			s, ok := addInt(x.i, y.i, op == "-")
			if !ok {
				return nil, undefined("duration overflow", op)
			}
			return time.Duration(s), nil
		case "/":
			return x.f / y.f, nil
		}
		return nil, fmt.Errorf("cannot compute duration %s duration", op)
	case x.isDur || y.isDur:
		d, n := x, y
		if y.isDur {
			d, n = y, x
		}
		switch {
		case op == "*":
			return scaleChecked(d.i, n.f)
		case op == "/" && x.isDur:
			return scaleChecked(d.i, 1/n.f)
		}
		return nil, fmt.Errorf("cannot compute %T %s %T", a, op, b)
	}
	switch op {
	case "/":
		return finite(x.f/y.f, op)
	case "**", "^":
		return finite(math.Pow(x.f, y.f), op)
	}
	if x.isInt && y.isInt {
		var r int64
		ok := true
		switch op {
		case "+", "-":
			r, ok = addInt(x.i, y.i, op == "-")
		case "*":
			r, ok = mulInt(x.i, y.i)
		case "%":
			r = x.i % y.i // Go defines MinInt64 % -1 as 0
		}
		if !ok {
			return nil, undefined("integer overflow", op)
		}
		return r, nil
	}
	switch op {
	case "+":
		return finite(x.f+y.f, op)
	case "-":
		return finite(x.f-y.f, op)
	case "*":
		return finite(x.f*y.f, op)
	case "%":
		return finite(math.Mod(x.f, y.f), op)
	}
	return nil, fmt.Errorf("unknown operator %s", op)
}

func finite(f float64, op string) (any, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, undefined("not a finite number", op)
	}
	return f, nil
}

// addInt returns a + b (a − b when sub), and false on int64 overflow.
func addInt(a, b int64, sub bool) (int64, bool) {
	if sub {
		s := a - b
		// Overflow iff the operands' signs differ and the result's sign is not a's.
		return s, (a >= 0) == (b >= 0) || (s >= 0) == (a >= 0)
	}
	s := a + b
	return s, (a >= 0) != (b >= 0) || (s >= 0) == (a >= 0)
}

// mulInt returns a · b, and false on int64 overflow.
func mulInt(a, b int64) (int64, bool) {
	neg := (a < 0) != (b < 0)
	ua, ub := uint64(a), uint64(b)
	if a < 0 {
		ua = -ua
	}
	if b < 0 {
		ub = -ub
	}
	hi, lo := bits.Mul64(ua, ub)
	switch {
	case hi != 0:
		return 0, false
	case neg && lo <= 1<<63:
		return -int64(lo), true
	case !neg && lo < 1<<63:
		return int64(lo), true
	}
	return 0, false
}

// scaleChecked returns the duration d·f rounded to the nanosecond, or an
// undefined error when it is not finite or out of time.Duration's range.
func scaleChecked(d int64, f float64) (any, error) {
	v := math.Round(float64(d) * f)
	if math.IsNaN(v) || v >= math.MaxInt64 || v < math.MinInt64 {
		return nil, undefined("duration overflow", "*")
	}
	return time.Duration(v), nil
}

// absFunc implements abs(x) for numbers: |x|, undefined for the one
// int64 without a positive counterpart.
func absFunc(args ...any) (any, error) {
	if len(args) != 1 {
		return nil, errors.New("abs takes one argument")
	}
	switch x := args[0].(type) {
	case int:
		return absFunc(int64(x))
	case int64:
		if x == math.MinInt64 {
			return nil, undefined("integer overflow", "abs")
		}
		if x < 0 {
			return -x, nil
		}
		return x, nil
	case float64:
		return math.Abs(x), nil
	}
	return nil, fmt.Errorf("abs takes a number, got %T", args[0])
}

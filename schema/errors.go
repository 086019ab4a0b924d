package schema

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
)

// Error is one problem in a scenario file, located by position and key path.
type Error struct {
	// File is the name the scenario was loaded under.
	File string
	// Line and Col are 1-based; 0 means unknown (Line 0: the whole file).
	Line, Col int
	// Path is the key path of the offending value, e.g.
	// `phases[0].open.rate`; empty for problems of the file as a whole.
	Path string
	// Msg says what was expected and what was found.
	Msg string
}

// Error renders the problem as `file:line:col: path: message`, leaving out
// the parts that are unknown or empty.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		if e.File != "" {
			b.WriteByte(':')
		}
		b.WriteString(strconv.Itoa(e.Line))
		if e.Col > 0 {
			b.WriteByte(':')
			b.WriteString(strconv.Itoa(e.Col))
		}
	}
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Errors is every problem found in one scenario file, in file order.
// Load and Parse return it (as an error) whenever the file is invalid; it
// is never empty.
type Errors struct {
	List []*Error
}

// Error renders one problem per line.
func (e *Errors) Error() string {
	lines := make([]string, len(e.List))
	for i, err := range e.List {
		lines[i] = err.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns the problems, so that errors.As finds each *Error.
func (e *Errors) Unwrap() []error {
	errs := make([]error, len(e.List))
	for i, err := range e.List {
		errs[i] = err
	}
	return errs
}

// sortErrors orders problems by position; problems of the whole file come first.
func sortErrors(list []*Error) {
	slices.SortStableFunc(list, func(a, b *Error) int {
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Col, b.Col))
	})
}

// quote renders a value found in the file for a message, shortened so that
// a long template or a binary blob does not flood the output.
func quote(s string) string {
	const limit = 60
	if r := []rune(s); len(r) > limit {
		s = string(r[:limit]) + "…"
	}
	return strconv.Quote(s)
}

package http

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/runner-dev/runner/drivers"
	"github.com/runner-dev/runner/drivers/internal/template"
)

// seqHole marks a `{{seq}}` hole; a hole ≥ 0 is a data column index, and
// one ≤ varHole a flow's captured value: vars[varHole − hole].
const (
	seqHole = -1
	varHole = -2
)

// tmpl is text split once, at New, around its holes: lits[0] hole[0]
// lits[1] hole[1] … lits[n], each hole `{{seq}}` or `{{data.NAME}}` (a
// column of the data file). Rendering appends to a caller's buffer and
// never parses or allocates.
type tmpl struct {
	lits   []string
	holes  []int    // seqHole, a column index of the data file, or ≤ varHole
	vars   []string // the names of the captured values the holes ≤ varHole read
	litLen int      // total length of lits
	// esc, when not nil, escapes the value of each hole but {{seq}}'s
	// as it is rendered (a capture's expression: capture.Escapers); nil
	// inserts values as they are.
	esc []func(string) string
}

// parseTemplate splits s around `{{seq}}` and `{{data.NAME}}` (spaces
// inside the braces are allowed); data holds the columns NAME may name
// and is nil without a data file. Any other `{{…}}` action, a column the
// data file lacks, or an unterminated `{{` is an error.
//
// In a flow step, captured names the values earlier steps of the flow
// capture: `{{NAME}}` reads one (rendered from the request's Vars; empty
// when absent, which a failed capture never lets happen).
func parseTemplate(s string, data *template.Data, captured ...string) (tmpl, error) {
	var t tmpl
	rest := s
	for {
		i := strings.Index(rest, "{{")
		if i < 0 {
			t.addLit(rest)
			return t, nil
		}
		j := strings.Index(rest[i+2:], "}}")
		if j < 0 {
			return tmpl{}, fmt.Errorf("unterminated %q in %q", "{{", s)
		}
		raw := rest[i : i+2+j+2]
		action := strings.TrimSpace(rest[i+2 : i+2+j])
		hole := seqHole
		switch name, isData := strings.CutPrefix(action, "data."); {
		case action == "seq":
		case isData && data == nil:
			return tmpl{}, fmt.Errorf("%s in %q: no data file (driver.http.data: FILE)", raw, s)
		case isData:
			hole = data.Column(name)
			if hole < 0 {
				return tmpl{}, fmt.Errorf("%s in %q: the data file %s has no column %q; columns: %s", raw, s, data.File, name, strings.Join(data.Columns, ", "))
			}
		case slices.Contains(captured, action):
			hole = varHole - len(t.vars)
			t.vars = append(t.vars, action)
		default:
			return tmpl{}, fmt.Errorf("unknown template action %q in %q: expected {{seq}} or {{data.NAME}}", raw, s)
		}
		t.addLit(rest[:i])
		t.holes = append(t.holes, hole)
		rest = rest[i+2+j+2:]
	}
}

// literal returns a template without holes.
func literal(s string) tmpl {
	var t tmpl
	t.addLit(s)
	return t
}

func (t *tmpl) addLit(s string) {
	t.lits = append(t.lits, s)
	t.litLen += len(s)
}

// concat appends u to t: the last literal of t joins the first of u.
func (t *tmpl) concat(u tmpl) {
	if len(u.lits) == 0 {
		return
	}
	if len(t.lits) == 0 {
		t.lits = append(t.lits, "")
	}
	last := len(t.lits) - 1
	t.lits[last] += u.lits[0]
	t.lits = append(t.lits, u.lits[1:]...)
	for _, h := range u.holes {
		if h <= varHole {
			name := u.vars[varHole-h]
			h = varHole - len(t.vars)
			t.vars = append(t.vars, name)
		}
		t.holes = append(t.holes, h)
	}
	t.litLen += u.litLen
}

// size is the rendered length of t for seq, the data row row (nil
// without a data file) and the flow's captured values vars.
func (t *tmpl) size(seq uint64, row []string, vars drivers.Vars) int {
	n := t.litLen
	for _, h := range t.holes {
		switch {
		case h == seqHole:
			n += digits(seq)
		case h <= varHole:
			n += len(vars[t.vars[varHole-h]])
		default:
			n += len(row[h])
		}
	}
	return n
}

// render appends t with every hole filled: `{{seq}}` with seq in decimal,
// a column with its value in row, a captured name with its value in vars
// (each escaped by t.esc when it is set).
func (t *tmpl) render(dst []byte, seq uint64, row []string, vars drivers.Vars) []byte {
	for i, l := range t.lits {
		if i > 0 {
			switch h := t.holes[i-1]; {
			case h == seqHole:
				dst = strconv.AppendUint(dst, seq, 10)
			case t.esc != nil && h <= varHole:
				dst = append(dst, t.esc[i-1](vars[t.vars[varHole-h]])...)
			case t.esc != nil:
				dst = append(dst, t.esc[i-1](row[h])...)
			case h <= varHole:
				dst = append(dst, vars[t.vars[varHole-h]]...)
			default:
				dst = append(dst, row[h]...)
			}
		}
		dst = append(dst, l...)
	}
	return dst
}

// each calls f on every literal part of t and on every value of the data
// columns its holes read (every row of data), for validation; the error
// of a value names its row and column.
func (t *tmpl) each(f func(string) error, data *template.Data) error {
	for _, l := range t.lits {
		if err := f(l); err != nil {
			return err
		}
	}
	for _, h := range t.holes {
		if h == seqHole || h <= varHole {
			continue // a captured value is the target's own text
		}
		for i, row := range data.Rows {
			if err := f(row[h]); err != nil {
				return fmt.Errorf("the data file %s, row %d, column %q: %w", data.File, i+1, data.Columns[h], err)
			}
		}
	}
	return nil
}

// digits is the number of decimal digits of v.
func digits(v uint64) int {
	n := 1
	for v >= 10 {
		v /= 10
		n++
	}
	return n
}

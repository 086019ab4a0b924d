package http

import (
	"fmt"
	"strconv"
	"strings"
)

// template is text split once, at New, around its `{{seq}}` holes:
// lits[0] seq lits[1] seq … lits[n]. Rendering appends to a caller's
// buffer and never parses or allocates.
type template struct {
	lits   []string
	litLen int // total length of lits
}

// parseTemplate splits s around `{{seq}}` (spaces inside the braces are
// allowed). Any other `{{…}}` action, or an unterminated `{{`, is an error.
func parseTemplate(s string) (template, error) {
	var t template
	rest := s
	for {
		i := strings.Index(rest, "{{")
		if i < 0 {
			t.addLit(rest)
			return t, nil
		}
		j := strings.Index(rest[i+2:], "}}")
		if j < 0 {
			return template{}, fmt.Errorf("unterminated %q in %q", "{{", s)
		}
		action := rest[i+2 : i+2+j]
		if strings.TrimSpace(action) != "seq" {
			return template{}, fmt.Errorf("unknown template action %q in %q: only {{seq}} is supported", "{{"+action+"}}", s)
		}
		t.addLit(rest[:i])
		rest = rest[i+2+j+2:]
	}
}

// literal returns a template without holes.
func literal(s string) template {
	var t template
	t.addLit(s)
	return t
}

func (t *template) addLit(s string) {
	t.lits = append(t.lits, s)
	t.litLen += len(s)
}

// concat appends u to t: the last literal of t joins the first of u.
func (t *template) concat(u template) {
	if len(u.lits) == 0 {
		return
	}
	if len(t.lits) == 0 {
		t.lits = append(t.lits, "")
	}
	last := len(t.lits) - 1
	t.lits[last] += u.lits[0]
	t.lits = append(t.lits, u.lits[1:]...)
	t.litLen += u.litLen
}

// holes is the number of `{{seq}}` in t.
func (t *template) holes() int {
	if len(t.lits) == 0 {
		return 0
	}
	return len(t.lits) - 1
}

// size is the rendered length of t for seq.
func (t *template) size(seq uint64) int {
	return t.litLen + t.holes()*digits(seq)
}

// render appends t with every hole replaced by seq in decimal.
func (t *template) render(dst []byte, seq uint64) []byte {
	for i, l := range t.lits {
		if i > 0 {
			dst = strconv.AppendUint(dst, seq, 10)
		}
		dst = append(dst, l...)
	}
	return dst
}

// each calls f on every literal part of t, for validation.
func (t *template) each(f func(string) error) error {
	for _, l := range t.lits {
		if err := f(l); err != nil {
			return err
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

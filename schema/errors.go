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

// distance is the optimal string alignment distance between a and b,
// ignoring case: the number of single-character insertions, deletions,
// substitutions and transpositions of adjacent characters that turn one
// into the other.
func distance(a, b string) int {
	s, t := []rune(strings.ToLower(a)), []rune(strings.ToLower(b))
	// d[i][j] is the distance between s[:i] and t[:j].
	d := make([][]int, len(s)+1)
	for i := range d {
		d[i] = make([]int, len(t)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(s); i++ {
		for j := 1; j <= len(t); j++ {
			cost := 1
			if s[i-1] == t[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && s[i-1] == t[j-2] && s[i-2] == t[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(s)][len(t)]
}

// nearest returns the candidate closest to word, if it is within maxDist
// edits; ties go to the earlier candidate.
func nearest(word string, candidates []string, maxDist int) (string, bool) {
	if len(word) > 64 {
		return "", false // no plausible typo, and the distance table would be large
	}
	best, bestDist := "", maxDist+1
	for _, c := range candidates {
		if d := distance(word, c); d < bestDist {
			best, bestDist = c, d
		}
	}
	return best, bestDist <= maxDist
}

// typoDistance is how many edits a misspelling of word may plausibly have.
func typoDistance(word string) int {
	return max(1, len([]rune(word))/3)
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

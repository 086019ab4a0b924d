package rules

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// rewritten is a rule's source after the front end turned its two
// extensions into plain expr: every duration literal (`20ms`) became an
// integer literal of its nanoseconds (`20000000`, which the patcher turns
// into a time.Duration constant by its position) and every `≈` became
// `==` (which the patcher turns into approx). Positions are rune offsets,
// as expr's file.Location counts them.
type rewritten struct {
	src  []rune // the rule as written
	text string // the expr source
	// start[k] and end[k] are the offsets in src of the beginning and the
	// end of the source piece that produced rune k of text: the rune itself
	// for copied text, the whole literal or operator for a replacement.
	start, end []int
	// approx holds the text offsets of the `==` tokens that were `≈`.
	approx map[int]bool
	// durs maps the text offset of each integer literal that was a
	// duration literal to its value.
	durs map[int]time.Duration
}

// durationUnits are the units a duration literal may carry, as
// time.ParseDuration reads them.
var durationUnits = map[string]bool{"ns": true, "us": true, "µs": true, "μs": true, "ms": true, "s": true, "m": true, "h": true}

// rewrite scans src with a small tokenizer that skips string literals and
// comments, and rewrites duration literals and `≈`. Everything else is
// copied unchanged for expr's own parser to judge.
func rewrite(src string) (*rewritten, *CompileError) {
	in := []rune(src)
	rw := &rewritten{src: in, approx: map[int]bool{}, durs: map[int]time.Duration{}}
	var out []rune
	emit := func(s []rune, from, to int) {
		for range s {
			rw.start = append(rw.start, from)
			rw.end = append(rw.end, to)
		}
		out = append(out, s...)
	}
	copyRunes := func(from, to int) {
		for k := from; k < to; k++ {
			rw.start = append(rw.start, k)
			rw.end = append(rw.end, k+1)
		}
		out = append(out, in[from:to]...)
	}
	n := len(in)
	for i := 0; i < n; {
		r := in[i]
		switch {
		case r == '"' || r == '\'' || r == '`':
			j := scanString(in, i)
			copyRunes(i, j)
			i = j
		case r == '/' && i+1 < n && in[i+1] == '/':
			j := i + 2
			for j < n && in[j] != '\n' {
				j++
			}
			copyRunes(i, j)
			i = j
		case r == '/' && i+1 < n && in[i+1] == '*':
			j := i + 2
			for j < n && !(in[j] == '*' && j+1 < n && in[j+1] == '/') {
				j++
			}
			j = min(j+2, n)
			copyRunes(i, j)
			i = j
		case isIdentStart(r):
			j := i + 1
			for j < n && isIdentPart(in[j]) {
				j++
			}
			k, ident, msg := scanPercentile(in, i, j)
			switch {
			case msg != "":
				return nil, rw.errorAt(i, "%s", msg)
			case ident != "":
				emit([]rune(ident), i, k)
				i = k
				continue
			}
			copyRunes(i, j)
			i = j
		case isDigit(r):
			j, d, isDur, err := scanNumber(in, i)
			if err != "" {
				return nil, rw.errorAt(i, "%s", err)
			}
			if isDur {
				rw.durs[len(out)] = d
				emit([]rune(strconv.FormatInt(int64(d), 10)), i, j)
			} else {
				copyRunes(i, j)
			}
			i = j
		case r == '≈':
			rw.approx[len(out)] = true
			emit([]rune("=="), i, i+1)
			i++
		default:
			copyRunes(i, i+1)
			i++
		}
	}
	// One past the end maps to one past the end.
	rw.start = append(rw.start, n)
	rw.end = append(rw.end, n)
	rw.text = string(out)
	return rw, nil
}

// scanPercentile reads a percentile written p99.99 or p(99.9) at the
// identifier in[i:j]. It returns the end of what it read and the
// identifier to emit (percentileIdent), or "" when the identifier is no
// such form; or a message for a percentile out of (0, 100) and for the
// front end's own spelling p99_99 written out.
func scanPercentile(in []rune, i, j int) (end int, ident, msg string) {
	word := string(in[i:j])
	if _, ok := extraPercentile(word); ok && strings.Contains(word, "_") {
		return j, "", fmt.Sprintf("write %s as %s", word, displayName(word))
	}
	var num string
	switch {
	case word == "p":
		k := j
		for k < len(in) && in[k] == ' ' {
			k++
		}
		if k >= len(in) || in[k] != '(' {
			return j, "", ""
		}
		k++
		start := k
		for k < len(in) && (isDigit(in[k]) || in[k] == '.' || in[k] == ' ') {
			k++
		}
		if k >= len(in) || in[k] != ')' || strings.TrimSpace(string(in[start:k])) == "" {
			return j, "", "" // not a plain number: the call check explains
		}
		num, end = strings.TrimSpace(string(in[start:k])), k+1
	case len(word) > 1 && word[0] == 'p' && allDigits(word[1:]) && j+1 < len(in) && in[j] == '.' && isDigit(in[j+1]):
		k := j + 1
		for k < len(in) && isDigit(in[k]) {
			k++
		}
		if k < len(in) && (isIdentPart(in[k]) || in[k] == '.') {
			return j, "", "" // p99.9x: not a percentile; expr says why
		}
		num, end = word[1:]+string(in[j:k]), k
	default:
		return j, "", ""
	}
	written := string(in[i:end])
	q, err := strconv.ParseFloat(num, 64)
	_, frac, _ := strings.Cut(num, ".")
	switch {
	case err != nil || strings.Contains(num, " "):
		return end, "", fmt.Sprintf("%s is not a percentile: write e.g. p(99.9)", written)
	case q == 0:
		return end, "", fmt.Sprintf("%s would be the minimum: write min", written)
	case q == 100:
		return end, "", fmt.Sprintf("%s is the maximum: write max", written)
	case !(q > 0 && q < 100):
		return end, "", fmt.Sprintf("%s: a percentile is between 0 and 100, e.g. p(99.9)", written)
	case len(frac) > maxPercentileDecimals:
		return end, "", fmt.Sprintf("%s: a percentile has at most %d decimal places", written, maxPercentileDecimals)
	}
	return end, percentileIdent(q), ""
}

func isDigit(r rune) bool      { return '0' <= r && r <= '9' }
func isIdentStart(r rune) bool { return r == '_' || r == '$' || unicode.IsLetter(r) }
func isIdentPart(r rune) bool  { return isIdentStart(r) || unicode.IsDigit(r) }

// scanString returns the offset just past the string literal starting at
// i, or the end of the input when it is not terminated.
func scanString(in []rune, i int) int {
	q := in[i]
	for j := i + 1; j < len(in); j++ {
		switch {
		case in[j] == '\\' && q != '`':
			j++
		case in[j] == q:
			return j + 1
		}
	}
	return len(in)
}

// scanNumber scans the number starting at i. A number directly followed
// by letters must be a duration literal: one or more <decimal><unit>
// pairs, e.g. 20ms, 1.5s, 1h30m. It returns the end offset, the duration
// and whether it was one, or an error message.
func scanNumber(in []rune, i int) (end int, d time.Duration, isDur bool, errMsg string) {
	n := len(in)
	j := i
	if in[j] == '0' && j+1 < n && strings.ContainsRune("xXoObB", in[j+1]) {
		for j += 2; j < n && (isIdentPart(in[j])); j++ {
		}
		return j, 0, false, ""
	}
	digits := func() {
		for j < n && (isDigit(in[j]) || in[j] == '_') {
			j++
		}
	}
	digits()
	if j+1 < n && in[j] == '.' && isDigit(in[j+1]) {
		j++
		digits()
	}
	if j < n && (in[j] == 'e' || in[j] == 'E') {
		k := j + 1
		if k < n && (in[k] == '+' || in[k] == '-') {
			k++
		}
		if k < n && isDigit(in[k]) {
			j = k
			digits()
			if j < n && isIdentStart(in[j]) {
				return j, 0, false, fmt.Sprintf("duration literals are plain decimals with a unit, e.g. 1.5s; %q is not one", word(in, i))
			}
			return j, 0, false, ""
		}
	}
	if j >= n || !isIdentStart(in[j]) {
		return j, 0, false, ""
	}
	// A duration literal: re-scan it as <decimal><unit> pairs.
	lit := word(in, i)
	var b strings.Builder
	j = i
	for {
		numStart := j
		for j < n && (isDigit(in[j]) || in[j] == '_' || (in[j] == '.' && j+1 < n && isDigit(in[j+1]))) {
			j++
		}
		if j == numStart {
			break
		}
		for _, r := range in[numStart:j] {
			if r != '_' {
				b.WriteRune(r)
			}
		}
		unitStart := j
		for j < n && unicode.IsLetter(in[j]) {
			j++
		}
		unit := string(in[unitStart:j])
		if unit == "" {
			return j, 0, false, fmt.Sprintf("missing unit after %s in %q: durations take ns, us, ms, s, m or h", string(in[numStart:j]), lit)
		}
		if !durationUnits[unit] {
			return j, 0, false, fmt.Sprintf("unknown unit %q in %q: durations take ns, us, ms, s, m or h", unit, lit)
		}
		b.WriteString(unit)
		if j >= n || !isDigit(in[j]) {
			break
		}
	}
	if j < n && isIdentPart(in[j]) {
		return j, 0, false, fmt.Sprintf("%q is not a duration: durations are e.g. 250us, 20ms, 1.5s, 2m, 1h30m", lit)
	}
	d, err := time.ParseDuration(b.String())
	if err != nil {
		return j, 0, false, fmt.Sprintf("%q is not a valid duration: %s", lit, strings.TrimPrefix(err.Error(), "time: "))
	}
	return j, d, true, ""
}

// word returns the run of identifier characters, digits and dots starting
// at i, for messages.
func word(in []rune, i int) string {
	j := i
	for j < len(in) && (isIdentPart(in[j]) || in[j] == '.') {
		j++
	}
	return string(in[i:j])
}

// origStart maps a text offset to the source offset where its piece begins.
func (rw *rewritten) origStart(k int) int {
	if k < 0 {
		return 0
	}
	if k >= len(rw.start) {
		return len(rw.src)
	}
	return rw.start[k]
}

// origEnd maps an exclusive text end offset to the exclusive source end.
func (rw *rewritten) origEnd(k int) int {
	if k <= 0 {
		return 0
	}
	if k > len(rw.end) {
		return len(rw.src)
	}
	return rw.end[k-1]
}

// errorAt returns a CompileError at source offset off.
func (rw *rewritten) errorAt(off int, format string, args ...any) *CompileError {
	line, col := 1, 1
	for k := 0; k < off && k < len(rw.src); k++ {
		if rw.src[k] == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return &CompileError{Rule: string(rw.src), Offset: off, Line: line, Column: col, Msg: fmt.Sprintf(format, args...)}
}

// errorAtText returns a CompileError at text offset k.
func (rw *rewritten) errorAtText(k int, format string, args ...any) *CompileError {
	return rw.errorAt(rw.origStart(k), format, args...)
}

// quotedToken finds the token that a message of expr's parser quotes:
// `unexpected token Operator("==")`, `bad number syntax: "1000000.x"`,
// `Operator (==) and coalesce expressions (??) cannot be mixed`.
var quotedToken = regexp.MustCompile(`(?:\w\(|^bad number syntax: |^Operator \()("(?:[^"\\]|\\.)*"|[^()\s]+)`)

// asWritten rewrites a message of expr's parser about the text at offset
// k so that the token it quotes is the one the user wrote: `≈` rather
// than the `==` it became, `20ms` rather than `20000000`. Other messages
// are returned unchanged.
func (rw *rewritten) asWritten(k int, msg string) string {
	m := quotedToken.FindStringSubmatchIndex(msg)
	if m == nil {
		return msg
	}
	tok, quoted := msg[m[2]:m[3]], false
	if strings.HasPrefix(tok, `"`) {
		t, err := strconv.Unquote(tok)
		if err != nil {
			return msg
		}
		tok, quoted = t, true
	}
	text, n := []rune(rw.text), utf8.RuneCountInString(tok)
	// The token starts at k, or (an error of the lexer) ends there.
	for _, from := range []int{k, k - n + 1} {
		if from < 0 || from+n > len(text) || string(text[from:from+n]) != tok {
			continue
		}
		a, b := rw.origStart(from), rw.origEnd(from+n)
		if a >= b || b > len(rw.src) {
			return msg
		}
		src := string(rw.src[a:b])
		if src == tok {
			return msg
		}
		if quoted {
			src = strconv.Quote(src)
		}
		return msg[:m[2]] + src + msg[m[3]:]
	}
	return msg
}

// extent returns the source text of text range [from, to), widened to
// balance its brackets and trimmed.
func (rw *rewritten) extent(from, to int) string {
	a, b := rw.origStart(from), rw.origEnd(to)
	if a < 0 || b > len(rw.src) || a >= b {
		return ""
	}
	depth := func(a, b int) int {
		d := 0
		for k := a; k < b; k++ {
			switch rw.src[k] {
			case '"', '\'', '`':
				k = scanString(rw.src, k) - 1
			case '(', '[', '{':
				d++
			case ')', ']', '}':
				d--
			}
		}
		return d
	}
	for d := depth(a, b); d > 0 && b < len(rw.src); d = depth(a, b) {
		b++
	}
	for d := depth(a, b); d < 0 && a > 0; d = depth(a, b) {
		a--
	}
	return strings.TrimSpace(string(rw.src[a:b]))
}

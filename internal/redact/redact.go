// Package redact is the kit every output goes through (reports, the console,
// logs): it removes a run's secrets (the values a scenario read from ${ENV}
// into its strings) from every byte runner writes. One Redactor is built per
// run from the scenario's secrets and applied at every sink: the console,
// the log lines and progress on stderr, output file names, and each report
// file (JSON, TSV, Markdown, HTML, JUnit, HDR log) before it is written.
//
// A secret is matched whole, as written and in the escaped forms the
// reports and logs give it (JSON, HTML/XML, Go quoted), and also where a
// message was shortened: the text just before a cut mark (Cut) that is a
// prefix of 4 or more characters of a secret is taken as the secret's
// front part and replaced too. Text must be redacted before it is
// shortened; this catches what a lower layer shortened without knowing
// the secrets (a driver clipping the response line it quotes).
package redact

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"html"
	"io"
	"slices"
	"strconv"
	"strings"
)

// Mark replaces each secret.
const Mark = "[redacted]"

// Cut is the mark runner puts where it shortened a message.
const Cut = "…"

// minWhole is the shortest secret matched whole: a shorter one ("8")
// would blank ordinary text everywhere. minPrefix is the shortest front
// part of a secret taken as the secret before a cut.
const (
	minWhole  = 3
	minPrefix = 4
)

// Redactor replaces a run's secrets in text. Its zero value and nil
// redact nothing. It is safe for concurrent use (it never changes after
// New).
type Redactor struct {
	// forms are the secrets and their escaped forms, longest first, so
	// that a secret containing another is replaced whole.
	forms []string
}

// New returns the redactor of secrets. Secrets shorter than 3 bytes are
// ignored (numbers and units are not secrets; "8" everywhere would ruin a
// report); duplicates are fine.
func New(secrets []string) *Redactor {
	var forms []string
	for _, s := range secrets {
		if len(s) < minWhole {
			continue
		}
		forms = append(forms, s, html.EscapeString(s))
		var x strings.Builder
		xml.EscapeText(&x, []byte(s)) // never fails on a strings.Builder
		forms = append(forms, x.String())
		q := strconv.Quote(s)
		forms = append(forms, q[1:len(q)-1])
		j, _ := json.Marshal(s) // a string always marshals
		forms = append(forms, string(j[1:len(j)-1]))
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		enc.Encode(s)
		j = bytes.TrimSpace(b.Bytes())
		forms = append(forms, string(j[1:len(j)-1]))
	}
	slices.SortFunc(forms, func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	})
	return &Redactor{forms: slices.Compact(forms)}
}

// Empty reports whether r redacts nothing (no secret of 3 bytes or more).
func (r *Redactor) Empty() bool { return r == nil || len(r.forms) == 0 }

// String returns s with every secret replaced by Mark, and every front
// part of a secret (4 bytes or more) that ends where s was cut (just
// before Cut) replaced too.
func (r *Redactor) String(s string) string {
	if r.Empty() {
		return s
	}
	for _, f := range r.forms {
		if strings.Contains(s, f) {
			s = strings.ReplaceAll(s, f, Mark)
		}
	}
	if !strings.Contains(s, Cut) {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, Cut)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		before := s[:i]
		if n := r.frontAtEnd(before); n > 0 {
			before = before[:len(before)-n] + Mark
		}
		b.WriteString(before)
		b.WriteString(Cut)
		s = s[i+len(Cut):]
	}
}

// frontAtEnd returns the length of the longest front part (minPrefix
// bytes or more) of a secret that s ends with; 0 when there is none.
func (r *Redactor) frontAtEnd(s string) int {
	best := 0
	for _, f := range r.forms {
		for n := min(len(f)-1, len(s)); n >= max(minPrefix, best+1); n-- {
			if strings.HasSuffix(s, f[:n]) {
				best = n
				break
			}
		}
	}
	return best
}

// Bytes is String for a byte slice. It returns b itself when there is
// nothing to redact.
func (r *Redactor) Bytes(b []byte) []byte {
	if r.Empty() {
		return b
	}
	s := string(b)
	if t := r.String(s); t != s {
		return []byte(t)
	}
	return b
}

// JSON redacts the string values and keys of the JSON text b, each
// decoded, redacted (String) and encoded again, and leaves every other
// byte as it is: a secret that reads like JSON syntax (true, null, "ok":)
// can then never break the document, while the layout stays b's. It
// returns b itself when there is nothing to redact; an error only when b
// holds a string that is not valid JSON.
func (r *Redactor) JSON(b []byte) ([]byte, error) { return r.JSONKeeping(b, nil) }

// JSONKeeping is JSON that leaves the object keys in keep as they are:
// the names of a document's own fields are its structure, not the run's
// data, and a secret that happens to equal one (an ${ENV} value
// "response") must not make the document unreadable. Keys not in keep
// (map keys: counter names, error codes) and every string value are
// redacted as JSON does.
func (r *Redactor) JSONKeeping(b []byte, keep map[string]bool) ([]byte, error) {
	if r.Empty() {
		return b, nil
	}
	var out []byte
	last := 0 // b[:last] is in out (once out is in use)
	for i := 0; i < len(b); i++ {
		if b[i] != '"' {
			continue
		}
		end := i + 1
		for end < len(b) && b[end] != '"' {
			if b[end] == '\\' {
				end++
			}
			end++
		}
		if end >= len(b) {
			return nil, fmt.Errorf("redact: unterminated JSON string at byte %d", i)
		}
		var v string
		if err := json.Unmarshal(b[i:end+1], &v); err != nil {
			return nil, fmt.Errorf("redact: JSON string at byte %d: %w", i, err)
		}
		if keep[v] && isKey(b[end+1:]) {
			i = end
			continue
		}
		if red := r.String(v); red != v {
			var enc bytes.Buffer
			e := json.NewEncoder(&enc)
			e.SetEscapeHTML(false)
			if err := e.Encode(red); err != nil {
				return nil, err
			}
			out = append(append(out, b[last:i]...), bytes.TrimRight(enc.Bytes(), "\n")...)
			last = end + 1
		}
		i = end
	}
	if out == nil {
		return b, nil
	}
	return append(out, b[last:]...), nil
}

// isKey reports whether the JSON text after a string (rest) makes it an
// object key: the next byte other than white space is a colon.
func isKey(rest []byte) bool {
	rest = bytes.TrimLeft(rest, " \t\r\n")
	return len(rest) > 0 && rest[0] == ':'
}

// Writer returns a writer that redacts each Write to w before passing it
// on; w itself when r redacts nothing. Each Write is redacted on its own,
// so a secret is caught only within one Write: the console, fmt and
// zerolog write a line or an event at once, and the reports render into
// a buffer and write it whole. A Write's error is w's; on success it
// reports all of p written.
func (r *Redactor) Writer(w io.Writer) io.Writer {
	if r.Empty() {
		return w
	}
	return &writer{r: r, w: w}
}

type writer struct {
	r *Redactor
	w io.Writer
}

func (w *writer) Write(p []byte) (int, error) {
	if _, err := w.w.Write(w.r.Bytes(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

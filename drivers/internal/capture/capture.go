// Package capture takes values out of HTTP responses for the steps of a
// flow that come after: a capture spec (schema.Capture) is compiled once,
// before any traffic, and extracted from each response's headers and
// body. A capture that finds nothing is a step failure of class
// drivers.Capture whose code is drivers.CaptureCode of the capture's
// name; this package only says found or not.
package capture

import (
	"errors"
	"fmt"
	"net/textproto"
	"regexp"
	"strings"

	"github.com/tidwall/gjson"
	"golang.org/x/net/http/httpguts"

	"github.com/runner-dev/runner/schema"
)

// kind is what a capture reads.
type kind uint8

const (
	jsonPath kind = iota + 1
	header
	regex
)

// Capture is a compiled capture spec: exactly one of a JSON path into the
// body, a response header or a regular expression over the body. It is
// immutable, so safe for concurrent use.
type Capture struct {
	kind kind
	path string         // jsonPath: the gjson path
	name string         // header: the canonical header name
	re   *regexp.Regexp // regex: the expression
	src  string         // the spec as written, for String
}

// Compile compiles spec. It is an error when spec sets none or more than
// one of JSON, Header and Regex, when the one it sets is only blanks,
// when Header is not an HTTP field name (RFC 9110 token), and when Regex
// is not an RE2 expression (the message quotes the parser's).
func Compile(spec schema.Capture) (*Capture, error) {
	var set []string
	for _, k := range []struct{ key, v string }{{"json", spec.JSON}, {"header", spec.Header}, {"regex", spec.Regex}} {
		if k.v != "" {
			set = append(set, k.key)
		}
	}
	switch len(set) {
	case 0:
		return nil, errors.New("empty capture: expected one of json (a path such as items.0.id), header (a name) or regex (an RE2 expression)")
	case 1:
	default:
		return nil, fmt.Errorf("capture sets %s: expected exactly one of json, header or regex", strings.Join(set, " and "))
	}
	switch {
	case spec.JSON != "":
		if strings.TrimSpace(spec.JSON) == "" {
			return nil, errors.New("json: empty path; expected a path such as token or items.0.id")
		}
		return &Capture{kind: jsonPath, path: spec.JSON, src: "json " + spec.JSON}, nil
	case spec.Header != "":
		if strings.TrimSpace(spec.Header) == "" {
			return nil, errors.New("header: empty name; expected a header name such as Location")
		}
		if !httpguts.ValidHeaderFieldName(spec.Header) {
			return nil, fmt.Errorf("header %q: not an HTTP header name (letters, digits and !#$%%&'*+-.^_`|~)", spec.Header)
		}
		name := textproto.CanonicalMIMEHeaderKey(spec.Header)
		return &Capture{kind: header, name: name, src: "header " + name}, nil
	default:
		if strings.TrimSpace(spec.Regex) == "" {
			return nil, errors.New("regex: empty expression; expected an RE2 expression such as id=(\\d+)")
		}
		re, err := regexp.Compile(spec.Regex)
		if err != nil {
			return nil, fmt.Errorf("regex %q: not an RE2 expression: %w", spec.Regex, err)
		}
		return &Capture{kind: regex, re: re, src: "regex " + spec.Regex}, nil
	}
}

// Extract takes the capture's value from a response: headers maps each
// canonical header name to its first value (as the HTTP driver's success
// rule sees them), body is the body as read (the driver keeps at most
// its first MiB). ok is false when nothing matches:
//
//   - json: the body is not valid JSON, or the path (gjson syntax:
//     token, items.0.id, user.name) finds nothing or null. A string is
//     taken unescaped; a number, true, false, an object or an array as
//     its JSON text as the body writes it.
//   - header: the response has no such header. Its first value is taken,
//     possibly empty.
//   - regex: the expression does not match the body. With a group, the
//     first group is taken (ok false when that group took no part in the
//     match); without one, the whole match.
//
// Extract never panics, whatever the body.
func (c *Capture) Extract(headers map[string]string, body []byte) (string, bool) {
	switch c.kind {
	case jsonPath:
		if !gjson.ValidBytes(body) {
			return "", false
		}
		r := gjson.GetBytes(body, c.path)
		switch {
		case !r.Exists() || r.Type == gjson.Null:
			return "", false
		case r.Type == gjson.String:
			return r.String(), true
		default:
			return r.Raw, true
		}
	case header:
		v, ok := headers[c.name]
		return v, ok
	case regex:
		m := c.re.FindSubmatchIndex(body)
		if m == nil {
			return "", false
		}
		if len(m) > 2 {
			m = m[2:4]
		}
		if m[0] < 0 {
			return "", false
		}
		return string(body[m[0]:m[1]]), true
	}
	return "", false
}

// Expr returns the expression c evaluates as written: the JSON path or
// the regular expression; "" for a header capture.
func (c *Capture) Expr() string {
	switch c.kind {
	case jsonPath:
		return c.path
	case regex:
		return c.re.String()
	}
	return ""
}

// With returns a capture of c's kind that evaluates expr instead of c's
// expression: the expression of a templated capture as rendered for one
// request. An error when c is a header capture (its name is no
// template) or a regex expr does not compile.
func (c *Capture) With(expr string) (*Capture, error) {
	switch c.kind {
	case jsonPath:
		return &Capture{kind: jsonPath, path: expr, src: "json " + expr}, nil
	case regex:
		re, err := regexp.Compile(expr)
		if err != nil {
			return nil, fmt.Errorf("regex %q: not an RE2 expression: %w", expr, err)
		}
		return &Capture{kind: regex, re: re, src: "regex " + expr}, nil
	}
	return nil, fmt.Errorf("%s: a header capture has no expression", c)
}

// Escapers returns how the value of each hole of a template of c's
// expression is escaped when it is inserted, so that it stands for
// itself: lits is the expression's text split around its holes (one more
// than the holes). In a regex a value matches itself literally
// (regexp.QuoteMeta; outside a character class). In a JSON path, a hole
// inside a "…" string (a query's value, as in items.#(owner=="{{x}}"))
// gets the JSON string escapes of \ and " (gjson unescapes them), and
// one elsewhere the path escapes of a key (gjson.Escape: a \ before
// . * ? | # @ and the other path characters). With the % and !% (like)
// operators a value's * and ? stay wildcards. A header capture has no
// holes: nil.
func (c *Capture) Escapers(lits []string) []func(string) string {
	if len(lits) < 2 || c.kind == header {
		return nil
	}
	esc := make([]func(string) string, len(lits)-1)
	switch c.kind {
	case regex:
		for i := range esc {
			esc[i] = regexp.QuoteMeta
		}
	case jsonPath:
		quoted := false
		for i := range esc {
			l := lits[i]
			for j := 0; j < len(l); j++ {
				switch l[j] {
				case '\\':
					j++ // an escaped character, a quote included
				case '"':
					quoted = !quoted
				}
			}
			esc[i] = gjson.Escape
			if quoted {
				esc[i] = jsonStringEscape
			}
		}
	}
	return esc
}

// jsonStringEscape escapes \ and " for the inside of a JSON string.
func jsonStringEscape(v string) string {
	if !strings.ContainsAny(v, `\"`) {
		return v
	}
	var b strings.Builder
	b.Grow(len(v) + 8)
	for i := 0; i < len(v); i++ {
		if v[i] == '\\' || v[i] == '"' {
			b.WriteByte('\\')
		}
		b.WriteByte(v[i])
	}
	return b.String()
}

// NeedsBody reports whether Extract reads the body (json and regex), so
// a driver keeps it only when some capture does.
func (c *Capture) NeedsBody() bool { return c.kind != header }

// String describes the capture as written: "json items.0.id",
// "header Location", "regex id=(\d+)".
func (c *Capture) String() string { return c.src }

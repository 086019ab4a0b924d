package schema

import (
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// scalar is a scalar value of the file after `${...}` interpolation.
type scalar struct {
	node  *yaml.Node
	value string // after interpolation
	tag   string // YAML's short tag of the value as written: !!str, !!int, …
	// source is the text as written when it contained ${...}; messages
	// show it instead of the value, which may be a secret.
	source string
}

// The YAML tags a scalar may carry; others (`!foo`, `!!binary`) are rejected.
var scalarTags = map[string]bool{"!!str": true, "!!int": true, "!!float": true, "!!bool": true, "!!null": true, "!!timestamp": true}

// scalar returns the interpolated scalar value of n. It reports a problem
// and returns false when n is not a scalar, carries an unsupported tag, or
// names an unset variable. Values read from the environment are kept as
// secrets when secret is set (string fields; numbers and units are not
// secrets, and redacting "8" everywhere would ruin a report).
func (l *loader) scalar(n *yaml.Node, path, want string, secret bool) (scalar, bool) {
	if n.Kind != yaml.ScalarNode {
		l.errorf(n, path, "expected %s, found %s", want, found(n))
		return scalar{}, false
	}
	sc := scalar{node: n, value: n.Value, tag: n.ShortTag()}
	if !scalarTags[sc.tag] {
		l.errorf(n, path, "unsupported YAML tag %s; expected %s (quote the value if the ! is part of it)", quote(sc.tag), want)
		return scalar{}, false
	}
	if strings.Contains(n.Value, "$") {
		v, used, err := expand(n.Value, l.env)
		if err != nil {
			l.errorf(n, path, "%v", err)
			return scalar{}, false
		}
		if strings.Contains(n.Value, "${") {
			sc.source = n.Value
			l.sources[path] = n.Value
		}
		sc.value = v
		// target.url cannot carry a secret (user info and queries are
		// rejected), and reports must say which target was measured.
		if secret && path != "target.url" {
			l.secrets = append(l.secrets, used...)
		}
	}
	return sc, true
}

var (
	plainInt   = regexp.MustCompile(`^[-+]?[0-9]+$`)
	plainFloat = regexp.MustCompile(`^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`)
)

// typed returns the tag the value resolves to. A value built by
// interpolation resolves as if it had been written plainly, so that
// `connections: "${N}"` is an integer when N is; an explicit tag wins.
func (sc scalar) typed() string {
	if sc.source == "" || sc.node.Style&yaml.TaggedStyle != 0 {
		return sc.tag
	}
	switch v := sc.value; {
	case v == "" || v == "~" || strings.EqualFold(v, "null"):
		return "!!null"
	case strings.EqualFold(v, "true") || strings.EqualFold(v, "false"):
		return "!!bool"
	case plainInt.MatchString(v):
		return "!!int"
	case plainFloat.MatchString(v):
		return "!!float"
	}
	return "!!str"
}

// integer returns the value as an integer, in YAML's integer syntax
// (decimal, 0x, 0o, 0b, underscores) as written, or decimal after
// interpolation.
func (sc scalar) integer() (int64, bool) {
	if sc.typed() != "!!int" {
		return 0, false
	}
	base, v := 0, strings.ReplaceAll(sc.value, "_", "")
	if sc.source != "" {
		base, v = 10, sc.value
	}
	i, err := strconv.ParseInt(v, base, 64)
	return i, err == nil
}

// found describes the value for a message: `string "five"`, `30`, `an
// empty value`, or for an interpolated value its source text, never the
// value itself.
func (sc scalar) found() string {
	kind := map[string]string{
		"!!str": "a string", "!!int": "an integer", "!!float": "a number", "!!bool": "a boolean",
		"!!null": "an empty value", "!!timestamp": "a timestamp",
	}
	if sc.source != "" {
		return kind[sc.typed()] + " from " + quote(sc.source)
	}
	switch sc.tag {
	case "!!str":
		return "string " + quote(sc.value)
	case "!!null":
		if sc.value == "" {
			return "an empty value"
		}
		return "null"
	}
	return sc.value
}

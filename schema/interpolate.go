package schema

import (
	"fmt"
	"strings"
)

// expand replaces `${NAME}` and `${NAME:-default}` in s with values from
// env, and `$$` with a single `$`. As in the POSIX shell, the default is
// used when NAME is unset or empty. A `$` followed by anything else is
// kept as it is. expand returns the values read from env (not defaults),
// so that they can be redacted, and an error for an unset variable without
// a default, a malformed name or an unterminated `${`.
func expand(s string, env func(string) (string, bool)) (string, []string, error) {
	if !strings.Contains(s, "$") {
		return s, nil, nil
	}
	var b strings.Builder
	var used []string
	for {
		i := strings.IndexByte(s, '$')
		if i < 0 || i == len(s)-1 {
			b.WriteString(s)
			return b.String(), used, nil
		}
		b.WriteString(s[:i])
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			s = s[i+2:]
			continue
		case '{':
		default:
			b.WriteByte('$')
			s = s[i+1:]
			continue
		}
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			return "", nil, fmt.Errorf("unterminated %s: expected ${NAME} or ${NAME:-default}", quote(s[i:]))
		}
		expr := s[i+2 : i+end]
		s = s[i+end+1:]
		name, def, hasDefault := strings.Cut(expr, ":-")
		if !validEnvName(name) {
			return "", nil, fmt.Errorf("invalid variable name %s in ${...}: expected letters, digits and _ (not starting with a digit), optionally followed by :-default", quote(name))
		}
		v, ok := env(name)
		switch {
		case ok && v != "":
			used = append(used, v)
			b.WriteString(v)
		case hasDefault:
			b.WriteString(def)
		case ok: // set and empty, no default: the empty value is what was asked for
		default:
			return "", nil, fmt.Errorf("environment variable %s is not set (write ${%s:-default} to give a default)", name, name)
		}
	}
}

func validEnvName(name string) bool {
	if name == "" {
		return false
	}
	for i, c := range name {
		switch {
		case c == '_', c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

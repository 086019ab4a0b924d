package schema

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// checkFrameCodes refuses a rule that reads errors_by[CODE] or
// closes_by[CODE] for a code the frame driver never writes, or a count
// it never makes, in any form
// the rule reads it (bare, in median(), worst(), min() or max(), or as
// baseline.): such a count is 0 whatever the target answers, so a rule
// such as errors_by["status-0x1"] == 0 would pass on nothing. Refused,
// each with what the driver writes instead:
//
//   - a status code in another spelling than the driver's status-0x and
//     the value in upper-case hexadecimal, two digits a byte of the field
//     (status-0x0001 for u16): status-1, status-0x1, 0x0001, 1, 503;
//   - a status value beyond the field, or one of its success values
//     (such replies are ok);
//   - any status code when the layout has no status field (the lkdf
//     preset has none);
//   - a status code in closes_by (a status error keeps the connection);
//   - a class used as a code: status, bad-frame, unknown-id, duplicate-id
//     (the driver's status and bad-frame errors always carry their own
//     codes, and unknown or duplicate ids are the unknown_id and
//     duplicate_id counts, not errors);
//   - bad-NAME for a field the layout does not check;
//   - a number in closes_by (a WebSocket close code);
//   - goaway_retries (HTTP/2's).
func (l *loader) checkFrameCodes(path string, rules []Rule, d Driver) {
	if d.Frame == nil || l.reads == nil || len(rules) > MaxRules {
		return
	}
	fc := frameCodesOf(d.Frame)
	for i, r := range rules {
		p := index(path, i)
		expr := cmp.Or(l.pathIf(p+".rule"), p)
		if !l.ok(expr) {
			continue
		}
		for _, m := range l.reads(r.Expr) {
			if unwrap(m) == "goaway_retries" {
				l.failf(expr, "goaway_retries never counts: it counts HTTP/2 requests sent again after a GOAWAY, and the frame driver has none")
				break
			}
			group, key, ok := codeRead(m)
			if !ok {
				continue
			}
			if why := fc.never(key, group == "closes_by"); why != "" {
				l.failf(expr, "%s[%s] never counts: %s", group, quote(key), why)
				break // one problem per rule
			}
		}
	}
}

// codeRead returns the group (errors_by or closes_by) and the code a
// metric m reads, as rules write it (Options.RuleReads): errors_by["x"],
// worst(errors_by["x"]), median(…), baseline.errors_by["x"].
func codeRead(m string) (group, key string, ok bool) {
	m = unwrap(m)
	for _, g := range []string{"errors_by", "closes_by"} {
		if k, ok := strings.CutPrefix(m, g+`["`); ok && strings.HasSuffix(k, `"]`) {
			return g, strings.ReplaceAll(strings.TrimSuffix(k, `"]`), `\"`, `"`), true
		}
	}
	return "", "", false
}

// unwrap is the metric m reads without its view: m itself, or x of
// baseline.x, median(x) and worst(x).
func unwrap(m string) string {
	m = strings.TrimPrefix(m, "baseline.")
	for _, view := range []string{"median(", "worst("} {
		if inner, ok := strings.CutPrefix(m, view); ok && strings.HasSuffix(inner, ")") {
			m = strings.TrimSuffix(inner, ")")
		}
	}
	return m
}

// frameCodes is what a frame driver's layout lets it write as codes.
type frameCodes struct {
	status  string   // the status field's name, "" without one
	size    int      // its size in bytes
	success []uint64 // its success values
	bad     []string // the bad-frame codes the layout can give
}

func frameCodesOf(f *Frame) frameCodes {
	fc := frameCodes{bad: []string{"too-long"}}
	if f.Layout == nil {
		if f.Preset == "lkdf" {
			fc.bad = append(fc.bad, "bad-magic", "bad-version", "bad-type")
		}
		return fc
	}
	sizes := map[string]int{"u8": 1, "u16": 2, "u32": 4, "u64": 8}
	for _, fd := range f.Layout.Fields {
		switch {
		case fd.Role == "status":
			fc.status, fc.size, fc.success = fd.Name, sizes[fd.Size], []uint64{0}
			if fd.Success != nil {
				fc.success = nil
				for _, v := range fd.Success {
					fc.success = append(fc.success, uint64(v))
				}
			}
		case fd.Role == "type":
			fc.bad = append(fc.bad, "bad-type")
		case fd.Value != nil || fd.ResponseValue != nil:
			fc.bad = append(fc.bad, "bad-"+strings.ToLower(fd.Name))
		}
	}
	if f.Layout.LengthIncludesHeader {
		fc.bad = append(fc.bad, "bad-length")
	}
	if len(f.Layout.Parts) > 0 {
		fc.bad = append(fc.bad, "bad-parts")
	}
	return fc
}

// code is the driver's code of status v (Layout.StatusCode).
func (fc frameCodes) code(v uint64) string {
	return fmt.Sprintf("status-0x%0*X", 2*fc.size, v)
}

// never says why the driver never counts code key ("" when it may).
func (fc frameCodes) never(key string, closes bool) string {
	lower := strings.ToLower(key)
	statusNote := "a reply whose status is not a success value counts as " + fc.code(1) + " (status-0x and the value in hexadecimal)"
	if fc.status == "" {
		statusNote = "the layout has no status field (role: status), so no reply is a status error"
	}
	switch lower {
	case "status":
		return `status is an error class, not a code, and rules read codes only: ` + statusNote + "; errors counts every error"
	case "bad-frame":
		return "bad-frame is an error class, not a code: a bad frame counts under the rule it broke, one of " + strings.Join(fc.bad, ", ")
	case "unknown-id", "duplicate-id":
		return fmt.Sprintf("a reply with an unknown or repeated id answers no request, so it is no request's error; did you mean %s?", strings.ReplaceAll(lower, "-", "_"))
	}
	if strings.HasPrefix(lower, "bad-") && !slices.Contains(fc.bad, lower) {
		return "the layout's bad-frame codes are " + strings.Join(fc.bad, ", ") + " (bad-NAME for a field with value or response_value)"
	}
	v, form, ok := statusValue(lower)
	if !ok {
		return ""
	}
	switch {
	case closes && !strings.HasPrefix(lower, "status"):
		return "the frame driver's closes are eof, short-read, reset or a bad frame's code (numbers such as 1006 are WebSocket close codes)"
	case fc.status == "":
		return statusNote
	case closes:
		return "a status error keeps the connection open; closes_by counts how connections ended (eof, short-read, reset, a bad frame's code)"
	case form == "overflow" || form == "bad" || fc.size < 8 && v >= 1<<(8*fc.size):
		return fmt.Sprintf("a %d-byte status field's codes are status-0x and %d hexadecimal digits, e.g. %s", fc.size, 2*fc.size, fc.code(1))
	case slices.Contains(fc.success, v):
		return fmt.Sprintf("%s is a success value of field %s, so such replies count as ok", fc.code(v)[len("status-"):], fc.status)
	case key != fc.code(v):
		how := fmt.Sprintf("upper case, %d digits", 2*fc.size)
		if form == "decimal" {
			how = "in hexadecimal, " + how
		}
		return fmt.Sprintf("the status field's codes are written %s (%s); did you mean errors_by[%s]?", fc.code(v), how, quote(fc.code(v)))
	}
	return ""
}

// statusValue reads a code that names a status value: status-0xHEX,
// status-DECIMAL, statusDECIMAL, 0xHEX or DECIMAL (lower case). form is
// "hex", "decimal", "overflow" (digits beyond 64 bits) or "bad" (status-
// and no number after it: ok, v 0).
func statusValue(s string) (v uint64, form string, ok bool) {
	s, named := strings.CutPrefix(s, "status")
	if named {
		s = strings.TrimPrefix(s, "-")
	}
	base := 10
	form = "decimal"
	if rest, hex := strings.CutPrefix(s, "0x"); hex {
		s, base, form = rest, 16, "hex"
	}
	if s == "" {
		return 0, "bad", named
	}
	for _, c := range s {
		if !strings.ContainsRune("0123456789abcdef"[:base], c) {
			return 0, "bad", named
		}
	}
	v, err := strconv.ParseUint(s, base, 64)
	if err != nil {
		return 0, "overflow", true
	}
	return v, form, true
}

package execute

import (
	"path/filepath"
	"strings"
	"testing"
)

// A rule reading a frame driver's error code the driver never writes is
// refused at the rule, whatever form reads it: it would read 0 whatever
// the target answers, and `== 0` would pass on nothing. Only the bare
// errors_by["status-0x1"] was refused before; the wrappers, baseline,
// other spellings, success values, a layout without a status field and a
// class used as a code all passed validate.
func TestFrameCodesThatNeverCount(t *testing.T) {
	const status = `{name: s, size: u16, role: status, success: [0, 5]}, `
	for _, c := range []struct {
		fields string // the layout's fields before id and length
		rule   string
		want   string // "" accepted; else the problem's text after "never counts: "
	}{
		// The driver's own spelling, bare and in a wrapper (min and max are
		// metrics in rules, not functions, so median, worst and baseline are
		// the only wrappers).
		{status, `errors_by["status-0x0001"] == 0`, ""},
		{status, `worst(errors_by["status-0x0001"]) == 0`, ""},
		{status, `errors_by["eof"] == 0 and errors_by["bad-magic"] == 0`, "the layout's bad-frame codes are too-long"},
		{status, `errors_by["status-0x1"] == 0`, "the status field's codes are written status-0x0001 (upper case, 4 digits)"},
		{status, `worst(errors_by["status-0x1"]) == 0`, "written status-0x0001"},
		{status, `median(errors_by["status-0x1"]) == 0`, "written status-0x0001"},
		{status, `errors_by["status-0x1"] <= baseline.errors_by["status-0x1"]`, "written status-0x0001"},
		{status, `errors <= baseline.errors_by["status-0x1"]`, "written status-0x0001"},
		// Other spellings of a status.
		{status, `errors_by["status-1"] == 0`, "written status-0x0001 (in hexadecimal, upper case, 4 digits); did you mean"},
		{status, `errors_by["0x0001"] == 0`, "written status-0x0001"},
		{status, `errors_by["1"] == 0`, "written status-0x0001"},
		{status, `errors_by["503"] == 0`, "written status-0x01F7"},
		{status, `errors_by["status-0x00ff"] == 0`, "written status-0x00FF"},
		{status, `errors_by["status-0x10000"] == 0`, "a 2-byte status field's codes are status-0x and 4 hexadecimal digits"},
		{status, `errors_by["status-"] == 0`, "a 2-byte status field's codes are status-0x"},
		// A success value is never an error.
		{status, `errors_by["status-0x0005"] == 0`, "0x0005 is a success value of field s"},
		{status, `errors_by["status-0x0000"] == 0`, "0x0000 is a success value of field s"},
		// No status field: no status code counts.
		{"", `errors_by["status-0x0001"] == 0`, "the layout has no status field"},
		{"", `errors_by["status-0x01"] == 0`, "the layout has no status field"},
		// A status error keeps its connection.
		{status, `closes_by["status-0x0001"] == 0`, "a status error keeps the connection open"},
		// WebSocket's close codes and HTTP/2's retries are not the frame
		// driver's.
		{status, `closes_by["1006"] == 0`, "numbers such as 1006 are WebSocket close codes"},
		{status, `worst(goaway_retries) == 0`, "goaway_retries never counts"},
		{status, `closes_by["eof"] == 0 and closes_by["bad-parts"] >= 0`, "the layout's bad-frame codes are too-long"},
		// Classes are not codes.
		{status, `errors_by["status"] == 0`, "status is an error class, not a code, and rules read codes only: a reply whose status is not a success value counts as status-0x0001"},
		{"", `errors_by["status"] == 0`, "status is an error class, not a code, and rules read codes only: the layout has no status field"},
		{status, `errors_by["bad-frame"] == 0`, "bad-frame is an error class, not a code"},
		{status, `errors_by["unknown-id"] == 0`, "did you mean unknown_id?"},
		{status, `worst(errors_by["duplicate-id"]) == 0`, "did you mean duplicate_id?"},
		// bad-NAME only for a field the layout checks.
		{`{name: magic, size: u8, response_value: 0x81}, `, `errors_by["bad-magic"] == 0`, ""},
		{`{name: magic, size: u8, request_value: 0x80}, `, `errors_by["bad-magic"] == 0`, "the layout's bad-frame codes are too-long"},
	} {
		src := "version: 1\ntarget: {url: \"tcp://127.0.0.1:9\"}\n" +
			"driver: {frame: {layout: {fields: [" + c.fields + "{name: i, size: u32, role: id}, {name: l, size: u32, role: length}]}}}\n" +
			"phases: [{closed: {connections: 1}, duration: 1s}]\n" +
			"assert:\n  - '" + c.rule + "'\n"
		_, _, err := CompileData(filepath.Join(t.TempDir(), "s.yaml"), []byte(src), func(string) (string, bool) { return "", false })
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s %s: refused: %v", c.fields, c.rule, err)
		case c.want == "":
		case err == nil:
			t.Errorf("%s %s: accepted; want %q", c.fields, c.rule, c.want)
		case !strings.Contains(err.Error(), "s.yaml:6:5: assert[0]: ") || !strings.Contains(err.Error(), " never counts: ") || !strings.Contains(err.Error(), c.want):
			t.Errorf("%s %s:\n got: %v\nwant: at s.yaml:6:5, never counts: …%s…", c.fields, c.rule, err, c.want)
		}
	}
}

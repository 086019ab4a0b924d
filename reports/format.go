package reports

import (
	"fmt"
	"strconv"
	"strings"
)

// FormatVersion is the version of the JSON result document's format,
// "MAJOR.MINOR", written as its format_version. The minor number grows
// when the document gains keys a reader may ignore; the major number when
// a key is removed, renamed or changes its meaning or unit, which a
// reader of the older major would misread. result.schema.json (beside
// this file) is the format's JSON Schema; a test fails when the schema
// changes and FormatVersion does not (testdata/result-format.txt).
const FormatVersion = "1.0"

// formatMajor returns the major number of a format_version, "MAJOR.MINOR"
// with both parts decimal; an error names what is wrong.
func formatMajor(v string) (int, error) {
	major, minor, ok := strings.Cut(v, ".")
	ma, err1 := strconv.ParseUint(major, 10, 31)
	_, err2 := strconv.ParseUint(minor, 10, 31)
	if !ok || err1 != nil || err2 != nil {
		return 0, fmt.Errorf("format_version %q is not MAJOR.MINOR (e.g. %q)", v, FormatVersion)
	}
	return int(ma), nil
}

// checkFormat tells whether this runner reads a document of format_version
// v: any minor of its own major or an older one. An empty v is a report
// written before the key existed, which is format 1.0.
func checkFormat(v string) error {
	if v == "" {
		return nil
	}
	got, err := formatMajor(v)
	if err != nil {
		return err
	}
	own, err := formatMajor(FormatVersion)
	if err != nil {
		return err
	}
	if got > own {
		return fmt.Errorf("format_version %s is newer than this runner reads (%s): read it with a newer runner", v, FormatVersion)
	}
	return nil
}

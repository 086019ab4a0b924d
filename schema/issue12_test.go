package schema

import (
	"strings"
	"testing"
	"unicode/utf16"
)

// Issue 12 (c): an alias to an anchor that does not exist (or is defined
// only after it) is located at the alias, with the key path holding it;
// yaml.v3 names no line for it. Comments and quoted strings that mention
// the alias are not taken for it.
func TestIssue12_UnknownAliasLocated(t *testing.T) {
	phases := "phases: [{closed: {connections: 1}, duration: 1s}]\n"
	for _, tc := range []struct{ name, src, want string }{
		{"value", head + phases + "assert: *nope\n",
			`s.yaml:5:9: assert: invalid YAML: unknown anchor "nope"`},
		{"in a flow mapping after a comment and a string naming it",
			"version: 1  # *nope\ntarget: {serve: http}\ndriver: {http: {}}\nphases:\n  - {name: \"*nope\", closed: {connections: *nope}, duration: 1s}\n",
			`s.yaml:5:43: phases[0].closed.connections: invalid YAML: unknown anchor "nope"`},
		{"defined after its use", head + "repeats: *n\n" + phases + "name: &n x\n",
			`s.yaml:4:10: repeats: invalid YAML: unknown anchor "n"`},
		{"after a UTF-8 byte order mark", "\ufeffversion: *v1\n",
			`s.yaml:1:10: version: invalid YAML: unknown anchor "v1"`},
		// Found by fuzzing the pipeline: an alias used as a key, its
		// colon right after it.
		{"as a key", "*k: 1\n", `s.yaml:1:1: invalid YAML: unknown anchor "k"`},
		{"before a question mark", "*k?0\n", `s.yaml:1:1: invalid YAML: unknown anchor "k"`},
		{"after a lone carriage return", "\r*k\n", `s.yaml:2:1: invalid YAML: unknown anchor "k"`},
	} {
		t.Run(tc.name, func(t *testing.T) { wantProblems(t, tc.src, tc.want) })
	}
}

// utf16Bytes encodes s as UTF-16 in the given byte order, with or without
// a byte order mark.
func utf16Bytes(s string, bigEndian, withBOM bool) []byte {
	units := utf16.Encode([]rune(s))
	if withBOM {
		units = append([]uint16{0xfeff}, units...)
	}
	b := make([]byte, 0, 2*len(units))
	for _, u := range units {
		if bigEndian {
			b = append(b, byte(u>>8), byte(u))
		} else {
			b = append(b, byte(u), byte(u>>8))
		}
	}
	return b
}

// Issue 12 (d): a scenario file is UTF-8. A UTF-16 file, which the YAML
// parser decodes when it has a byte order mark, is refused with its
// position, with or without the mark; a UTF-8 byte order mark is
// accepted (editors write it) and not counted in columns.
func TestIssue12_UTF16Refused(t *testing.T) {
	src := head + "phases: [{closed: {connections: 1}, duration: 1s}]\n"
	for _, tc := range []struct {
		name           string
		bigEndian, bom bool
		want           string
	}{
		{"little-endian with BOM", false, true, "s.yaml:1:1: UTF-16 text (it starts with a UTF-16 byte order mark); a scenario file is UTF-8"},
		{"big-endian with BOM", true, true, "s.yaml:1:1: UTF-16 text"},
		{"little-endian without BOM", false, false, "s.yaml:1:2: NUL byte: the file looks like UTF-16"},
		{"big-endian without BOM", true, false, "s.yaml:1:1: NUL byte: the file looks like UTF-16"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Parse("s.yaml", utf16Bytes(src, tc.bigEndian, tc.bom), testEnv); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("got %v, want %s…", err, tc.want)
			}
		})
	}
	t.Run("UTF-8 with BOM accepted", func(t *testing.T) {
		mustParse(t, "\ufeff"+src)
	})
}

// Issue 12 (e): a host (or a path) that holds a character that does not
// print, such as an invisible U+FEFF pasted along, is refused at its
// field: it would send a DNS lookup of another name off the loopback.
func TestIssue12_NonPrintingHostRefused(t *testing.T) {
	phases := "phases: [{closed: {connections: 1}, duration: 1s}]\n"
	for _, tc := range []struct{ name, src, want string }{
		{"BOM in the host", "version: 1\ntarget: {url: \"http://\ufeff127.0.0.1:8080\"}\ndriver: {http: {}}\n" + phases,
			"s.yaml:2:15: target.url: character 8 is U+FEFF, which does not print"},
		{"zero-width space after the host", "version: 1\ntarget: {url: \"http://localhost\u200b:8080\"}\ndriver: {http: {}}\n" + phases,
			"s.yaml:2:15: target.url: character 17 is U+200B"},
		{"no-break space in the host", "version: 1\ntarget:\n  url: \"http://127.0.0.1\u00a0:8080\"\ndriver: {http: {}}\n" + phases,
			"s.yaml:3:8: target.url: character 17 is U+00A0"},
		{"TLS server name", "version: 1\ntarget: {url: \"https://127.0.0.1:8443\"}\ndriver: {http: {tls: {server_name: \"example.com\ufeff\"}}}\n" + phases,
			"s.yaml:3:36: driver.http.tls.server_name: character 12 is U+FEFF"},
		{"websocket TLS server name", "version: 1\ntarget: {url: \"wss://127.0.0.1:8443\"}\ndriver: {websocket: {message: x, tls: {server_name: \"\u2060a\"}}}\n" + phases,
			"driver.websocket.tls.server_name: character 1 is U+2060"},
		{"request path", head[:len(head)-len("driver: {http: {}}\n")] + "driver: {http: {path: \"/a\u200db\"}}\n" + phases,
			"driver.http.path: character 3 is U+200D"},
	} {
		t.Run(tc.name, func(t *testing.T) { wantProblems(t, tc.src, tc.want) })
	}
	// Characters that print but are not ASCII in a host: look-alikes that
	// would reach DNS. An international name is written as xn--….
	for _, tc := range []struct{ name, host string }{
		{"hangul filler", "127.0.0.1\u3164"}, {"variation selector", "127.0.0.1\ufe0f"},
		{"combining accent", "local\u0301host"}, {"ideographic full stop", "127\u30020.0.1"},
		{"full-width digit", "\uff11" + "27.0.0.1"}, {"another script", "bücher.localhost"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantProblems(t, "version: 1\ntarget: {url: \"http://"+tc.host+":8080\"}\ndriver: {http: {}}\n"+phases,
				"target.url: host \""+tc.host+"\" has a character that is not ASCII")
		})
	}
	mustParse(t, "version: 1\ntarget: {url: \"http://xn--bcher-kva.localhost:8080\"}\ndriver: {http: {}}\n"+phases)
}

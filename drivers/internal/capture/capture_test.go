package capture

import (
	"strings"
	"testing"

	"github.com/runner-dev/runner/schema"
)

const shop = `{"token": "abc\u0041", "n": 1.50, "big": 12345678901234567890, "ok": true, "none": null,
 "items": [{"id": 7, "name": "tea"}, {"id": 8, "tags": ["x", "y"]}], "user": {"name": "ann", "roles": []}}`

func TestExtract(t *testing.T) {
	headers := map[string]string{"Location": "/items/7", "X-Empty": "", "Set-Cookie": "s=1"}
	for _, tc := range []struct {
		name string
		spec schema.Capture
		body string
		want string
		ok   bool
	}{
		// A string is taken unescaped.
		{"json string", schema.Capture{JSON: "token"}, shop, "abcA", true},
		// Numbers, booleans, objects and arrays as the body writes them.
		{"json number as written", schema.Capture{JSON: "n"}, shop, "1.50", true},
		{"json integer beyond float64", schema.Capture{JSON: "big"}, shop, "12345678901234567890", true},
		{"json bool", schema.Capture{JSON: "ok"}, shop, "true", true},
		{"json array element field", schema.Capture{JSON: "items.0.id"}, shop, "7", true},
		{"json array", schema.Capture{JSON: "items.1.tags"}, shop, `["x", "y"]`, true},
		{"json nested", schema.Capture{JSON: "user.name"}, shop, "ann", true},
		{"json empty array", schema.Capture{JSON: "user.roles"}, shop, "[]", true},
		{"json count (gjson #)", schema.Capture{JSON: "items.#"}, shop, "2", true},
		{"json query (gjson #(…))", schema.Capture{JSON: `items.#(id==8).tags.1`}, shop, "y", true},
		// Missing, null, out of range, not JSON: not found.
		{"json missing", schema.Capture{JSON: "session"}, shop, "", false},
		{"json null", schema.Capture{JSON: "none"}, shop, "", false},
		{"json index out of range", schema.Capture{JSON: "items.5.id"}, shop, "", false},
		{"json body not JSON", schema.Capture{JSON: "token"}, `token: abc`, "", false},
		{"json truncated body", schema.Capture{JSON: "token"}, `{"token": "abc", "x": [`, "", false},
		{"json empty body", schema.Capture{JSON: "token"}, ``, "", false},
		// Headers: by canonical name, first value, empty allowed.
		{"header", schema.Capture{Header: "Location"}, "", "/items/7", true},
		{"header any case", schema.Capture{Header: "location"}, "", "/items/7", true},
		{"header empty value", schema.Capture{Header: "x-empty"}, "", "", true},
		{"header missing", schema.Capture{Header: "ETag"}, "", "", false},
		// Regex: first group, or the whole match.
		{"regex group", schema.Capture{Regex: `id=(\d+)`}, "a id=42 b id=43", "42", true},
		{"regex first of two groups", schema.Capture{Regex: `(\w+)=(\d+)`}, "k=9", "k", true},
		{"regex whole match", schema.Capture{Regex: `\d+`}, "order 1234 ok", "1234", true},
		{"regex no match", schema.Capture{Regex: `id=(\d+)`}, "nothing", "", false},
		{"regex group not taking part", schema.Capture{Regex: `a(x)?b`}, "ab", "", false},
		{"regex empty group", schema.Capture{Regex: `a(x*)b`}, "ab", "", true},
		{"regex over bytes not UTF-8", schema.Capture{Regex: `k=(.)`}, "k=\xff", "\xff", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Compile(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := c.Extract(headers, []byte(tc.body))
			if got != tc.want || ok != tc.ok {
				t.Errorf("%s: got %q, %v; want %q, %v", c, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestCompileErrors(t *testing.T) {
	for _, tc := range []struct {
		spec schema.Capture
		want string
	}{
		{schema.Capture{}, "empty capture: expected one of json"},
		{schema.Capture{JSON: "a", Header: "B"}, "capture sets json and header: expected exactly one of json, header or regex"},
		{schema.Capture{JSON: "a", Header: "B", Regex: "c"}, "capture sets json and header and regex"},
		{schema.Capture{JSON: "  "}, "json: empty path"},
		{schema.Capture{Header: " "}, "header: empty name"},
		{schema.Capture{Header: "X Token"}, `header "X Token": not an HTTP header name`},
		{schema.Capture{Regex: "\t"}, "regex: empty expression"},
		{schema.Capture{Regex: "id=(\\d+"}, "regex \"id=(\\\\d+\": not an RE2 expression: error parsing regexp: missing closing )"},
		{schema.Capture{Regex: `(?<=a)b`}, "not an RE2 expression"},
	} {
		if _, err := Compile(tc.spec); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Compile(%+v) = %v, want an error containing %q", tc.spec, err, tc.want)
		}
	}
}

func TestString(t *testing.T) {
	for spec, want := range map[schema.Capture]string{
		{JSON: "items.0.id"}: "json items.0.id",
		{Header: "location"}: "header Location",
		{Regex: `id=(\d+)`}:  `regex id=(\d+)`,
	} {
		c, err := Compile(spec)
		if err != nil {
			t.Fatal(err)
		}
		if c.String() != want {
			t.Errorf("String() = %q, want %q", c, want)
		}
		if c.NeedsBody() != (spec.Header == "") {
			t.Errorf("%s: NeedsBody %v", c, c.NeedsBody())
		}
	}
}

// FuzzExtract: any spec that compiles, over any headers and body, never
// panics; what it finds is in the body or the headers.
func FuzzExtract(f *testing.F) {
	for _, s := range []struct{ kind, expr, body string }{
		{"json", "token", shop},
		{"json", "items.#(id==8).tags.1", shop},
		{"json", "items.#(name%\"t*\")#.id", shop},
		{"json", "@reverse", `[1,2]`},
		{"json", "a\\.b", `{"a.b": 1}`},
		{"json", "..0", `{"a":1}` + "\n" + `{"a":2}`},
		{"json", "x", `{"x": "\ud800"}`},
		{"header", "Location", ""},
		{"regex", `id=(\d+)`, "id=42"},
		{"regex", `(a)|b`, "b"},
		{"regex", `^$`, ""},
	} {
		f.Add(s.kind, s.expr, []byte(s.body), "Location", "/x")
	}
	f.Fuzz(func(t *testing.T, kind, expr string, body []byte, hname, hvalue string) {
		var spec schema.Capture
		switch kind {
		case "json":
			spec.JSON = expr
		case "header":
			spec.Header = expr
		default:
			spec.Regex = expr
		}
		c, err := Compile(spec)
		if err != nil {
			return
		}
		got, ok := c.Extract(map[string]string{hname: hvalue}, body)
		if !ok && got != "" {
			t.Fatalf("%s: not found, yet %q", c, got)
		}
		if ok && kind == "regex" && !strings.Contains(string(body), got) {
			t.Fatalf("%s: %q is not in the body %q", c, got, body)
		}
		if ok && kind == "header" && got != hvalue {
			t.Fatalf("%s: %q is not the header's value %q", c, got, hvalue)
		}
	})
}

// TestEscapers: a value inserted in a capture's expression stands for
// itself, escaped as where it goes: in a JSON path inside a query's "…"
// as a JSON string (after a \" the string goes on), elsewhere as a gjson
// key; in a regex quoted; a header capture has no holes.
func TestEscapers(t *testing.T) {
	const v = `o"n\a.b*`
	for _, tc := range []struct {
		name string
		spec schema.Capture
		lits []string
		want []string // each hole's escaping of v
	}{
		{"json in a query's string", schema.Capture{JSON: "x"}, []string{`items.#(owner=="`, `").id`}, []string{`o\"n\\a.b*`}},
		{"json key", schema.Capture{JSON: "x"}, []string{`ids.`, ``}, []string{`o\"n\\a\.b\*`}},
		{"json after an escaped quote", schema.Capture{JSON: "x"}, []string{`a\"b.`, ``}, []string{`o\"n\\a\.b\*`}},
		{"json after a closed string", schema.Capture{JSON: "x"}, []string{`#(a=="`, `").`, ``}, []string{`o\"n\\a.b*`, `o\"n\\a\.b\*`}},
		{"regex", schema.Capture{Regex: "x"}, []string{`id=`, `(\d+)`}, []string{`o"n\\a\.b\*`}},
		{"header", schema.Capture{Header: "X"}, []string{"", ""}, nil},
	} {
		c, err := Compile(tc.spec)
		if err != nil {
			t.Fatal(err)
		}
		esc := c.Escapers(tc.lits)
		var got []string
		for _, e := range esc {
			got = append(got, e(v))
		}
		if strings.Join(got, "|") != strings.Join(tc.want, "|") || len(esc) != len(tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	// As rendered, the escaped value finds its own.
	body := []byte(`{"items": [{"owner": "o\"n\\a.b*", "id": 7}], "ids": {"o\"n\\a.b*": 8}}`)
	for expr, want := range map[string]string{`items.#(owner=="o\"n\\a.b*").id`: "7", `ids.o\"n\\a\.b\*`: "8"} {
		c, _ := Compile(schema.Capture{JSON: "x"})
		r, err := c.With(expr)
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := r.Extract(nil, body); got != want || !ok || r.String() != "json "+expr {
			t.Errorf("%s: %q %v, want %s", r, got, ok, want)
		}
	}
	re, _ := Compile(schema.Capture{Regex: "x"})
	if _, err := re.With("("); err == nil || !strings.Contains(err.Error(), "not an RE2 expression") {
		t.Errorf("a rendered regex that does not compile: %v", err)
	}
	h, _ := Compile(schema.Capture{Header: "X"})
	if _, err := h.With("y"); err == nil {
		t.Errorf("a header capture took an expression")
	}
}

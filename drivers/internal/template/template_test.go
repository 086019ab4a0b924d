package template

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRender(t *testing.T) {
	tp, err := Parse(`{"id": {{ seq }}, "n": "{{seq}}"}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(tp.Render(nil, 17, 0)); got != `{"id": 17, "n": "17"}` {
		t.Errorf("got %s", got)
	}
	if !tp.HasSeq() {
		t.Error("HasSeq false")
	}
	if got := string(tp.Render([]byte("x"), 18446744073709551615, 0)); got != `x{"id": 18446744073709551615, "n": "18446744073709551615"}` {
		t.Errorf("max seq: %s", got)
	}
}

func TestBytes(t *testing.T) {
	tp, err := Parse(`<{{bytes 1KiB}}|{{bytes 3}}>`, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, b := tp.Render(nil, 1, 0), tp.Render(nil, 2, 0)
	if len(a) != 1024+3+3 || len(b) != len(a) {
		t.Fatalf("lengths %d %d, want %d", len(a), len(b), 1030)
	}
	if string(a) == string(b) {
		t.Error("seq 1 and 2 render the same filler")
	}
	for _, c := range a[1 : len(a)-1] {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '|') {
			t.Fatalf("filler byte %q outside [a-z0-9]", c)
		}
	}
	if string(tp.Render(nil, 1, 0)) != string(a) {
		t.Error("not deterministic")
	}
	if tp.HasSeq() {
		t.Error("HasSeq true without {{seq}}")
	}
}

func TestParseErrors(t *testing.T) {
	for src, want := range map[string]string{
		"{{seq":           `unterminated "{{"`,
		"{{ nope }}":      `unknown template action "{{ nope }}"`,
		"{{bytes}}":       `unknown template action`,
		"{{bytes 0}}":     `{{bytes 0}}: size "0"`,
		"{{bytes 17MiB}}": `size "17MiB"`,
		"{{bytes -1}}":    `size "-1"`,
		"{{data.x}}":      "no data file",
	} {
		if _, err := Parse(src, nil); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want an error containing %q", src, err, want)
		}
	}
}

func TestData(t *testing.T) {
	dir := t.TempDir()
	csv := filepath.Join(dir, "u.csv")
	os.WriteFile(csv, []byte("user,token\nann,\"a,1\"\nbob,b2\n"), 0o644)
	d, err := LoadData(csv)
	if err != nil {
		t.Fatal(err)
	}
	tp, err := Parse(`{{data.user}}:{{data.token}}`, d)
	if err != nil {
		t.Fatal(err)
	}
	for seq, want := range map[uint64]string{1: "ann:a,1", 2: "bob:b2", 3: "ann:a,1", 0: "ann:a,1"} {
		if got := string(tp.Render(nil, seq, 0)); got != want {
			t.Errorf("seq %d: %q, want %q", seq, got, want)
		}
	}
	if _, err := Parse(`{{data.nope}}`, d); err == nil || !strings.Contains(err.Error(), `no column "nope"; columns: user, token`) {
		t.Errorf("unknown column: %v", err)
	}

	js := filepath.Join(dir, "u.json")
	os.WriteFile(js, []byte(`[{"user":"ann","n":1},{"n":{"a":[1]},"extra":true}]`), 0o644)
	d, err = LoadData(js)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(d.Columns, ",") != "user,n,extra" {
		t.Errorf("columns %v", d.Columns)
	}
	tp, _ = Parse(`{{data.n}}`, d)
	if got := string(tp.Render(nil, 2, 0)); got != `{"a":[1]}` {
		t.Errorf("row 2: %q", got)
	}
	// A row without a key the template reads is refused, naming the row
	// and the key: it rendered as nothing.
	for text, want := range map[string]string{
		`{{data.user}}|{{data.n}}`: `{{data.user}}: the data file ` + js + `, row 2: no key "user"`,
		`{{data.extra}}`:           `row 1: no key "extra"`,
	} {
		if _, err := Parse(text, d); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", text, err, want)
		}
	}

	for name, body := range map[string]string{
		"ragged.csv":  "a,b\n1\n",
		"empty.csv":   "",
		"header.csv":  "a,b\n",
		"dup.csv":     "a,a\n1,2\n",
		"obj.json":    `{"a":1}`,
		"elem.json":   `[{"a":1}, 2]`,
		"dupkey.json": `[{"a":1,"a":2}]`,
		"none.json":   `[]`,
		"x.txt":       "a\n1\n",
	} {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body), 0o644)
		if _, err := LoadData(p); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("LoadData(%s) = %v, want an error naming the file", name, err)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"", "{{seq}}", "a{{bytes 10}}b{{ seq }}", "{{", "}}{{data.x}}", "{{bytes 1MiB}}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tp, err := Parse(s, nil)
		if err != nil {
			return
		}
		out := tp.Render(nil, 42, 0)
		if !strings.Contains(s, "{{") && string(out) != s {
			t.Fatalf("a template without actions rendered %q as %q", s, out)
		}
	})
}

// TestDataCSVByteOrderMark, from the breaker: a CSV exported with a UTF-8
// byte order mark (as spreadsheets do) had no column "user": the mark
// was part of its name, and invisible in the message.
func TestDataCSVByteOrderMark(t *testing.T) {
	file := filepath.Join(t.TempDir(), "u.csv")
	os.WriteFile(file, []byte("\xef\xbb\xbfuser,password\nann,pw\n"), 0o644)
	d, err := LoadData(file)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Parse(`{{data.user}}`, d); err != nil {
		t.Errorf("the first column of a CSV with a byte order mark: %v", err)
	}
}

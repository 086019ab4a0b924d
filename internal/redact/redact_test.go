package redact

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

const secret = "K7QZXW3MPV2RJT6NYH4BCL5DFG8SAE9UKQ7ZXW3MPV2RJT" // 46 characters

// TestIssue12_PrefixAtCutIsSecret: a message shortened with the cut
// inside a secret keeps the secret's front part; a front part of 4 or
// more characters just before the cut mark is a secret too (issue 12:
// 24 of 46 characters leaked into every report).
func TestIssue12_PrefixAtCutIsSecret(t *testing.T) {
	r := New([]string{secret})
	for _, n := range []int{4, 5, 24, 45} {
		in := `status line "XTTP/1.1 502 ` + secret[:n] + Cut + `": not HTTP/1.0 or HTTP/1.1`
		got := r.String(in)
		if strings.Contains(got, secret[:4]) {
			t.Errorf("cut after %d characters: %q keeps the front of the secret", n, got)
		}
		if want := `status line "XTTP/1.1 502 ` + Mark + Cut + `": not HTTP/1.0 or HTTP/1.1`; got != want {
			t.Errorf("cut after %d characters:\n got %q\nwant %q", n, got, want)
		}
	}
	// Shorter than 4, or not at a cut: ordinary text.
	for _, in := range []string{"ab " + secret[:3] + Cut, secret[:10] + " and more", Cut + secret[:10]} {
		if got := r.String(in); got != in {
			t.Errorf("%q became %q", in, got)
		}
	}
	// Several cuts, each judged on its own.
	in := "a " + secret[:6] + Cut + " b " + secret[:9] + Cut + " c"
	if got, want := r.String(in), "a "+Mark+Cut+" b "+Mark+Cut+" c"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// Whole secrets are replaced as written and in their escaped forms; the
// longer of two nested secrets wins; short values are not secrets.
func TestRedactWholeAndEscaped(t *testing.T) {
	odd := `to<k>&"en\`
	r := New([]string{"ab", secret, odd, secret[:20]})
	for _, in := range []string{
		secret, "x" + secret + "y", odd, `to&lt;k&gt;&amp;&#34;en\`, `to\u003ck\u003e\u0026\"en\\`, `to<k>&\"en\\`,
	} {
		if got := r.String(in); strings.Contains(got, "to") && strings.Contains(got, "en") || strings.Contains(got, secret[:20]) {
			t.Errorf("%q became %q", in, got)
		}
	}
	if got := r.String("x" + secret + "y"); got != "x"+Mark+"y" {
		t.Errorf("nested secrets: %q", got)
	}
	if got := r.String("ab cd"); got != "ab cd" {
		t.Errorf("a 2-byte secret was redacted: %q", got)
	}
	var nilR *Redactor
	if got := nilR.String(secret); got != secret || !nilR.Empty() {
		t.Errorf("nil redactor: %q", got)
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// The writer redacts each write and passes the underlying error on.
func TestRedactWriter(t *testing.T) {
	r := New([]string{secret})
	var b bytes.Buffer
	w := r.Writer(&b)
	p := []byte("name " + secret + "\n")
	if n, err := w.Write(p); n != len(p) || err != nil {
		t.Fatalf("wrote %d, %v", n, err)
	}
	if got := b.String(); got != "name "+Mark+"\n" {
		t.Errorf("wrote %q", got)
	}
	if _, err := r.Writer(failWriter{}).Write(p); err == nil {
		t.Error("an error was lost")
	}
	if New(nil).Writer(&b) != &b {
		t.Error("a redactor without secrets wraps the writer")
	}
}

// TestIssue12_PrefixAtCutNonASCII: the front of a secret with multi-byte
// characters, cut between two characters, is secret too.
func TestIssue12_PrefixAtCutNonASCII(t *testing.T) {
	s := "Pa7hééééééééSecr3tQ"
	r := New([]string{s})
	for n := 4; n < len([]rune(s)); n++ {
		front := string([]rune(s)[:n])
		in := `status line "XTTP/1.1 502 PPPP POST /p/` + front + Cut + `": not HTTP`
		if got := r.String(in); strings.Contains(got, front[:4]) {
			t.Errorf("cut after %d characters: %q keeps the front of the secret", n, got)
		}
	}
}

// TestIssue12_JSONKeepsStructure: JSON redaction replaces a secret inside
// strings (keys too) and nowhere else, so the document stays valid and
// its layout unchanged.
func TestIssue12_JSONKeepsStructure(t *testing.T) {
	r := New([]string{"true", `ok":`})
	in := []byte("{\n  \"ok\": true,\n  \"h\": \"true\",\n  \"true\": [\"is true\", null],\n  \"q\": \"say \\\"ok\\\":\"\n}\n")
	got, err := r.JSON(in)
	if err != nil {
		t.Fatal(err)
	}
	want := "{\n  \"ok\": true,\n  \"h\": \"" + Mark + "\",\n  \"" + Mark + "\": [\"is " + Mark + "\", null],\n  \"q\": \"say \\\"" + Mark + "\"\n}\n"
	if string(got) != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if !json.Valid(got) {
		t.Errorf("not valid JSON:\n%s", got)
	}
	if same, _ := New(nil).JSON(in); string(same) != string(in) {
		t.Errorf("no secret changed the document")
	}
}

// TestJSONKeepingLeavesStructure: a secret equal to one of a document's
// own field names is kept where it is that field's key and redacted
// everywhere else: in a value, and in a key that is data (a map's).
func TestJSONKeepingLeavesStructure(t *testing.T) {
	r := New([]string{"response"})
	in := []byte(`{"response": {"p99": 1}, "errors_by": {"response": 2}, "name": "response", "list": ["response"]}`)
	out, err := r.JSONKeeping(in, map[string]bool{"response": true, "errors_by": true, "name": true, "list": true})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"response": {"p99": 1}, "errors_by": {"response": 2}, "name": "[redacted]", "list": ["[redacted]"]}`
	if string(out) != want {
		t.Errorf("got  %s\nwant %s", out, want)
	}
	out, err = r.JSON(in)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), `"response"`) {
		t.Errorf("JSON without keys to keep left the secret: %s", out)
	}
}

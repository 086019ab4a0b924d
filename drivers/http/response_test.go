package http

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	nethttp "net/http"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"
)

// parsed is what a reader made of one raw response stream.
type parsed struct {
	status int
	close  bool
	body   string
	rest   string // what is left after the response
	err    error
}

// parseOurs reads the final response of raw with our reader, keeping the
// body (so the MaxRuleBody path is the one exercised).
func parseOurs(raw string, head, wantHeaders bool) (p parsed, headers map[string]string) {
	br := bufio.NewReaderSize(strings.NewReader(raw), 64)
	var r response
	for {
		want := keep(0)
		if wantHeaders {
			want = keepHeaders
		}
		if p.err = readResponseHead(br, &r, want); p.err != nil {
			return p, nil
		}
		if r.status >= 200 || r.status == 101 {
			break
		}
	}
	var body bytes.Buffer
	if p.err = readBody(br, &r, head, &body); p.err != nil {
		return p, nil
	}
	rest, _ := io.ReadAll(br)
	return parsed{status: r.status, close: r.close, body: body.String(), rest: string(rest)}, r.headers
}

// parseStd reads the same with net/http, the reference.
func parseStd(raw string, head bool) (p parsed) {
	br := bufio.NewReader(strings.NewReader(raw))
	method := "GET"
	if head {
		method = "HEAD"
	}
	for {
		resp, err := nethttp.ReadResponse(br, &nethttp.Request{Method: method})
		if err != nil {
			p.err = err
			return p
		}
		if resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != 101 {
			continue
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			p.err = err
			return p
		}
		rest, _ := io.ReadAll(br)
		return parsed{status: resp.StatusCode, close: resp.Close, body: string(body), rest: string(rest)}
	}
}

// TestResponse_AgreesWithNetHTTP: on well-formed responses of every
// framing our reader finds the same status, body and remainder as
// net/http's, and closes at least when net/http would.
func TestResponse_AgreesWithNetHTTP(t *testing.T) {
	long := strings.Repeat("x", 300)
	for _, c := range []struct {
		name, raw string
		head      bool
		close     bool // what we must decide
	}{
		{"content-length", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloNEXT", false, false},
		{"zero length", "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", false, false},
		{"chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\n\r\nNEXT", false, false},
		{"chunked with trailer", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nX-Sum: 1\r\n\r\nNEXT", false, false},
		{"chunked overrides length", "HTTP/1.1 200 OK\r\nContent-Length: 99\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n", false, true},
		{"until close", "HTTP/1.1 200 OK\r\n\r\nall of it", false, true},
		{"http/1.0 closes", "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", false, true},
		{"http/1.0 keep-alive", "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok", false, false},
		{"connection close", "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok", false, true},
		{"connection tokens", "HTTP/1.1 200 OK\r\nConnection: Upgrade, CLOSE\r\nContent-Length: 2\r\n\r\nok", false, true},
		{"head ignores length", "HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\nNEXT", true, false},
		{"204 has no body", "HTTP/1.1 204 No Content\r\nContent-Length: 10\r\n\r\nNEXT", false, false},
		{"304 has no body", "HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked\r\n\r\nNEXT", false, false},
		{"interim responses", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 1\r\n\r\nz", false, false},
		{"no reason phrase", "HTTP/1.1 503\r\nContent-Length: 0\r\n\r\n", false, false},
		{"bare LF", "HTTP/1.1 200 OK\nContent-Length: 2\n\nok", false, false},
		{"repeated equal length", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok", false, false},
		{"length between blanks, leading zeros", "HTTP/1.1 200 OK\r\nContent-Length:\t 002 \t\r\nConnection:\tclose \r\n\r\nokNEXT", false, true},
		{"header longer than the buffer", "HTTP/1.1 200 OK\r\nX-Long: " + long + "\r\nContent-Length: 2\r\n\r\nok", false, false},
		{"reason longer than the buffer", "HTTP/1.1 200 " + long + "\r\nContent-Length: 2\r\n\r\nok", false, false},
		{"name longer than the buffer", "HTTP/1.1 200 OK\r\nX-" + long + ": 1\r\nContent-Length: 2\r\n\r\nok", false, false},
		{"framing field longer than the buffer", "HTTP/1.1 200 OK\r\nConnection: " + strings.Repeat("x, ", 100) + "close\r\nContent-Length: 2\r\n\r\nok", false, true},
		{"mixed-case names", "HTTP/1.1 200 OK\r\ncontent-LENGTH: 3\r\nconnection: Close\r\n\r\nabc", false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			ours, _ := parseOurs(c.raw, c.head, false)
			std := parseStd(c.raw, c.head)
			if ours.err != nil || std.err != nil {
				t.Fatalf("ours %v, net/http %v", ours.err, std.err)
			}
			if ours.status != std.status || ours.body != std.body || ours.rest != std.rest {
				t.Errorf("ours %d %q rest %q; net/http %d %q rest %q", ours.status, ours.body, ours.rest, std.status, std.body, std.rest)
			}
			if ours.close != c.close {
				t.Errorf("close = %v, want %v (net/http: %v)", ours.close, c.close, std.close)
			}
			if std.close && !ours.close {
				t.Error("net/http closes this connection and we would keep it")
			}
		})
	}
}

// TestResponse_Malformed: framing we cannot trust is an error, never a
// guess: bad-frame (errMalformed) or short (io.ErrUnexpectedEOF).
func TestResponse_Malformed(t *testing.T) {
	long := strings.Repeat("x", 300) // longer than parseOurs's buffer
	for _, c := range []struct {
		name, raw string
		want      error
	}{
		{"not http", "SSH-2.0-OpenSSH\r\n\r\n", errMalformed},
		{"http/2 preface", "PRI * HTTP/2.0\r\n\r\n", errMalformed},
		{"short code", "HTTP/1.1 20 OK\r\n\r\n", errMalformed},
		{"code 999", "HTTP/1.1 999 Weird\r\n\r\n", errMalformed},
		{"negative length", "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", errMalformed},
		{"plus length", "HTTP/1.1 200 OK\r\nContent-Length: +1\r\n\r\nx", errMalformed},
		{"conflicting lengths", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nabc", errMalformed},
		{"conflicting list", "HTTP/1.1 200 OK\r\nContent-Length: 2, 3\r\n\r\nabc", errMalformed},
		{"huge length", "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n", errMalformed},
		{"length past int64", "HTTP/1.1 200 OK\r\nContent-Length: 9223372036854775808\r\n\r\n", errMalformed},
		{"empty length", "HTTP/1.1 200 OK\r\nContent-Length: \t\r\n\r\n", errMalformed},
		{"tab in name", "HTTP/1.1 200 OK\r\nContent-Length\t: 2\r\n\r\nok", errMalformed},
		{"no colon", "HTTP/1.1 200 OK\r\nContent-Length 2\r\n\r\nok", errMalformed},
		{"space in name", "HTTP/1.1 200 OK\r\nContent-Length : 2\r\n\r\nok", errMalformed},
		{"folded line", "HTTP/1.1 200 OK\r\nX-A: 1\r\n  2\r\n\r\n", errMalformed},
		{"long name without colon", "HTTP/1.1 200 OK\r\nX-" + long + "\r\n\r\n", errMalformed},
		{"long name with a blank", "HTTP/1.1 200 OK\r\nX-" + long + " Y: 1\r\n\r\n", errMalformed},
		{"long folded line", "HTTP/1.1 200 OK\r\nX-A: 1\r\n " + long + "\r\n\r\n", errMalformed},
		{"long status, bad code", "HTTP/1.1 2000 " + long + "\r\n\r\n", errMalformed},
		{"long status cut", "HTTP/1.1 200 " + long, io.ErrUnexpectedEOF},
		{"long field cut", "HTTP/1.1 200 OK\r\nX-A: " + long, io.ErrUnexpectedEOF},
		{"cut in head", "HTTP/1.1 200 OK\r\nContent-Le", io.ErrUnexpectedEOF},
		{"cut status", "HTTP/1.1 2", io.ErrUnexpectedEOF},
		{"short body", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", io.ErrUnexpectedEOF},
		{"cut chunk", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhe", io.ErrUnexpectedEOF},
		{"no last chunk", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n", io.ErrUnexpectedEOF},
		{"cut trailer", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX-A: 1\r\n", io.ErrUnexpectedEOF},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, _ := parseOurs(c.raw, false, false)
			if !errors.Is(p.err, c.want) {
				t.Errorf("error %v, want %v", p.err, c.want)
			}
		})
	}
	if p, _ := parseOurs("", false, false); p.err != io.EOF {
		t.Errorf("nothing at all: %v, want io.EOF (the connection closed before a response)", p.err)
	}
	// A chunk-size line that is not hex: the chunked reader's own error.
	if p, _ := parseOurs("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", false, false); p.err == nil {
		t.Error("chunk size zz: accepted")
	}
}

// TestResponse_Headers: the rule's header map holds the first value per
// canonical name, and is emptied between responses.
func TestResponse_Headers(t *testing.T) {
	_, h := parseOurs("HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\nX-Id:  7 \r\nX-Id: 8\r\nContent-Length: 0\r\n\r\n", false, true)
	if h["Content-Type"] != "text/plain" || h["X-Id"] != "7" || len(h) != 3 {
		t.Errorf("headers %v", h)
	}
	br := bufio.NewReader(strings.NewReader("HTTP/1.1 200 OK\r\nX-A: 1\r\n\r\nHTTP/1.1 200 OK\r\nX-B: 2\r\n\r\n"))
	r := response{}
	for _, want := range []string{"X-A", "X-B"} {
		if err := readResponseHead(br, &r, keepHeaders); err != nil {
			t.Fatal(err)
		}
		if len(r.headers) != 1 || r.headers[want] == "" {
			t.Errorf("headers %v, want only %s", r.headers, want)
		}
	}
}

// FuzzResponse: any bytes give a response or an error, never a panic;
// where net/http accepts the stream too, both find the same status, body
// and remainder, and we close whenever net/http would.
func FuzzResponse(f *testing.F) {
	for _, s := range []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
		"HTTP/1.0 200 OK\r\n\r\nbody",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n",
		"HTTP/1.1 304 Not Modified\r\nConnection: close\r\n\r\n",
	} {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, raw string, head bool) {
		ours, _ := parseOurs(raw, head, true)
		std := parseStd(raw, head)
		if ours.err != nil || std.err != nil {
			return // stricter or laxer, both are errors of the target
		}
		if ours.status != std.status || ours.body != std.body || ours.rest != std.rest {
			t.Errorf("ours %d %q rest %q; net/http %d %q rest %q", ours.status, ours.body, ours.rest, std.status, std.body, std.rest)
		}
		if std.close && !ours.close {
			t.Error("net/http closes the connection and we would keep it")
		}
	})
}

// TestResponse_HostileSizes: what a hostile server can make the reader
// hold is bounded. A trailer section (after the last chunk, where the
// head's limit no longer applies) longer than MaxHeaderBytes, in one line
// or in many, is errHeaderTooLarge; it used to grow one slice without
// end (1.8 GB from one request). A folded Content-Length of half a
// million equal elements parses in one pass; it used to recurse once per
// element (128 MiB of stack per response).
func TestResponse_HostileSizes(t *testing.T) {
	chunked := "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n"
	for name, trailer := range map[string]string{
		"one long line": "X-T: " + strings.Repeat("a", MaxHeaderBytes+10) + "\r\n\r\n",
		"many lines":    strings.Repeat("X-T: aaaaaaaaaaaaaaaaaaaa\r\n", MaxHeaderBytes/20) + "\r\n",
	} {
		if p, _ := parseOurs(chunked+trailer, false, false); !errors.Is(p.err, errHeaderTooLarge) {
			t.Errorf("%s of trailer: error %v, want errHeaderTooLarge", name, p.err)
		}
	}
	list := strings.Repeat("2,", 500_000) + "2"
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	p, _ := parseOurs("HTTP/1.1 200 OK\r\nContent-Length: "+list+"\r\n\r\nok", false, false)
	runtime.ReadMemStats(&after)
	if p.err != nil || p.body != "ok" {
		t.Errorf("folded Content-Length of 500,001 twos: %v, body %q", p.err, p.body)
	}
	if grown := int64(after.StackSys) - int64(before.StackSys); grown > 8<<20 {
		t.Errorf("folded Content-Length grew the stacks by %d MiB", grown>>20)
	}
}

// TestIssue12_ClipOnCharacterBoundary: a quoted line is cut before a
// character that byte 64 falls inside, never in it, so that what precedes
// the cut mark is whole characters (the redactor judges a secret's front
// part there).
func TestIssue12_ClipOnCharacterBoundary(t *testing.T) {
	for pad := 50; pad < 70; pad++ {
		line := []byte(strings.Repeat("P", pad) + "Pa7hééééééééSecr3tQ and more")
		got := clip(line)
		body := strings.TrimSuffix(got, "…")
		if !utf8.ValidString(body) || len(body) > 64 || len(body) < 64-utf8.UTFMax+1 || !strings.HasPrefix(string(line), body) {
			t.Errorf("pad %d: clip = %q: want a prefix of at most 64 bytes ending on a character boundary", pad, got)
		}
	}
}

// With keepCookies the reader keeps every Set-Cookie value in order (RFC
// 6265 §3: never folded into one), case-insensitively, each head its
// own; without it none.
func TestSetCookieKept(t *testing.T) {
	raw := "HTTP/1.1 200 OK\r\nSet-Cookie: a=1; Path=/\r\nX-A: 1\r\nset-cookie:  b=2 \r\nContent-Length: 0\r\n\r\n" +
		"HTTP/1.1 204 No Content\r\nX-B: 2\r\n\r\n"
	br := bufio.NewReader(strings.NewReader(raw))
	var r response
	if err := readResponseHead(br, &r, keepCookies); err != nil {
		t.Fatal(err)
	}
	if strings.Join(r.cookies, "|") != "a=1; Path=/|b=2" || r.headers != nil {
		t.Errorf("cookies %q, headers %v; want a=1; Path=/ and b=2, no headers", r.cookies, r.headers)
	}
	if err := readResponseHead(br, &r, keepCookies); err != nil {
		t.Fatal(err)
	}
	if len(r.cookies) != 0 {
		t.Errorf("second response: cookies %q, want none", r.cookies)
	}
	br = bufio.NewReader(strings.NewReader(raw))
	if err := readResponseHead(br, &r, keepHeaders); err != nil {
		t.Fatal(err)
	}
	if len(r.cookies) != 0 || r.headers["Set-Cookie"] != "a=1; Path=/" {
		t.Errorf("without keepCookies: cookies %q, headers %v", r.cookies, r.headers)
	}
}

package http

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http/httputil"
	"net/textproto"
	"strconv"
	"unicode/utf8"
)

// The response reader is our own (issue 7): net/http.ReadResponse cost
// about 1 µs of client CPU per request here, most of it building a
// header map (textproto) that only a success rule reading headers needs.
// It reads what framing needs (RFC 9112): the status line, Content-Length,
// Transfer-Encoding and Connection, and builds the header map only when
// the rule asks for it. Chunked bodies go through net/http/httputil's
// chunked reader. Every read is bounded by the countingReader limit
// (MaxHeaderBytes) while the head is read. Lines are parsed in the
// connection's 16 KiB read buffer; a longer one is built whole only when
// its value is read (a framing field, or any field when the success rule
// reads headers), else its first 16 KiB are checked and the rest is read
// past (issue 12: a 100 MB status line was copied into a slice grown to
// the 1 MiB cap for every request, ~300 MiB RSS at 16 connections).

// errMalformed is the error of a response whose head breaks HTTP/1.x
// framing: Do books it as bad-frame (short-read when the peer then
// closed).
var errMalformed = errors.New("malformed HTTP response")

// malformed wraps errMalformed with what was wrong.
func malformed(format string, a ...any) error {
	return fmt.Errorf("%w: %s", errMalformed, fmt.Sprintf(format, a...))
}

// response is the head of one response: what framing, the success rule
// and the cookie jar need. A conn reuses one; headers and cookies are
// filled only when wanted.
type response struct {
	status  int
	http10  bool  // HTTP/1.0: close unless "Connection: keep-alive"
	close   bool  // the server ends the connection after this response
	length  int64 // Content-Length; -1 when absent
	chunked bool  // Transfer-Encoding ends in chunked
	encoded bool  // some other Transfer-Encoding: the body runs to close
	headers map[string]string
	cookies []string // the values of every Set-Cookie field, in order
	// bodyLen is how many body bytes readBody read (decoded, for a
	// chunked body), kept or not: more than it kept means the kept
	// body was cut.
	bodyLen int64
}

// keep says what readResponseHead keeps beyond what framing needs.
type keep uint8

const (
	// keepHeaders fills response.headers: the first value of every
	// field by canonical name (the success rule reads headers).
	keepHeaders keep = 1 << iota
	// keepCookies fills response.cookies: every Set-Cookie value, which
	// RFC 6265 §3 says is not folded into one (cookies: true).
	keepCookies
)

// noBody reports whether the response has no body whatever its headers
// say (RFC 9112 §6.3): HEAD, 1xx, 204 and 304.
func (r *response) noBody(head bool) bool {
	return head || r.status < 200 || r.status == 204 || r.status == 304
}

// readResponseHead reads one response head from br into r: the status line and
// the header fields up to the empty line. want says what it keeps besides
// framing: keepHeaders fills r.headers (first value per canonical name),
// keepCookies r.cookies (every Set-Cookie value). A connection closed
// before the first byte is io.EOF; after it, io.ErrUnexpectedEOF.
func readResponseHead(br *bufio.Reader, r *response, want keep) error {
	wantHeaders := want&keepHeaders != 0
	*r = response{length: -1, headers: r.headers, cookies: r.cookies[:0]}
	if wantHeaders {
		if r.headers == nil {
			r.headers = make(map[string]string)
		}
		clear(r.headers)
	}
	line, err := readLine(br, MaxHeaderBytes)
	long := err == errLongLine
	if err != nil && !long {
		return err
	}
	// The status code is in the line's first bytes: a longer reason
	// phrase is read past, never kept.
	if err := r.parseStatus(line); err != nil {
		return err
	}
	if long {
		if _, err := skipLine(br, false, MaxHeaderBytes-len(line)); err != nil {
			return err
		}
	}
	connKeepAlive := false
	for {
		line, err := readLine(br, MaxHeaderBytes)
		kept := true
		if err == errLongLine {
			line, kept, err = longField(br, line, want)
		}
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		if err != nil {
			return err
		}
		if !kept {
			continue // a long field nothing reads, skipped
		}
		if len(line) == 0 {
			break
		}
		if err := r.field(line, want, &connKeepAlive); err != nil {
			return err
		}
	}
	r.settle(connKeepAlive)
	return nil
}

// field reads one header field line (not empty, without its line end)
// into r: framing (Content-Length, Transfer-Encoding, Connection, which
// sets *connKeepAlive on "keep-alive") and what want keeps. A malformed
// line, or a Content-Length that does not parse or conflicts with an
// earlier one, is an errMalformed error.
func (r *response) field(line []byte, want keep, connKeepAlive *bool) error {
	if line[0] == ' ' || line[0] == '\t' {
		return malformed("obsolete line folding in header %q", clip(line))
	}
	name, value, ok := bytes.Cut(line, []byte{':'})
	if !ok || len(name) == 0 || hasBlank(name) {
		return malformed("header line %q", clip(line))
	}
	value = trimBlanks(value)
	switch {
	case asciiEqualFold(name, "Content-Length"):
		n, err := parseLength(value)
		if err != nil {
			return err
		}
		if r.length >= 0 && r.length != n {
			return malformed("conflicting Content-Length %d and %d", r.length, n)
		}
		r.length = n
	case asciiEqualFold(name, "Transfer-Encoding"):
		last := value
		if i := bytes.LastIndexByte(value, ','); i >= 0 {
			last = trimBlanks(value[i+1:])
		}
		r.chunked = asciiEqualFold(last, "chunked")
		r.encoded = !r.chunked
	case asciiEqualFold(name, "Connection"):
		for tok := range bytes.SplitSeq(value, []byte{','}) {
			tok = trimBlanks(tok)
			switch {
			case asciiEqualFold(tok, "close"):
				r.close = true
			case asciiEqualFold(tok, "keep-alive"):
				*connKeepAlive = true
			}
		}
	}
	if want&keepCookies != 0 && asciiEqualFold(name, "Set-Cookie") {
		r.cookies = append(r.cookies, string(value))
	}
	if want&keepHeaders != 0 {
		key := textproto.CanonicalMIMEHeaderKey(string(name))
		if _, seen := r.headers[key]; !seen {
			r.headers[key] = string(value)
		}
	}
	return nil
}

// settle ends a head's framing once all its fields are read
// (connKeepAlive: a Connection field said keep-alive).
func (r *response) settle(connKeepAlive bool) {
	if r.http10 && !connKeepAlive {
		r.close = true
	}
	if r.http10 && (r.chunked || r.encoded) {
		// HTTP/1.0 has no transfer codings: the field is ignored, as
		// net/http does, and the connection is not kept (RFC 9112 §6.1).
		r.chunked, r.encoded, r.close = false, false, true
	}
	if r.chunked || r.encoded {
		// Transfer-Encoding overrides Content-Length, and a message that
		// carries both must not be kept (RFC 9112 §6.3 item 3).
		if r.length >= 0 {
			r.close = true
		}
		r.length = -1
	}
}

// plainHead reads a final response's head from b when it is a plain one,
// as readResponseHead would with nothing kept beyond framing: the whole
// head within b and at most plainHeadMax bytes, every line ending in
// CRLF, a status of 200 to 599, and nothing readResponseHead would
// refuse. It returns the head's length; ok false
// says only that b is not such a head (it may be incomplete, interim,
// malformed or unusual): readResponseHead then reads it the long way and
// says what it is. The event loop takes this way first (loop.go): one
// pass over the bytes where they lie, no buffered reader.
func plainHead(b []byte, r *response) (n int, ok bool) {
	*r = response{length: -1, headers: r.headers, cookies: r.cookies[:0]}
	b = b[:min(len(b), plainHeadMax)]
	end := bytes.IndexByte(b, '\n')
	if end < 1 || b[end-1] != '\r' {
		return 0, false
	}
	if r.parseStatus(b[:end-1]) != nil || r.status < 200 {
		return 0, false
	}
	connKeepAlive := false
	for at := end + 1; ; {
		end := bytes.IndexByte(b[at:], '\n')
		if end < 1 || b[at+end-1] != '\r' {
			return 0, false
		}
		line := b[at : at+end-1]
		at += end + 1
		if len(line) == 0 {
			r.settle(connKeepAlive)
			return at, true
		}
		if !plainField(line) && r.field(line, 0, &connKeepAlive) != nil {
			return 0, false
		}
	}
}

// plainField reports whether line is a well-formed header field that
// framing does not read, so that field would only have checked it: a
// name without blanks, not empty, not starting a folded line, then a
// colon, and not as long as Content-Length, Transfer-Encoding or
// Connection. One pass over the name; its value is not looked at.
func plainField(line []byte) bool {
	for i, c := range line {
		switch c {
		case ':':
			n := i
			return n > 0 && n != len("Content-Length") && n != len("Transfer-Encoding") && n != len("Connection")
		case ' ', '\t':
			return false
		}
	}
	return false
}

// plainHeadMax bounds the heads plainHead reads: a longer one is read
// the long way.
const plainHeadMax = 8 << 10

// parseStatus reads "HTTP/1.x SP 3DIGIT [SP reason]".
func (r *response) parseStatus(line []byte) error {
	proto, rest, _ := bytes.Cut(line, []byte{' '})
	switch string(proto) {
	case "HTTP/1.1":
	case "HTTP/1.0":
		r.http10 = true
	default:
		return malformed("status line %q: not HTTP/1.0 or HTTP/1.1", clip(line))
	}
	code, _, _ := bytes.Cut(rest, []byte{' '})
	if len(code) != 3 || code[0] < '1' || code[0] > '5' || !isDigit(code[1]) || !isDigit(code[2]) {
		return malformed("status line %q: no 3-digit status code", clip(line))
	}
	r.status = int(code[0]-'0')*100 + int(code[1]-'0')*10 + int(code[2]-'0')
	return nil
}

// errLongLine is readLine's answer for a line longer than br's buffer:
// the line it returns is only the first bufferful (no line end), valid
// until the next read from br, and the rest is still unread. The caller
// skips the rest (skipLine), or reads it whole (wholeLine) when it needs
// it: a hostile line is never built only to be thrown away (issue 12).
var errLongLine = errors.New("line longer than the read buffer")

// readLine returns the next line without its CRLF (or bare LF). The slice
// is valid until the next read from br. A line longer than br's buffer
// is errLongLine, returned with its first bufferful.
func readLine(br *bufio.Reader, max int) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		if len(line) > max {
			return nil, errHeaderTooLarge
		}
		return line, errLongLine
	}
	if len(line) > max {
		return nil, errHeaderTooLarge
	}
	if err != nil {
		if err == io.EOF && len(line) > 0 {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}

// wholeLine reads the rest of the long line whose first bufferful is
// prefix (readLine's errLongLine) and returns the whole line without its
// line end, built in a new slice, up to max bytes: a longer one is
// errHeaderTooLarge (the head is also bounded by the countingReader
// limit; a trailer section only by this).
func wholeLine(br *bufio.Reader, prefix []byte, max int) ([]byte, error) {
	long := append([]byte(nil), prefix...)
	err := bufio.ErrBufferFull
	for err == bufio.ErrBufferFull {
		if len(long) > max {
			return nil, errHeaderTooLarge
		}
		var line []byte
		line, err = br.ReadSlice('\n')
		long = append(long, line...)
	}
	if len(long) > max {
		return nil, errHeaderTooLarge
	}
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	long = long[:len(long)-1]
	if n := len(long); n > 0 && long[n-1] == '\r' {
		long = long[:n-1]
	}
	return long, nil
}

// skipLine reads past the rest of a long line (after readLine's
// errLongLine) without keeping it, and returns the number of bytes it
// read: more than budget is errHeaderTooLarge. In a name (a header field
// whose name did not fit in the first bufferful) it checks, as it goes,
// that the name ends at a ':' and holds no blank.
func skipLine(br *bufio.Reader, name bool, budget int) (int, error) {
	n := 0
	for {
		chunk, err := br.ReadSlice('\n')
		n += len(chunk)
		if n > budget {
			return n, errHeaderTooLarge
		}
		if name {
			colon := bytes.IndexByte(chunk, ':')
			head := chunk
			if colon >= 0 {
				head, name = chunk[:colon], false
			}
			if bytes.ContainsAny(head, " \t\r\n") {
				return n, malformed("header line with a name longer than the read buffer and no ':' after it")
			}
		}
		switch err {
		case nil:
			return n, nil
		case bufio.ErrBufferFull:
		case io.EOF:
			return n, io.ErrUnexpectedEOF
		default:
			return n, err
		}
	}
}

// longField handles a header line longer than br's buffer, of which
// prefix (readLine's errLongLine) is the first bufferful. The line is
// read whole (up to the head's limit) only when something reads its
// value: Content-Length, Transfer-Encoding and Connection for framing,
// any field when the success rule reads headers, Set-Cookie for the
// cookie jar; kept says so. Any other is skipped, checked only as a
// field line (a name, a ':').
func longField(br *bufio.Reader, prefix []byte, want keep) (line []byte, kept bool, err error) {
	if prefix[0] == ' ' || prefix[0] == '\t' {
		return nil, false, malformed("obsolete line folding in header %q", clip(prefix))
	}
	name, _, ok := bytes.Cut(prefix, []byte{':'})
	if want&keepHeaders != 0 || ok && (asciiEqualFold(name, "Content-Length") ||
		asciiEqualFold(name, "Transfer-Encoding") || asciiEqualFold(name, "Connection") ||
		want&keepCookies != 0 && asciiEqualFold(name, "Set-Cookie")) {
		line, err = wholeLine(br, prefix, MaxHeaderBytes)
		return line, true, err
	}
	if len(name) == 0 || hasBlank(name) {
		return nil, false, malformed("header line %q", clip(prefix))
	}
	_, err = skipLine(br, !ok, MaxHeaderBytes-len(prefix))
	return nil, false, err
}

// parseLength parses a Content-Length value; "n, n, …" (a repeated field
// folded by a proxy) is n. One pass, no recursion: a hostile list of
// half a million elements costs a loop, not a stack.
func parseLength(v []byte) (int64, error) {
	if n, ok := decimal(v); ok {
		return n, nil // the usual value: one number
	}
	n := int64(-1)
	for elem := range bytes.SplitSeq(v, []byte{','}) {
		elem = trimBlanks(elem)
		m, err := strconv.ParseUint(string(elem), 10, 63)
		if err != nil || len(elem) == 0 || elem[0] == '+' {
			return 0, malformed("Content-Length %q", clip(v))
		}
		if n >= 0 && int64(m) != n {
			return 0, malformed("conflicting Content-Length %q", clip(v))
		}
		n = int64(m)
	}
	return n, nil
}

// decimal reads v as a decimal number of 1 to 18 digits, nothing else (no
// sign, no blank, no comma): 18 digits cannot overflow an int64. ok is
// false for anything else, which parseLength then reads the long way.
func decimal(v []byte) (n int64, ok bool) {
	if len(v) == 0 || len(v) > 18 {
		return 0, false
	}
	for _, b := range v {
		if !isDigit(b) {
			return 0, false
		}
		n = n*10 + int64(b-'0')
	}
	return n, true
}

// hasBlank reports whether b holds a space or a horizontal tab.
func hasBlank(b []byte) bool {
	for _, c := range b {
		if c == ' ' || c == '\t' {
			return true
		}
	}
	return false
}

// trimBlanks returns b without its leading and trailing spaces and
// horizontal tabs (optional whitespace, RFC 9110 §5.6.3). It is
// bytes.Trim(b, " \t") without building a cutset per call.
func trimBlanks(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

// readBody consumes the body of r from br, keeping up to MaxRuleBody
// bytes in keep when keep is not nil, and sets r.bodyLen. A body
// delimited by the end of the connection ends at io.EOF, which is its
// normal end.
func readBody(br *bufio.Reader, r *response, head bool, keep *bytes.Buffer) error {
	r.bodyLen = 0
	if r.noBody(head) {
		return nil
	}
	var err error
	switch {
	case r.chunked:
		r.bodyLen, err = consume(httputil.NewChunkedReader(br), keep, -1)
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
		return readTrailer(br)
	case r.length >= 0:
		r.bodyLen, err = consume(br, keep, r.length)
		return err
	default:
		r.close = true
		r.bodyLen, err = consume(br, keep, -1)
		return err
	}
}

// consume reads n bytes from src (to io.EOF when n < 0), copying the
// first MaxRuleBody of them to keep if it is not nil, and returns how
// many it read. Fewer than n bytes before the end is io.ErrUnexpectedEOF.
func consume(src io.Reader, keep *bytes.Buffer, n int64) (int64, error) {
	var read int64
	if keep != nil {
		limit := int64(MaxRuleBody)
		if n >= 0 {
			limit = min(limit, n)
		}
		got, err := keep.ReadFrom(io.LimitReader(src, limit))
		read = got
		if err != nil {
			return read, err
		}
		if n >= 0 {
			if got < limit {
				return read, io.ErrUnexpectedEOF
			}
			n -= got
		}
	}
	if br, ok := src.(*bufio.Reader); ok && n >= 0 {
		for n > 0 {
			step := int(min(n, 1<<30))
			d, err := br.Discard(step)
			n -= int64(d)
			read += int64(d)
			if err == io.EOF {
				return read, io.ErrUnexpectedEOF
			}
			if err != nil {
				return read, err
			}
		}
		return read, nil
	}
	if n >= 0 {
		got, err := io.CopyN(io.Discard, src, n)
		read += got
		if err == io.EOF && got < n {
			return read, io.ErrUnexpectedEOF
		}
		return read, err
	}
	got, err := io.Copy(io.Discard, src)
	return read + got, err
}

// readTrailer reads the trailer section after the last chunk, up to and
// including its empty line: at most MaxHeaderBytes in all, like a head
// (errHeaderTooLarge beyond).
func readTrailer(br *bufio.Reader) error {
	budget := MaxHeaderBytes
	for {
		line, err := readLine(br, budget)
		n := len(line) + 2
		if err == errLongLine {
			// Nothing reads a trailer: a long line is skipped, not kept.
			var rest int
			rest, err = skipLine(br, false, budget-len(line))
			n, line = len(line)+rest, nil
		}
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		if err != nil {
			return err
		}
		if len(line) == 0 && n == 2 {
			return nil
		}
		if budget -= n; budget <= 0 {
			return errHeaderTooLarge
		}
	}
}

// asciiEqualFold reports whether b equals the ASCII string s, ignoring case.
func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		x, y := b[i], s[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

func isDigit(b byte) bool { return '0' <= b && b <= '9' }

// clip shortens a line for an error message to 64 bytes, on a character
// boundary, marking the cut with "…": a cut inside a character would show
// a stray byte just before the mark, and the redactor, which treats a
// secret's front part (4+ characters) before the mark as secret, would
// not see the characters before it as that front part.
func clip(b []byte) string {
	if len(b) > 64 {
		n := 64
		for n > 64-utf8.UTFMax && !utf8.RuneStart(b[n]) {
			n--
		}
		return string(b[:n]) + "…"
	}
	return string(b)
}

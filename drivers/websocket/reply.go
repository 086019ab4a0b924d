package websocket

import (
	"context"
	"encoding/json"
	"io"

	"github.com/coder/websocket"
)

// maxKeptBuffer bounds the read buffer a link keeps between messages; a
// larger message's buffer is dropped after it.
const maxKeptBuffer = 64 << 10

// readMessage reads the next data message of ws into buf (emptied
// first, grown as needed) and returns its type and bytes. A message
// longer than max_message is refused from its frame header (frameGuard)
// or, failing that, by the library's read limit: either ends in an
// error.
func readMessage(ws *websocket.Conn, buf []byte) (websocket.MessageType, []byte, error) {
	typ, r, err := ws.Reader(context.Background())
	if err != nil {
		return 0, nil, err
	}
	buf = buf[:0]
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)] // grow
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		switch err {
		case nil:
		case io.EOF:
			return typ, buf, nil
		default:
			return 0, nil, err
		}
	}
}

// replyID reads the id at path (the correlate keys) of a reply b without
// decoding it, for a reply no rule reads. known says whether it could
// tell; when it could not (an id with escapes, a number that is not a
// plain integer below 10^15), the caller decodes b and asks field and
// idKey. ok says whether there is an id that can pair: the decimal
// digits of a sequence number (idKey), as a JSON string or a number.
// Anything else — b not JSON, no such field, null, true, an object — is
// known and not ok (an unknown id), as it is after decoding: the same
// reply gets the same verdict either way. Like json.Unmarshal into a
// map, the last of repeated keys counts.
func replyID(b []byte, path []string) (id uint64, ok, known bool) {
	if !json.Valid(b) {
		return 0, false, true
	}
	v := b[skipSpace(b, 0):]
	for _, k := range path {
		if len(v) == 0 || v[0] != '{' {
			return 0, false, true
		}
		var found []byte
		i := skipSpace(v, 1)
		for i < len(v) && v[i] == '"' {
			end := skipValue(v, i)
			key := v[i+1 : end-1]
			if !plain(key) {
				return 0, false, false // an escape, or not ASCII: the decoder knows
			}
			i = skipSpace(v, end)
			i = skipSpace(v, i+1) // past ':'
			end = skipValue(v, i)
			if string(key) == k {
				found = v[i:end]
			}
			i = skipSpace(v, end)
			if i < len(v) && v[i] == ',' {
				i = skipSpace(v, i+1)
			}
		}
		if found == nil {
			return 0, false, true
		}
		v = found
	}
	switch {
	case v[0] == '"':
		s := v[1 : len(v)-1]
		for _, c := range s {
			if c == '\\' {
				return 0, false, false
			}
		}
		id, ok = idKey(string(s))
		return id, ok, true
	case v[0] >= '0' && v[0] <= '9':
		if len(v) > 15 {
			return 0, false, false // may not be exact as a float64
		}
		for _, c := range v {
			if c < '0' || c > '9' {
				return 0, false, false // a fraction or an exponent: as float64
			}
		}
		id, ok = idKey(string(v))
		return id, ok, true
	case v[0] == '-':
		return 0, false, false
	}
	return 0, false, true // null, true, false, an object, an array
}

// idKey reads the sequence number a reply's id text spells: canonical
// decimal (digits, no sign, no leading zero), the only form a request's
// id takes.
func idKey(s string) (uint64, bool) {
	if s == "" || len(s) > 20 || (s[0] == '0' && len(s) > 1) {
		return 0, false
	}
	var n uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if n > (1<<64-1-d)/10 {
			return 0, false // overflows
		}
		n = n*10 + d
	}
	return n, true
}

// plain reports whether a JSON string's raw bytes are its text: printable
// ASCII without escapes.
func plain(s []byte) bool {
	for _, c := range s {
		if c == '\\' || c >= 0x80 {
			return false
		}
	}
	return true
}

// skipSpace returns the index of the first byte at or after i that is
// not JSON white space.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the index just past the JSON value that starts at i
// in b, which is valid JSON.
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		for i++; i < len(b); i++ {
			switch b[i] {
			case '\\':
				i++
			case '"':
				return i + 1
			}
		}
		return i
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = skipValue(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return i
	}
	for i < len(b) {
		switch b[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
		i++
	}
	return i
}

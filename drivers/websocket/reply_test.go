package websocket

import (
	"strings"
	"testing"
)

// slowID is how a reply's id is read after decoding it: the reference
// replyID must agree with whenever it knows.
func slowID(b []byte, path []string) (uint64, bool) {
	v, err := decode(b)
	if err != nil {
		return 0, false
	}
	text, ok := field(v, path)
	if !ok {
		return 0, false
	}
	return idKey(text)
}

var replyIDSeeds = []string{
	`{"id":42,"ok":true}`,           // a number
	`{"id":"42"}`,                   // a string
	` { "ok" : true , "id" : 7 } `,  // white space
	`{"id":1,"id":2}`,               // the last of repeated keys
	`{"id":042}`,                    // not JSON
	`{"id":4.2e1}`,                  // an exponent: decoded
	`{"id":42.0}`,                   // a fraction: decoded
	`{"id":"4\u0032"}`,              // an escape: decoded
	`{"id":-1}`,                     // negative
	`{"id":null}`,                   // null
	`{"id":true}`,                   // not a number
	`{"id":{"id":3}}`,               // an object
	`{"i\u0064":5}`,                 // an escaped key: decoded
	`{"id":"007"}`,                  // a leading zero
	`{"id":18446744073709551616}`,   // past uint64
	`{"id":"18446744073709551615"}`, // the largest uint64
	`{"id":9007199254740993}`,       // past 2^53: rounded as float64
	`{"a":{"b":[1,{"c":"}"}],"id":9}}`,
	`[1,2]`,
	`"id"`,
	``,
}

// replyID reads the same id as decoding does, or says it cannot.
func TestReplyIDAgreesWithDecode(t *testing.T) {
	for _, s := range replyIDSeeds {
		for _, path := range [][]string{{"id"}, {"a", "id"}, {"a", "b"}} {
			checkReplyID(t, []byte(s), path)
		}
	}
	if id, ok, known := replyID([]byte(`{"id":42}`), []string{"id"}); id != 42 || !ok || !known {
		t.Errorf("replyID = %d %v %v, want 42 true true", id, ok, known)
	}
}

func checkReplyID(t *testing.T, b []byte, path []string) {
	t.Helper()
	id, ok, known := replyID(b, path)
	if !known {
		return
	}
	wid, wok := slowID(b, path)
	if ok != wok || (ok && id != wid) {
		t.Errorf("%q at %s: replyID %d %v, decoding %d %v", b, strings.Join(path, "."), id, ok, wid, wok)
	}
}

func FuzzReplyID(f *testing.F) {
	for _, s := range replyIDSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkReplyID(t, []byte(s), []string{"id"})
		checkReplyID(t, []byte(s), []string{"a", "id"})
	})
}

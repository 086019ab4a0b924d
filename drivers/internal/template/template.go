// Package template parses and renders the message templates of the
// message drivers (WebSocket, binary frames), and loads the data files
// their {{data.NAME}} reads (LoadData). A template's text is parsed once,
// before any traffic, into literal parts and holes, and rendered per
// request into a caller's buffer without parsing and, for literals,
// {{seq}} and {{bytes N}}, without allocating.
//
// Actions (spaces inside the braces are allowed):
//
//	{{seq}}        the request's sequence number in decimal (1-based, unique in the run)
//	{{bytes N}}    N filler bytes from [a-z0-9], N a size (256, 1KiB, 1MiB);
//	               pseudo-random (fixed seed) and different from one seq to the next
//	{{data.NAME}}  column NAME of the request's data row (Data.Row: by
//	               default row (seq − 1) mod rows; see Order)
//
// Any other action, an unterminated `{{`, or a column the data file lacks
// is an error naming the action.
package template

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
)

// MaxBytes bounds {{bytes N}}: 16 MiB.
const MaxBytes = 16 << 20

type kind uint8

const (
	lit kind = iota
	seq
	filler
	column
)

type part struct {
	kind kind
	text string // lit: the text
	n    int    // filler: the size; column: the column's index
}

// Template is a parsed template. Its zero value renders nothing. It is
// safe for concurrent use.
type Template struct {
	parts []part
	data  *Data
	// pool holds 2·max(N) pseudo-random filler bytes; {{bytes N}} of seq
	// renders pool[o : o+N] with o = seq mod max(N).
	pool []byte
}

// Parse parses s. data may be nil when s has no {{data.…}} action.
func Parse(s string, data *Data) (*Template, error) {
	t := &Template{data: data}
	rest := s
	maxFill := 0
	for {
		i := strings.Index(rest, "{{")
		if i < 0 {
			t.addLit(rest)
			break
		}
		j := strings.Index(rest[i+2:], "}}")
		if j < 0 {
			return nil, fmt.Errorf("unterminated %q", "{{")
		}
		t.addLit(rest[:i])
		action := strings.TrimSpace(rest[i+2 : i+2+j])
		raw := "{{" + rest[i+2:i+2+j] + "}}"
		rest = rest[i+2+j+2:]
		switch f := strings.Fields(action); {
		case action == "seq":
			t.parts = append(t.parts, part{kind: seq})
		case len(f) == 2 && f[0] == "bytes":
			n, err := parseSize(f[1])
			if err != nil {
				return nil, fmt.Errorf("%s: %v", raw, err)
			}
			t.parts = append(t.parts, part{kind: filler, n: n})
			maxFill = max(maxFill, n)
		case strings.HasPrefix(action, "data."):
			name := strings.TrimPrefix(action, "data.")
			if data == nil {
				return nil, fmt.Errorf("%s: no data file (driver data: FILE)", raw)
			}
			c := data.Column(name)
			if c < 0 {
				return nil, fmt.Errorf("%s: the data file %s has no column %q; columns: %s", raw, data.File, name, strings.Join(data.Columns, ", "))
			}
			if err := data.Lacks(c); err != nil {
				return nil, fmt.Errorf("%s: %w", raw, err)
			}
			t.parts = append(t.parts, part{kind: column, n: c})
		default:
			return nil, fmt.Errorf("unknown template action %q; expected {{seq}}, {{bytes N}} or {{data.NAME}}", raw)
		}
	}
	if maxFill > 0 {
		const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
		r := rand.New(rand.NewPCG(1, 2))
		t.pool = make([]byte, 2*maxFill)
		for i := range t.pool {
			t.pool[i] = alphabet[r.IntN(len(alphabet))]
		}
	}
	return t, nil
}

func (t *Template) addLit(s string) {
	if s == "" {
		return
	}
	if n := len(t.parts); n > 0 && t.parts[n-1].kind == lit {
		t.parts[n-1].text += s
		return
	}
	t.parts = append(t.parts, part{kind: lit, text: s})
}

// Render appends the template rendered for the request with sequence
// number seqNo on connection slot slot (drivers.Request's Seq and Slot;
// the slot matters only to data_order: connection) to dst.
func (t *Template) Render(dst []byte, seqNo uint64, slot int) []byte {
	for _, p := range t.parts {
		switch p.kind {
		case lit:
			dst = append(dst, p.text...)
		case seq:
			dst = strconv.AppendUint(dst, seqNo, 10)
		case filler:
			o := int(seqNo % uint64(len(t.pool)/2))
			dst = append(dst, t.pool[o:o+p.n]...)
		case column:
			dst = append(dst, t.data.Row(seqNo, slot)[p.n]...)
		}
	}
	return dst
}

// MaxSeqDigits is the most digits {{seq}} renders: a run's sequence
// numbers stay below 2^63 (19 decimal digits).
const MaxSeqDigits = 19

// Size returns the length in bytes of t rendered for a request that
// reads data row row (nil when t reads no data) with a {{seq}} of
// MaxSeqDigits digits: the longest rendering of that row, since only
// {{seq}} and {{data.NAME}} vary in length. It does not allocate.
func (t *Template) Size(row []string) int {
	n := 0
	for _, p := range t.parts {
		switch p.kind {
		case lit:
			n += len(p.text)
		case seq:
			n += MaxSeqDigits
		case filler:
			n += p.n
		case column:
			n += len(row[p.n])
		}
	}
	return n
}

// HasSeq reports whether the template has a {{seq}} action.
func (t *Template) HasSeq() bool {
	for _, p := range t.parts {
		if p.kind == seq {
			return true
		}
	}
	return false
}

// parseSize reads N of {{bytes N}}: a count of bytes with an optional
// unit B, KiB or MiB, 1 ≤ N ≤ MaxBytes.
func parseSize(s string) (int, error) {
	mult := 1
	num := s
	for _, u := range []struct {
		suffix string
		mult   int
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"B", 1}} {
		if strings.HasSuffix(s, u.suffix) {
			num, mult = strings.TrimSuffix(s, u.suffix), u.mult
			break
		}
	}
	n, err := strconv.Atoi(num)
	if err != nil || n < 1 || n > MaxBytes/mult {
		return 0, fmt.Errorf("size %q: expected a whole number of bytes from 1 to 16MiB, e.g. 256 or 1KiB", s)
	}
	return n * mult, nil
}

package frame

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runner-dev/runner/drivers"
	"github.com/runner-dev/runner/schema"
)

// memcachedLayout is memcached's binary protocol header (24 bytes) as a
// scenario declares it (scenarios/memcached-binary.yaml), with the
// opcode from a data column.
func memcachedLayout() *schema.FrameLayout {
	v := func(x int64) *int64 { return &x }
	return &schema.FrameLayout{
		Fields: []schema.FrameField{
			{Name: "magic", Size: "u8", RequestValue: v(0x80), ResponseValue: v(0x81)},
			{Name: "opcode", Size: "u8", Column: "op"},
			{Name: "key_length", Size: "u16", LengthOf: "key"},
			{Name: "extras_length", Size: "u8", LengthOf: "extras"},
			{Name: "data_type", Size: "u8", Value: v(0)},
			{Name: "status", Size: "u16", Role: "status", RequestValue: v(0)},
			{Name: "body_length", Size: "u32", Role: "length"},
			{Name: "opaque", Size: "u32", Role: "id"},
			{Name: "cas", Size: "u64"},
		},
		Parts: []schema.FramePart{
			{Name: "extras", Template: "{{data.extras}}"},
			{Name: "key", Template: "{{data.key}}"},
			{Name: "value", Template: "{{data.value}}"},
		},
	}
}

// mcHeader builds a memcached binary header by hand (the protocol's
// table), independently of Layout.
func mcHeader(magic, opcode byte, keyLen uint16, extLen byte, status uint16, body, opaque uint32) []byte {
	h := make([]byte, 24)
	h[0], h[1] = magic, opcode
	binary.BigEndian.PutUint16(h[2:], keyLen)
	h[4] = extLen
	binary.BigEndian.PutUint16(h[6:], status)
	binary.BigEndian.PutUint32(h[8:], body)
	binary.BigEndian.PutUint32(h[12:], opaque)
	return h
}

// mcData writes a data file of op, extras, key, value rows (JSON, so
// that extras can hold zero bytes) and returns its directory.
func mcData(t *testing.T, rows string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ops.json"), []byte(rows), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// A SET row and a GET row render as memcached's own requests: the
// opcode from the row, the key and extras lengths of the rendered parts,
// the body length of all three, the vbucket 0 at the status's place.
func TestMemcachedRequests(t *testing.T) {
	dir := mcData(t, `[{"op": "0x01", "extras": "\u0000\u0000\u0000\u0000\u0000\u0000\u0000\u0000", "key": "k1", "value": "hello"},
	                   {"op": "0", "extras": "", "key": "k1", "value": ""}]`)
	d, err := New(schema.Frame{Layout: memcachedLayout(), Data: "ops.json"}, "tcp://127.0.0.1:1", dir)
	if err != nil {
		t.Fatal(err)
	}
	c := &conn{d: d}
	for _, tc := range []struct {
		seq  uint64
		want []byte
	}{
		{1, append(mcHeader(0x80, 0x01, 2, 8, 0, 8+2+5, 1), "\x00\x00\x00\x00\x00\x00\x00\x00k1hello"...)},
		{2, append(mcHeader(0x80, 0x00, 2, 0, 0, 2, 2), "k1"...)},
	} {
		bp, err := c.render(tc.seq, 0, tc.seq)
		if err != nil {
			t.Fatal(err)
		}
		if string(*bp) != string(tc.want) {
			t.Errorf("seq %d:\n got % x\nwant % x", tc.seq, *bp, tc.want)
		}
		release(bp)
	}
}

func TestMemcachedParse(t *testing.T) {
	l, err := Compile(memcachedLayout())
	if err != nil {
		t.Fatal(err)
	}
	if l.HeaderLen() != 24 {
		t.Fatalf("header %d bytes, want 24", l.HeaderLen())
	}
	// A hit: 4 bytes of flags, no key, a 5-byte value.
	h, err := l.Parse(mcHeader(0x81, 0, 0, 4, 0, 9, 77))
	if err != nil || h.ID != 77 || h.Length != 9 || h.Failed || h.Parts != [MaxParts]int64{4, 0, 5} {
		t.Errorf("hit: %+v %v", h, err)
	}
	// A miss: status 1, "Not found" as the value.
	h, err = l.Parse(mcHeader(0x81, 0, 0, 0, 1, 9, 78))
	if err != nil || !h.Failed || h.Status != 1 || h.Parts != [MaxParts]int64{0, 0, 9} {
		t.Errorf("miss: %+v %v", h, err)
	}
	if code := l.StatusCode(h.Status); code != "status-0x0001" {
		t.Errorf("code %q, want status-0x0001", code)
	}
	for _, c := range []struct {
		name, code, msg string
		hdr             []byte
	}{
		{"a request's magic", "bad-magic", "magic 0x80, expected 0x81", mcHeader(0x80, 0, 0, 0, 0, 0, 1)},
		{"key beyond the body", "bad-parts", "key_length 300 is more than the 9 bytes", mcHeader(0x81, 0, 300, 0, 0, 9, 1)},
		{"extras and key beyond the body", "bad-parts", "key_length 6 is more than the 5 bytes", mcHeader(0x81, 0, 6, 4, 0, 9, 1)},
		{"the largest key, no body", "bad-parts", "key_length 65535 is more than the 0 bytes", mcHeader(0x81, 0, 0xFFFF, 0, 0, 0, 1)},
		{"a hostile body length", "too-long", "length 4294967295 > max 1048576", mcHeader(0x81, 0, 0xFFFF, 0xFF, 0, 0xFFFFFFFF, 1)},
	} {
		_, err := l.Parse(c.hdr)
		var bf *BadFrame
		if !errors.As(err, &bf) || bf.Code != c.code || !strings.Contains(bf.Msg, c.msg) {
			t.Errorf("%s: %v, want %s %q", c.name, err, c.code, c.msg)
		}
	}
}

// With a length field for every part, the parts must fill the payload.
func TestPartsWithoutRest(t *testing.T) {
	l, err := Compile(&schema.FrameLayout{
		Fields: []schema.FrameField{
			{Name: "id", Size: "u16", Role: "id"},
			{Name: "len", Size: "u16", Role: "length"},
			{Name: "alen", Size: "u8", LengthOf: "a"},
		},
		Parts:      []schema.FramePart{{Name: "a", Template: "x"}},
		MaxPayload: 100,
	})
	if err != nil {
		t.Fatal(err)
	}
	if h, err := l.Parse([]byte{0, 1, 0, 3, 3}); err != nil || h.Parts[0] != 3 {
		t.Errorf("%+v %v", h, err)
	}
	if _, err := l.Parse([]byte{0, 1, 0, 4, 3}); err == nil || !strings.Contains(err.Error(), "add up to 3 bytes, and the payload is 4") {
		t.Errorf("a payload longer than its parts: %v", err)
	}
}

func TestCompileErrors_DerivedFields(t *testing.T) {
	v := func(x int64) *int64 { return &x }
	idLen := []schema.FrameField{{Name: "i", Size: "u32", Role: "id"}, {Name: "l", Size: "u32", Role: "length"}}
	with := func(fs ...schema.FrameField) []schema.FrameField { return append(fs, idLen...) }
	for _, c := range []struct {
		layout schema.FrameLayout
		key    string
		want   string
	}{
		{schema.FrameLayout{Fields: with(schema.FrameField{Name: "m", Size: "u8", Value: v(1), RequestValue: v(1)})}, "layout.fields[0].value", "value is both ways"},
		{schema.FrameLayout{Fields: with(schema.FrameField{Name: "m", Size: "u8", ResponseValue: v(256)})}, "layout.fields[0].response_value", "response_value 256 does not fit field m"},
		{schema.FrameLayout{Fields: with(schema.FrameField{Name: "m", Size: "u8", RequestValue: v(-1)})}, "layout.fields[0].request_value", "request_value -1 does not fit"},
		{schema.FrameLayout{Fields: []schema.FrameField{{Name: "i", Size: "u32", Role: "id", RequestValue: v(1)}, {Name: "l", Size: "u32", Role: "length"}}}, "layout.fields[0].request_value", "only a status field takes one"},
		{schema.FrameLayout{Fields: with(schema.FrameField{Name: "s", Size: "u16", Role: "status", ResponseValue: v(0)})}, "layout.fields[0].response_value", "replies are judged at it by its success values"},
		// A column field has no role: the message said it had.
		{schema.FrameLayout{Fields: with(schema.FrameField{Name: "op", Size: "u8", Column: "op", ResponseValue: v(1)})}, "layout.fields[0].response_value", "has column and a response_value; a column field is sent from the data row and not checked in replies"},
		{schema.FrameLayout{Fields: with(schema.FrameField{Name: "k", Size: "u8", LengthOf: "key", ResponseValue: v(1)}), Parts: []schema.FramePart{{Name: "key"}}}, "layout.fields[0].response_value", "in replies it is the length of their part key"},
		// value on a status field: what requests carry is request_value.
		{schema.FrameLayout{Fields: with(schema.FrameField{Name: "s", Size: "u16", Role: "status", Value: v(0)})}, "layout.fields[0].value", "write request_value: 0"},
		{schema.FrameLayout{Fields: with(schema.FrameField{Name: "s", Size: "u8", Success: []int64{0}})}, "layout.fields[0].success", "s is not one"},
		{schema.FrameLayout{Fields: with(schema.FrameField{Name: "s", Size: "u8", Role: "status", Success: []int64{256}})}, "layout.fields[0].success[0]", "success value 256 does not fit"},
		{schema.FrameLayout{Fields: with(schema.FrameField{Name: "s", Size: "u8", Role: "status", Success: []int64{}})}, "layout.fields[0].success", "every reply would be an error"},
		{schema.FrameLayout{Fields: with(schema.FrameField{Name: "s", Size: "u8", Role: "status"}, schema.FrameField{Name: "t", Size: "u8", Role: "status"})}, "layout.fields[1].role", "a second status field (t)"},
		{schema.FrameLayout{Fields: with(schema.FrameField{Name: "k", Size: "u8", LengthOf: "key"})}, "layout.fields[0].length_of", "layout.parts declares none"},
		{schema.FrameLayout{Fields: with(schema.FrameField{Name: "k", Size: "u8", LengthOf: "kee"}), Parts: []schema.FramePart{{Name: "key"}}}, "layout.fields[0].length_of", "no part named kee; parts: key"},
		{schema.FrameLayout{Fields: with(schema.FrameField{Name: "k", Size: "u8", LengthOf: "key"}, schema.FrameField{Name: "k2", Size: "u8", LengthOf: "key"}), Parts: []schema.FramePart{{Name: "key"}}}, "layout.fields[1].length_of", "part key already has a length field (k)"},
		{schema.FrameLayout{Fields: with(schema.FrameField{Name: "k", Size: "u8", LengthOf: "key", Value: v(1)}), Parts: []schema.FramePart{{Name: "key"}}}, "layout.fields[0].value", "has length_of and a constant value"},
		{schema.FrameLayout{Fields: with(schema.FrameField{Name: "k", Size: "u8", LengthOf: "key", Column: "op"}), Parts: []schema.FramePart{{Name: "key"}}}, "layout.fields[0].column", "length_of and column"},
		{schema.FrameLayout{Fields: []schema.FrameField{{Name: "i", Size: "u32", Role: "id", Column: "op"}, {Name: "l", Size: "u32", Role: "length"}}}, "layout.fields[0].role", "a role (id) and length_of or column"},
		{schema.FrameLayout{Fields: idLen, Parts: []schema.FramePart{{Name: "a"}, {Name: "b"}}}, "layout.parts", "parts a and b have no length_of field"},
		{schema.FrameLayout{Fields: idLen, Parts: []schema.FramePart{{Name: "a"}, {Name: "a"}}}, "layout.parts[1].name", `part name "a" used twice`},
		{schema.FrameLayout{Fields: idLen, Parts: make([]schema.FramePart, 9)}, "layout.parts", "9 parts; at most 8"},
	} {
		_, err := Compile(&c.layout)
		if !hasProblem(err, c.key, c.want) {
			t.Errorf("%+v: %v, want %q at %s", c.layout, err, c.want, c.key)
		}
	}
}

// The driver refuses columns it cannot read and parts beside a payload,
// each at its key.
func TestMemcachedConfigErrors(t *testing.T) {
	dir := mcData(t, `[{"op": "0x01", "extras": "", "key": "k", "value": ""}, {"op": "0x100", "extras": "", "key": "k", "value": ""}, {"op": "-1", "extras": "", "key": "k", "value": ""}]`)
	_, err := New(schema.Frame{Layout: memcachedLayout(), Data: "ops.json", Payload: "x"}, "tcp://127.0.0.1:1", dir)
	for key, want := range map[string]string{
		"layout.fields[1].column": `row 2: column op is "0x100"; expected a whole number from 0 to 255`,
		"layout.parts":            "leave payload and payload_file out",
	} {
		if !hasProblem(err, key, want) {
			t.Errorf("want %q at %s: %v", want, key, err)
		}
	}
	// A row without a key a part or a column field reads is refused,
	// naming the row and the column (it rendered as an empty part); a
	// decimal with a leading zero is refused (it read as 10 here, 8 in C).
	dir2 := mcData(t, `[{"op": "1", "extras": "", "key": "k", "value": "v"}, {"op": "010", "extras": "", "key": "k"}, {"extras": "", "key": "k"}, {"op": "0", "extras": "", "key": "k"}]`)
	_, err = New(schema.Frame{Layout: memcachedLayout(), Data: "ops.json"}, "tcp://127.0.0.1:1", dir2)
	for key, want := range map[string]string{
		"layout.parts[2].template": `ops.json, row 2 (and 2 more rows): no key "value"`,
		"layout.fields[1].column":  `ops.json, row 3: no key "op"`,
	} {
		if !hasProblem(err, key, want) {
			t.Errorf("want %q at %s: %v", want, key, err)
		}
	}
	dir2 = mcData(t, `[{"op": "010", "extras": "", "key": "k", "value": ""}]`)
	_, err = New(schema.Frame{Layout: memcachedLayout(), Data: "ops.json"}, "tcp://127.0.0.1:1", dir2)
	if !hasProblem(err, "layout.fields[1].column", `row 1: column op is "010"; expected a whole number from 0 to 255 (decimal without a leading zero`) {
		t.Errorf("leading zero: %v", err)
	}
	lay := memcachedLayout()
	lay.Parts = nil
	lay.Fields[2].LengthOf, lay.Fields[3].LengthOf = "", ""
	_, err = New(schema.Frame{Layout: lay}, "tcp://127.0.0.1:1", dir)
	if !hasProblem(err, "layout.fields[1].column", "column op: no data file") {
		t.Errorf("a column without data: %v", err)
	}
}

func hasProblem(err error, key, want string) bool {
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return false
	}
	for _, e := range j.Unwrap() {
		var ce *drivers.ConfigError
		if errors.As(e, &ce) && ce.Key == key && strings.Contains(ce.Error(), want) {
			return true
		}
	}
	return false
}

// Every data row's parts and payload are checked before any traffic,
// naming the file, the row and the part: only one rendering (the row of
// seq 2^63) was checked, so a 300-byte extras in row 1 or a payload over
// max_payload in row 8 passed validate and failed at run time, after the
// load began.
func TestEveryRowsSizesCheckedAtNew(t *testing.T) {
	row := func(extras, key, value string) string {
		return `{"op": "0", "extras": "` + extras + `", "key": "` + key + `", "value": "` + value + `"}`
	}
	var rows []string
	for i := range 9 {
		switch i {
		case 0, 4:
			rows = append(rows, row(strings.Repeat("e", 300), "k", "")) // u8 extras_length
		case 7:
			rows = append(rows, row("", "k", strings.Repeat("v", 2000))) // over max_payload
		default:
			rows = append(rows, row("", "k", ""))
		}
	}
	dir := mcData(t, "["+strings.Join(rows, ",")+"]")
	lay := memcachedLayout()
	lay.MaxPayload = 1024
	_, err := New(schema.Frame{Layout: lay, Data: "ops.json"}, "tcp://127.0.0.1:1", dir)
	for key, want := range map[string]string{
		"layout.parts[0].template": "ops.json, row 1 (and 1 more rows): part extras is 300 bytes; its length field extras_length holds at most 255",
		"layout.parts":             "ops.json, row 8: the payload is 2001 bytes; the layout allows at most 1024 (max_payload)",
	} {
		if !hasProblem(err, key, want) {
			t.Errorf("want %q at %s: %v", want, key, err)
		}
	}
	// {{seq}} counts at its longest: 19 digits.
	lay = memcachedLayout()
	lay.Parts[1].Template = strings.Repeat("k", 65535-18) + "{{seq}}"
	_, err = New(schema.Frame{Layout: lay, Data: "ops.json"}, "tcp://127.0.0.1:1", mcData(t, "["+row("", "k", "")+"]"))
	if !hasProblem(err, "layout.parts[1].template", "part key is 65536 bytes; its length field key_length holds at most 65535") {
		t.Errorf("seq at its longest: %v", err)
	}
}

// A part longer than its length field holds is never sent: should a row
// escape New's check, render refuses the request (request-too-long).
func TestPartTooLongAtRender(t *testing.T) {
	dir := mcData(t, `[{"op": "0", "extras": "", "key": "k", "value": ""}]`)
	lay := memcachedLayout()
	lay.MaxPayload = 1 << 20
	d, err := New(schema.Frame{Layout: lay, Data: "ops.json"}, "tcp://127.0.0.1:1", dir)
	if err != nil {
		t.Fatal(err)
	}
	d.data.Rows[0][d.data.Column("key")] = strings.Repeat("k", 70000)
	c := &conn{d: d}
	bp, err := c.render(1, 0, 1)
	release(bp)
	if err == nil || !strings.Contains(err.Error(), "part key of request 1 is 70000 bytes; its length field key_length holds at most 65535") {
		t.Errorf("render: %v", err)
	}
}

// fakeMemcached is a binary-protocol memcached on loopback, written from
// the protocol's description: GET (0x00) answers the value with 4 bytes
// of flags, or status 0x0001 "Not found"; SET (0x01) stores. It holds
// the replies of each connection until hold requests came, then answers
// them in reverse order, so that several are in flight at once. It
// counts the connections it accepted.
type fakeMemcached struct {
	mu       sync.Mutex
	items    map[string]string
	accepted atomic.Int64
}

func (m *fakeMemcached) serve(t *testing.T, hold int) string {
	m.items = map[string]string{}
	return serveTCP(t, func(_ int, nc net.Conn) {
		m.accepted.Add(1)
		var held [][]byte
		frames(nc, 24, 8, func(hdr, body []byte) bool {
			ext, kl := int(hdr[4]), int(binary.BigEndian.Uint16(hdr[2:]))
			key, value := string(body[ext:ext+kl]), body[ext+kl:]
			opaque := binary.BigEndian.Uint32(hdr[12:])
			var out []byte
			m.mu.Lock()
			switch v, ok := m.items[key]; {
			case hdr[1] == 0x01:
				m.items[key] = string(value)
				out = mcHeader(0x81, 0x01, 0, 0, 0, 0, opaque)
			case ok:
				out = append(mcHeader(0x81, 0, 0, 4, 0, uint32(4+len(v)), opaque), append([]byte{0, 0, 0, 0}, v...)...)
			default:
				out = append(mcHeader(0x81, 0, 0, 0, 1, 9, opaque), "Not found"...)
			}
			m.mu.Unlock()
			held = append(held, out)
			if len(held) < hold {
				return true
			}
			var all []byte
			for i := len(held) - 1; i >= 0; i-- {
				all = append(all, held[i]...)
			}
			held = held[:0]
			_, err := nc.Write(all)
			return err == nil
		})
	})
}

// A miss in flight with hits ends as its own status error, quoting the
// reply's text, and touches neither the other requests in flight nor
// the connection (the defect: a miss closed the connection and lost the
// requests queued behind it).
func TestStatusErrorKeepsConnection(t *testing.T) {
	var m fakeMemcached
	url := m.serve(t, 4)
	dir := mcData(t, `[{"op": "1", "extras": "\u0000\u0000\u0000\u0000\u0000\u0000\u0000\u0000", "key": "a", "value": "AAA"},
	                   {"op": "1", "extras": "\u0000\u0000\u0000\u0000\u0000\u0000\u0000\u0000", "key": "b", "value": "BB"},
	                   {"op": "0", "extras": "", "key": "x", "value": ""},
	                   {"op": "0", "extras": "", "key": "y", "value": ""},
	                   {"op": "0", "extras": "", "key": "a", "value": ""},
	                   {"op": "0", "extras": "", "key": "z", "value": ""},
	                   {"op": "0", "extras": "", "key": "b", "value": ""},
	                   {"op": "0", "extras": "", "key": "a", "value": ""}]`)
	d, c := dialFrame(t, schema.Frame{Layout: memcachedLayout(), Data: "ops.json"}, url, dir)
	// Rows 1–4 (two SETs, two misses) in flight at once, then rows 5–8
	// (a miss among three hits of the keys set).
	outs := make([]drivers.Outcome, 8)
	for _, round := range [][]int{{0, 1, 2, 3}, {4, 5, 6, 7}} {
		var wg sync.WaitGroup
		for _, i := range round {
			wg.Go(func() { outs[i] = do(c, uint64(i)+1, 5*time.Second) })
		}
		wg.Wait()
	}
	for i, o := range outs {
		switch i {
		case 0, 1: // SET
			if o.Class != drivers.OK || o.BytesIn != 24 {
				t.Errorf("request %d (SET): %v %q in %d (%v)", i+1, o.Class, o.Code, o.BytesIn, o.Err)
			}
		case 4, 6, 7: // GET a hit: 4 bytes of flags and the value
			if want := int64(24 + 4 + map[int]int{4: 3, 6: 2, 7: 3}[i]); o.Class != drivers.OK || o.BytesIn != want {
				t.Errorf("request %d (GET hit): %v %q in %d, want %d (%v)", i+1, o.Class, o.Code, o.BytesIn, want, o.Err)
			}
		default: // GET a miss
			if o.Class != drivers.Status || o.Code != "status-0x0001" || o.BytesIn != 24+9 ||
				o.Err == nil || o.Err.Error() != `status 0x0001, not a success value (0x0000): "Not found"` {
				t.Errorf("request %d (GET miss): %v %q in %d (%v)", i+1, o.Class, o.Code, o.BytesIn, o.Err)
			}
		}
	}
	if n := m.accepted.Load(); n != 1 {
		t.Errorf("%d connections accepted, want 1: a status error must not close the connection", n)
	}
	if s := d.Strays(); s.Late+s.UnknownID+s.DuplicateID != 0 || len(s.Closes) != 0 {
		t.Errorf("strays %+v, want none", s)
	}
}

// FuzzParseParts: no reply header, however hostile, panics the decoder of
// a layout with parts and a status; a header it accepts declares at most
// max_payload, in parts that are none negative and add up to it.
func FuzzParseParts(f *testing.F) {
	for _, h := range [][]byte{
		mcHeader(0x81, 0, 0, 4, 0, 9, 1),
		mcHeader(0x81, 0, 0, 0, 1, 9, 2),
		mcHeader(0x81, 0, 0xFFFF, 0xFF, 0, 0, 3),
		mcHeader(0x81, 0, 3, 4, 0, 6, 4),
		mcHeader(0x81, 0, 0, 0, 0, 0xFFFFFFFF, 5),
		mcHeader(0x80, 0, 0, 0, 0, 0, 6),
	} {
		f.Add(h)
	}
	l, err := Compile(memcachedLayout())
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := l.Parse(b)
		if err != nil {
			return
		}
		if h.Length < 0 || h.Length > l.MaxPayload() {
			t.Fatalf("accepted length %d", h.Length)
		}
		var sum int64
		for _, n := range h.Parts {
			if n < 0 {
				t.Fatalf("a negative part: %v", h.Parts)
			}
			sum += n
		}
		if sum != h.Length {
			t.Fatalf("parts %v add up to %d, length %d", h.Parts, sum, h.Length)
		}
		// The header's own bytes, read by hand, say the same.
		if ext, key := int64(b[4]), int64(binary.BigEndian.Uint16(b[2:])); h.Parts[0] != ext || h.Parts[1] != key {
			t.Fatalf("parts %v, header says extras %d key %d", h.Parts, ext, key)
		}
		if st := binary.BigEndian.Uint16(b[6:]); h.Failed != (st != 0) || h.Status != uint64(st) {
			t.Fatalf("status %d failed %v, header says %d", h.Status, h.Failed, st)
		}
	})
}

// dialFrame builds a driver and dials one connection of it, closed when
// the test ends.
func dialFrame(t *testing.T, cfg schema.Frame, url, dir string) (*Driver, drivers.Conn) {
	t.Helper()
	d, err := New(cfg, url, dir)
	if err != nil {
		t.Fatal(err)
	}
	c, err := d.Dial(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return d, c
}

// Hostile replies to a layout with parts and a status, at the driver: a
// key length beyond the body is a bad frame (bad-parts) found from the
// header, and the connection is closed as for any bad frame; a failed
// status with a 1 MiB body quotes 64 bytes of it and skips the rest
// (the next reply on the connection is read whole); a failed status
// whose body is cut short is that request's short-read.
func TestMemcachedHostileReplies(t *testing.T) {
	big := strings.Repeat("E", 1<<20-4)
	url := serveTCP(t, func(_ int, nc net.Conn) {
		frames(nc, 24, 8, func(hdr, _ []byte) bool {
			opaque := binary.BigEndian.Uint32(hdr[12:])
			var out []byte
			switch opaque {
			case 1: // a key of 300 bytes in a 9-byte body
				out = append(mcHeader(0x81, 0, 300, 0, 0, 9, opaque), "Not found"...)
			case 2: // status 0x0081 with a 1 MiB message, then seq 3's reply
				out = append(mcHeader(0x81, 0, 0, 4, 0x81, uint32(4+len(big)), opaque), "\x00\x00\x00\x00"+big...)
			case 3:
				out = mcHeader(0x81, 0, 0, 0, 0, 0, opaque)
			case 4: // status 0x0004, its body cut short by a close
				nc.Write(append(mcHeader(0x81, 0, 0, 0, 4, 100, opaque), "Invalid arg"...))
				nc.Close()
				return false
			}
			_, err := nc.Write(out)
			return err == nil
		})
	})
	dir := mcData(t, `[{"op": "0", "extras": "", "key": "k", "value": ""}]`)
	d, c := dialFrame(t, schema.Frame{Layout: memcachedLayout(), Data: "ops.json"}, url, dir)
	o := do(c, 1, 5*time.Second)
	if o.Class != drivers.BadFrame || o.Code != "bad-parts" || !strings.Contains(o.Err.Error(), "key_length 300 is more than the 9 bytes") {
		t.Errorf("key beyond the body: %v %q %v", o.Class, o.Code, o.Err)
	}
	o = do(c, 2, 5*time.Second)
	want := `status 0x0081, not a success value (0x0000): "` + big[:64] + `"…`
	if o.Class != drivers.Status || o.Code != "status-0x0081" || o.Err == nil || o.Err.Error() != want || o.BytesIn != 24+1<<20 {
		t.Errorf("a failed status with 1 MiB: %v %q in %d %.120v", o.Class, o.Code, o.BytesIn, o.Err)
	}
	if o := do(c, 3, 5*time.Second); o.Class != drivers.OK || o.BytesIn != 24 {
		t.Errorf("the reply after it: %v %q %v", o.Class, o.Code, o.Err)
	}
	if o := do(c, 4, 5*time.Second); o.Class != drivers.ShortRead || o.Code != "short-read" {
		t.Errorf("a failed status cut short: %v %q %v", o.Class, o.Code, o.Err)
	}
	if s := d.Strays(); s.Closes["bad-parts"] != 1 || s.Closes["short-read"] != 1 || len(s.Closes) != 2 {
		t.Errorf("closes %v, want one bad-parts and one short-read", s.Closes)
	}
}

// Rendering a request of parts and column fields allocates nothing (the
// frame buffer is pooled; the lengths and values live on the stack).
func TestRenderPartsAllocatesNothing(t *testing.T) {
	dir := mcData(t, `[{"op": "0x01", "extras": "\u0000\u0000\u0000\u0000\u0000\u0000\u0000\u0000", "key": "k1", "value": "hello"}, {"op": "0", "extras": "", "key": "k1", "value": ""}]`)
	d, err := New(schema.Frame{Layout: memcachedLayout(), Data: "ops.json"}, "tcp://127.0.0.1:1", dir)
	if err != nil {
		t.Fatal(err)
	}
	c := &conn{d: d}
	seq := uint64(0)
	if n := testing.AllocsPerRun(1000, func() {
		seq++
		bp, _ := c.render(seq, 0, seq)
		release(bp)
	}); n != 0 {
		t.Errorf("%v allocations per render, want 0", n)
	}
}

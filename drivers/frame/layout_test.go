package frame

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/runner-dev/runner/schema"
)

// lkdfHeader builds an LKDF header by hand, independently of Layout.
func lkdfHeader(magic uint32, version, typ byte, id, length uint32) []byte {
	h := make([]byte, 16)
	binary.BigEndian.PutUint32(h[0:], magic)
	h[4], h[5] = version, typ
	binary.BigEndian.PutUint32(h[8:], id)
	binary.BigEndian.PutUint32(h[12:], length)
	return h
}

func TestLKDFRequestHeader(t *testing.T) {
	l := LKDF()
	if l.HeaderLen() != 16 || l.MaxPayload() != 1<<20 || l.IDMask() != 0xFFFFFFFF {
		t.Fatalf("header %d max %d mask %x", l.HeaderLen(), l.MaxPayload(), l.IDMask())
	}
	got := l.AppendHeader([]byte("x"), 0x1_0000_0007, 1024)
	want := append([]byte("x"), lkdfHeader(LKDFMagic, 1, 1, 7, 1024)...)
	if string(got) != string(want) {
		t.Errorf("header\n got % x\nwant % x", got, want)
	}
}

func TestLKDFParse(t *testing.T) {
	l := LKDF()
	h, err := l.Parse(lkdfHeader(LKDFMagic, 1, 2, 42, 10))
	if err != nil || h.ID != 42 || h.Length != 10 {
		t.Fatalf("%+v %v", h, err)
	}
	if h, err := l.Parse(lkdfHeader(LKDFMagic, 1, 2, 1, 0)); err != nil || h.Length != 0 {
		t.Errorf("zero length (B17 e) is valid: %+v %v", h, err)
	}
	for _, c := range []struct {
		name, code, msg string
		hdr             []byte
	}{
		{"B17a huge length", "too-long", "length 2147483648 > max 1048576", lkdfHeader(LKDFMagic, 1, 2, 1, 0x80000000)},
		{"B17b max length", "too-long", "length 4294967295 > max 1048576", lkdfHeader(LKDFMagic, 1, 2, 1, 0xFFFFFFFF)},
		{"B17c GET magic", "bad-magic", "magic 0x47455420, expected 0x4C4B4446", lkdfHeader(0x47455420, 1, 2, 1, 0)},
		{"version", "bad-version", "version 0x07, expected 0x01", lkdfHeader(LKDFMagic, 7, 2, 1, 0)},
		{"a request as a reply", "bad-type", "type 1, expected the response type 2", lkdfHeader(LKDFMagic, 1, 1, 1, 0)},
		{"one over", "too-long", "length 1048577 > max 1048576", lkdfHeader(LKDFMagic, 1, 2, 1, 1<<20+1)},
	} {
		_, err := l.Parse(c.hdr)
		var bf *BadFrame
		if !errors.As(err, &bf) || bf.Code != c.code || !strings.Contains(bf.Msg, c.msg) {
			t.Errorf("%s: %v, want %s %q", c.name, err, c.code, c.msg)
		}
	}
}

func TestCustomLayout(t *testing.T) {
	v := func(x int64) *int64 { return &x }
	l, err := Compile(&schema.FrameLayout{
		ByteOrder: "little",
		Fields: []schema.FrameField{
			{Name: "len", Size: "u16", Role: "length"},
			{Name: "id", Size: "u64", Role: "id"},
			{Name: "tag", Size: "u8", Value: v(0xAB)},
		},
		LengthIncludesHeader: true,
		MaxPayload:           100,
	})
	if err != nil {
		t.Fatal(err)
	}
	got := l.AppendHeader(nil, 5, 3)
	want := []byte{11 + 3, 0, 5, 0, 0, 0, 0, 0, 0, 0, 0xAB}
	if string(got) != string(want) {
		t.Errorf("header % x, want % x", got, want)
	}
	if h, err := l.Parse(want); err != nil || h.ID != 5 || h.Length != 3 {
		t.Errorf("parse %+v %v", h, err)
	}
	short := []byte{10, 0, 5, 0, 0, 0, 0, 0, 0, 0, 0xAB} // 10 < the 11-byte header
	if _, err := l.Parse(short); err == nil || !strings.Contains(err.Error(), "shorter than the 11-byte header") {
		t.Errorf("length below the header: %v", err)
	}
	long := []byte{11 + 101, 0, 5, 0, 0, 0, 0, 0, 0, 0, 0xAB}
	if _, err := l.Parse(long); err == nil || !strings.Contains(err.Error(), "length 101 > max 100") {
		t.Errorf("too long: %v", err)
	}
}

func TestCompileErrors(t *testing.T) {
	v := func(x int64) *int64 { return &x }
	for _, c := range []struct {
		layout schema.FrameLayout
		key    string
		want   string
	}{
		{schema.FrameLayout{Fields: []schema.FrameField{{Name: "l", Size: "u32", Role: "length"}}}, "layout.fields", "no field with role id"},
		{schema.FrameLayout{Fields: []schema.FrameField{{Name: "i", Size: "u32", Role: "id"}}}, "layout.fields", "no field with role length"},
		{schema.FrameLayout{Fields: []schema.FrameField{{Name: "i", Size: "u8", Role: "id"}, {Name: "l", Size: "u32", Role: "length"}}}, "layout.fields[0].size", "would wrap every 256"},
		{schema.FrameLayout{Fields: []schema.FrameField{{Name: "m", Size: "u8", Value: v(256)}, {Name: "i", Size: "u32", Role: "id"}, {Name: "l", Size: "u32", Role: "length"}}}, "layout.fields[0].value", "value 256 does not fit field m (u8: 0 to 255)"},
		{schema.FrameLayout{Fields: []schema.FrameField{{Name: "i", Size: "u32", Role: "id"}, {Name: "l", Size: "u16", Role: "length"}}}, "layout.max_payload", "max_payload 1048576 does not fit the length field l (at most 65535)"},
		{schema.FrameLayout{Fields: []schema.FrameField{{Name: "t", Size: "u8", Role: "type"}, {Name: "i", Size: "u32", Role: "id"}, {Name: "l", Size: "u32", Role: "length"}}}, "layout.request_type", "a type field needs request_type and response_type"},
		{schema.FrameLayout{Fields: []schema.FrameField{{Name: "i", Size: "u32", Role: "id"}, {Name: "i", Size: "u32", Role: "length"}}}, "layout.fields[1].name", `field name "i" used twice`},
		{schema.FrameLayout{Fields: []schema.FrameField{{Name: "i", Size: "u24", Role: "id"}}}, "layout.fields[0].size", `size "u24"`},
	} {
		_, err := Compile(&c.layout)
		if !hasProblem(err, c.key, c.want) {
			t.Errorf("%+v: %v, want %q at %s", c.layout, err, c.want, c.key)
		}
	}
}

// FuzzParse: no header, however hostile, panics the decoder, and a
// header it accepts declares at most max_payload.
func FuzzParse(f *testing.F) {
	for _, h := range [][]byte{
		lkdfHeader(LKDFMagic, 1, 2, 1, 0x80000000),
		lkdfHeader(LKDFMagic, 1, 2, 1, 0xFFFFFFFF),
		lkdfHeader(0x47455420, 1, 2, 1, 0),
		lkdfHeader(LKDFMagic, 1, 2, 7, 0),
		lkdfHeader(LKDFMagic, 1, 2, 7, 1024),
		[]byte("GET / HTTP/1.0\r\n"),
	} {
		f.Add(h)
	}
	l := LKDF()
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := l.Parse(b)
		if err == nil && (h.Length < 0 || h.Length > l.MaxPayload()) {
			t.Fatalf("accepted length %d", h.Length)
		}
		if err == nil && len(b) == 16 {
			// Round trip: the same id and length re-encode to a header
			// that parses to the same values (type aside: requests are 1).
			re := l.AppendHeader(nil, h.ID, int(h.Length))
			if binary.BigEndian.Uint32(re[8:]) != uint32(h.ID) || binary.BigEndian.Uint32(re[12:]) != uint32(h.Length) {
				t.Fatalf("round trip % x → % x", b, re)
			}
		}
	})
}

// Package frame is the binary-frame driver of the drivers stage: a request
// is one frame, a header declared field by field (or the lkdf preset) and a
// payload from a template, written at once on a TCP connection; its reply is
// the frame that carries its request id, in any order. Replies are decoded
// with a strict header check before any payload byte is read, so a hostile
// length never makes the client allocate it.
package frame

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/runner-dev/runner/drivers"
	"github.com/runner-dev/runner/schema"
)

// Limits of a layout.
const (
	MaxHeader         = 64       // bytes
	DefaultMaxPayload = 1 << 20  // 1 MiB
	MaxMaxPayload     = 64 << 20 // 64 MiB
)

// LKDF constants of the preset (docs/design.md, "Drivers and reference
// targets"); the request and response type values 1 and 2 are this
// project's choice (the experiments the preset comes from do not fix them).
const (
	LKDFMagic        = 0x4C4B4446
	LKDFVersion      = 1
	LKDFRequestType  = 1
	LKDFResponseType = 2
)

// field is one compiled header field.
type field struct {
	name     string
	off      int
	size     int // bytes: 1, 2, 4, 8
	value    uint64
	constant bool
	role     string
}

// Layout is a compiled frame layout. It is immutable and safe for
// concurrent use.
type Layout struct {
	order      binary.ByteOrder
	fields     []field
	hdrLen     int
	id, length int // field indexes
	typ        int // field index, −1 without a type field
	inclHeader bool
	reqType    uint64
	respType   uint64
	maxPayload uint64
}

// LKDF is the lkdf preset's layout.
func LKDF() *Layout {
	v := func(x int64) *int64 { return &x }
	l, err := Compile(&schema.FrameLayout{
		Fields: []schema.FrameField{
			{Name: "magic", Size: "u32", Value: v(LKDFMagic)},
			{Name: "version", Size: "u8", Value: v(LKDFVersion)},
			{Name: "type", Size: "u8", Role: "type"},
			{Name: "flags", Size: "u16"},
			{Name: "requestId", Size: "u32", Role: "id"},
			{Name: "length", Size: "u32", Role: "length"},
		},
		RequestType:  LKDFRequestType,
		ResponseType: LKDFResponseType,
	})
	if err != nil {
		panic(err) // a constant layout
	}
	return l
}

// Compile checks and compiles a declared layout. Each problem is a
// drivers.ConfigError keyed under layout (layout.fields[2].value, …), all
// joined: an unknown size or role, a constant that does not fit its size
// or that has a role, no id field or more than one, no length field or
// more than one, more than one type field, a type field without
// request_type and response_type (or values that do not fit it), an id
// narrower than 16 bits, duplicate names, a header over MaxHeader bytes,
// a max_payload above MaxMaxPayload or the length field's range.
func Compile(fl *schema.FrameLayout) (*Layout, error) {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, &drivers.ConfigError{Key: "layout" + key, Err: fmt.Errorf(format, args...)})
	}
	l := &Layout{order: binary.BigEndian, id: -1, length: -1, typ: -1, inclHeader: fl.LengthIncludesHeader}
	switch fl.ByteOrder {
	case "", "big":
	case "little":
		l.order = binary.LittleEndian
	default:
		bad(".byte_order", "byte_order %q: expected big or little", fl.ByteOrder)
	}
	names := map[string]bool{}
	for i, fd := range fl.Fields {
		key := fmt.Sprintf(".fields[%d]", i)
		f := field{name: fd.Name, off: l.hdrLen, role: fd.Role}
		switch fd.Size {
		case "u8":
			f.size = 1
		case "u16":
			f.size = 2
		case "u32":
			f.size = 4
		case "u64":
			f.size = 8
		default:
			bad(key+".size", "size %q: expected u8, u16, u32 or u64", fd.Size)
			continue
		}
		// Names are compared without case: a bad constant's code is
		// bad-<name> in lower case.
		if fd.Name == "" {
			bad(key+".name", "a field needs a name")
		} else if names[strings.ToLower(fd.Name)] {
			bad(key+".name", "field name %q used twice (names are compared without case)", fd.Name)
		}
		names[strings.ToLower(fd.Name)] = true
		if fd.Value != nil {
			switch {
			case fd.Role != "":
				bad(key+".value", "field %s has a role (%s) and a constant value; a constant has no role", fd.Name, fd.Role)
			case *fd.Value < 0 || uint64(*fd.Value) > maxOf(f.size):
				bad(key+".value", "value %d does not fit field %s (%s: 0 to %d)", *fd.Value, fd.Name, fd.Size, maxOf(f.size))
			default:
				f.value, f.constant = uint64(*fd.Value), true
			}
		}
		idx := len(l.fields)
		switch fd.Role {
		case "":
		case "id":
			if l.id >= 0 {
				bad(key+".role", "a second id field (%s); expected one", fd.Name)
			}
			if f.size < 2 {
				bad(key+".size", "id field %s of 8 bits would wrap every 256 requests; use u16 or wider", fd.Name)
			}
			l.id = idx
		case "length":
			if l.length >= 0 {
				bad(key+".role", "a second length field (%s); expected one", fd.Name)
			}
			l.length = idx
		case "type":
			if l.typ >= 0 {
				bad(key+".role", "a second type field (%s); expected at most one", fd.Name)
			}
			l.typ = idx
		default:
			bad(key+".role", "role %q: expected id, length or type", fd.Role)
		}
		l.fields = append(l.fields, f)
		l.hdrLen += f.size
	}
	if l.hdrLen > MaxHeader {
		bad(".fields", "the header is %d bytes; at most %d", l.hdrLen, MaxHeader)
	}
	if l.id < 0 {
		bad(".fields", "no field with role id: replies could not be paired with requests")
	}
	if l.length < 0 {
		bad(".fields", "no field with role length: frames could not be delimited")
	}
	if l.typ >= 0 {
		size := l.fields[l.typ].size
		switch {
		case fl.RequestType == 0 && fl.ResponseType == 0:
			bad(".request_type", "a type field needs request_type and response_type")
		case fl.RequestType < 0 || uint64(fl.RequestType) > maxOf(size):
			bad(".request_type", "request_type %d does not fit the type field", fl.RequestType)
		case fl.ResponseType < 0 || uint64(fl.ResponseType) > maxOf(size):
			bad(".response_type", "response_type %d does not fit the type field", fl.ResponseType)
		}
		l.reqType, l.respType = uint64(fl.RequestType), uint64(fl.ResponseType)
	} else if fl.RequestType != 0 || fl.ResponseType != 0 {
		bad(".request_type", "request_type and response_type need a field with role type")
	}
	l.maxPayload = DefaultMaxPayload
	if fl.MaxPayload > 0 {
		l.maxPayload = uint64(fl.MaxPayload)
	}
	if l.maxPayload > MaxMaxPayload {
		bad(".max_payload", "max_payload %d: at most %d (64 MiB)", l.maxPayload, MaxMaxPayload)
	}
	if l.length >= 0 {
		top := maxOf(l.fields[l.length].size)
		need := l.maxPayload
		if l.inclHeader {
			need += uint64(l.hdrLen)
		}
		if need > top {
			bad(".max_payload", "max_payload %d does not fit the length field %s (at most %d)", l.maxPayload, l.fields[l.length].name, top)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return l, nil
}

func maxOf(size int) uint64 {
	if size >= 8 {
		return math.MaxUint64
	}
	return 1<<(8*size) - 1
}

// HeaderLen is the header's size in bytes.
func (l *Layout) HeaderLen() int { return l.hdrLen }

// MaxPayload is the largest payload a reply may declare.
func (l *Layout) MaxPayload() int64 { return int64(l.maxPayload) }

// IDMask is the largest request id the id field holds: request seq is
// sent as seq & IDMask (it wraps after that many requests).
func (l *Layout) IDMask() uint64 { return maxOf(l.fields[l.id].size) }

// AppendHeader appends the header of a request frame with id and a
// payload of n bytes (n ≤ the length field's range) to dst.
func (l *Layout) AppendHeader(dst []byte, id uint64, n int) []byte {
	start := len(dst)
	dst = append(dst, make([]byte, l.hdrLen)...)
	l.PutHeader(dst[start:], id, n)
	return dst
}

// PutHeader writes the header of a request frame with id and a payload
// of n bytes into h, which is HeaderLen bytes. It does not allocate.
func (l *Layout) PutHeader(h []byte, id uint64, n int) {
	for i, f := range l.fields {
		var v uint64
		switch {
		case f.constant:
			v = f.value
		case i == l.id:
			v = id & maxOf(f.size)
		case i == l.length:
			v = uint64(n)
			if l.inclHeader {
				v += uint64(l.hdrLen)
			}
		case i == l.typ:
			v = l.reqType
		}
		l.put(h[f.off:f.off+f.size], v)
	}
}

func (l *Layout) put(b []byte, v uint64) {
	switch len(b) {
	case 1:
		b[0] = byte(v)
	case 2:
		l.order.PutUint16(b, uint16(v))
	case 4:
		l.order.PutUint32(b, uint32(v))
	case 8:
		l.order.PutUint64(b, v)
	}
}

func (l *Layout) get(b []byte) uint64 {
	switch len(b) {
	case 1:
		return uint64(b[0])
	case 2:
		return uint64(l.order.Uint16(b))
	case 4:
		return uint64(l.order.Uint32(b))
	}
	return l.order.Uint64(b)
}

// Header is a decoded reply header.
type Header struct {
	// ID is the request id the reply answers.
	ID uint64
	// Length is the payload's length in bytes (≤ MaxPayload).
	Length int64
}

// BadFrame is a reply header that breaks the layout. Code names the
// broken rule: bad-<field> (a constant field with another value),
// bad-type (not the response type), too-long (a declared length above
// max_payload), bad-length (a length counting the header that is shorter
// than it).
type BadFrame struct {
	Code string
	Msg  string
}

// Error returns the message, which names the value and the limit.
func (e *BadFrame) Error() string { return e.Msg }

// Parse decodes and checks a reply header; hdr is HeaderLen bytes. It
// never reads past hdr and never allocates for the declared length.
func (l *Layout) Parse(hdr []byte) (Header, error) {
	var h Header
	if len(hdr) != l.hdrLen {
		return h, &BadFrame{Code: "short-header", Msg: fmt.Sprintf("header of %d bytes, expected %d", len(hdr), l.hdrLen)}
	}
	for i, f := range l.fields {
		v := l.get(hdr[f.off : f.off+f.size])
		switch {
		case f.constant && v != f.value:
			return h, &BadFrame{Code: "bad-" + strings.ToLower(f.name), Msg: fmt.Sprintf("%s 0x%0*X, expected 0x%0*X", f.name, 2*f.size, v, 2*f.size, f.value)}
		case i == l.typ && v != l.respType:
			return h, &BadFrame{Code: "bad-type", Msg: fmt.Sprintf("%s %d, expected the response type %d", f.name, v, l.respType)}
		case i == l.id:
			h.ID = v
		case i == l.length:
			n := v
			if l.inclHeader {
				if v < uint64(l.hdrLen) {
					return h, &BadFrame{Code: "bad-length", Msg: fmt.Sprintf("%s %d is shorter than the %d-byte header it counts", f.name, v, l.hdrLen)}
				}
				n = v - uint64(l.hdrLen)
			}
			if n > l.maxPayload {
				return h, &BadFrame{Code: "too-long", Msg: fmt.Sprintf("length %d > max %d", n, l.maxPayload)}
			}
			h.Length = int64(n)
		}
	}
	return h, nil
}

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
	"slices"
	"strings"

	"github.com/runner-dev/runner/drivers"
	"github.com/runner-dev/runner/schema"
)

// Limits of a layout.
const (
	MaxHeader         = 64       // bytes
	DefaultMaxPayload = 1 << 20  // 1 MiB
	MaxMaxPayload     = 64 << 20 // 64 MiB
	// MaxParts bounds layout.parts, and MaxColumns the fields sent from a
	// data column.
	MaxParts   = 8
	MaxColumns = 8
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
	name  string
	off   int
	size  int    // bytes: 1, 2, 4, 8
	value uint64 // sent in requests (value, request_value)
	send  bool   // value is sent
	want  uint64 // what replies must carry (value, response_value)
	check bool   // replies are checked against want
	role  string
	part  int // length_of: the part's index; −1 without
	col   int // column: the index among the layout's columns; −1 without
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
	status     int // field index, −1 without a status field
	success    []uint64
	parts      []part
	rest       int      // the part without a length field, −1 when every part has one
	columns    []string // data column names of the column fields, in field order
}

// part is one compiled payload part.
type part struct {
	name     string
	template string
	field    int // the index of its length_of field, −1 without
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
// a max_payload above MaxMaxPayload or the length field's range; value
// beside request_value or response_value, either on a field with a role
// (but request_value on a status field), more than one status field,
// success values that do not fit it (or none, or on another field); a
// field with more than one of role, length_of and column, length_of
// naming no part or a part that already has a length field, more than
// MaxParts parts or MaxColumns column fields, a part without a name or
// named twice, more than one part without a length field.
func Compile(fl *schema.FrameLayout) (*Layout, error) {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, &drivers.ConfigError{Key: "layout" + key, Err: fmt.Errorf(format, args...)})
	}
	l := &Layout{order: binary.BigEndian, id: -1, length: -1, typ: -1, status: -1, rest: -1, inclHeader: fl.LengthIncludesHeader}
	switch fl.ByteOrder {
	case "", "big":
	case "little":
		l.order = binary.LittleEndian
	default:
		bad(".byte_order", "byte_order %q: expected big or little", fl.ByteOrder)
	}
	partIdx := l.compileParts(fl.Parts, bad)
	names := map[string]bool{}
	for i, fd := range fl.Fields {
		key := fmt.Sprintf(".fields[%d]", i)
		f := field{name: fd.Name, off: l.hdrLen, role: fd.Role, part: -1, col: -1}
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
		idx := len(l.fields)
		l.compileValues(&f, fd, key, bad)
		if fd.LengthOf != "" {
			switch j, ok := partIdx[fd.LengthOf]; {
			case len(fl.Parts) == 0:
				bad(key+".length_of", "length_of names part %s, and layout.parts declares none", fd.LengthOf)
			case !ok:
				bad(key+".length_of", "no part named %s; parts: %s", fd.LengthOf, strings.Join(l.partNames(), ", "))
			case l.parts[j].field >= 0:
				bad(key+".length_of", "part %s already has a length field (%s)", fd.LengthOf, fl.Fields[l.parts[j].field].Name)
			default:
				f.part = j
				l.parts[j].field = idx
			}
		}
		if fd.Column != "" {
			f.col = len(l.columns)
			l.columns = append(l.columns, fd.Column)
			if len(l.columns) == MaxColumns+1 {
				bad(key+".column", "more than %d fields sent from data columns", MaxColumns)
			}
		}
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
		case "status":
			if l.status >= 0 {
				bad(key+".role", "a second status field (%s); expected at most one", fd.Name)
			}
			l.status = idx
			l.success = []uint64{0}
			if fd.Success != nil {
				l.success = nil
				if len(fd.Success) == 0 {
					bad(key+".success", "no success values: every reply would be an error; leave success out for the default [0]")
				}
			}
			for j, v := range fd.Success {
				if v < 0 || uint64(v) > maxOf(f.size) {
					bad(fmt.Sprintf("%s.success[%d]", key, j), "success value %d does not fit field %s (%s: 0 to %d)", v, fd.Name, fd.Size, maxOf(f.size))
				}
				l.success = append(l.success, uint64(v))
			}
		default:
			bad(key+".role", "role %q: expected id, length, type or status", fd.Role)
		}
		if fd.Success != nil && fd.Role != "status" {
			bad(key+".success", "success lists the values of a status field (role: status), and %s is not one", fd.Name)
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
	for j, p := range l.parts {
		if p.field < 0 && l.rest >= 0 && len(l.parts) > 1 {
			bad(".parts", "parts %s and %s have no length_of field: a reply's payload could not be split into its parts; give all but one a header field with length_of", l.parts[l.rest].name, p.name)
			break
		}
		if p.field < 0 {
			l.rest = j
		}
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

// compileParts compiles layout.parts into l.parts and returns each
// part's index by name: at most MaxParts parts, each named once.
func (l *Layout) compileParts(parts []schema.FramePart, bad func(key, format string, args ...any)) map[string]int {
	idx := map[string]int{}
	if len(parts) > MaxParts {
		bad(".parts", "%d parts; at most %d", len(parts), MaxParts)
	}
	for j, p := range parts {
		key := fmt.Sprintf(".parts[%d].name", j)
		switch _, dup := idx[p.Name]; {
		case p.Name == "":
			bad(key, "a part needs a name")
		case dup:
			bad(key, "part name %q used twice", p.Name)
		}
		idx[p.Name] = j
		l.parts = append(l.parts, part{name: p.Name, template: p.Template, field: -1})
	}
	return idx
}

func (l *Layout) partNames() []string {
	var names []string
	for _, p := range l.parts {
		names = append(names, p.name)
	}
	return names
}

// compileValues compiles what field f sends and checks: value (both
// ways), request_value and response_value (one way each); a field with
// a role takes none of them but request_value on a status field (what
// requests carry at its place), and a field with length_of or column
// takes none.
func (l *Layout) compileValues(f *field, fd schema.FrameField, key string, bad func(key, format string, args ...any)) {
	fits := func(k string, v int64) bool {
		if v < 0 || uint64(v) > maxOf(f.size) {
			bad(key+"."+k, "%s %d does not fit field %s (%s: 0 to %d)", k, v, fd.Name, fd.Size, maxOf(f.size))
			return false
		}
		return true
	}
	derived := ""
	switch {
	case fd.Role != "" && (fd.LengthOf != "" || fd.Column != ""):
		bad(key+".role", "field %s has a role (%s) and length_of or column; expected one of them", fd.Name, fd.Role)
	case fd.Role != "":
		derived = "a role (" + fd.Role + ")"
	case fd.LengthOf != "" && fd.Column != "":
		bad(key+".column", "field %s has length_of and column; expected at most one", fd.Name)
	case fd.LengthOf != "":
		derived = "length_of"
	case fd.Column != "":
		derived = "column"
	}
	if fd.Value != nil {
		switch {
		case fd.Role == "status":
			bad(key+".value", "field %s has a role (status) and a constant value; replies are judged at it by success, and what requests carry at its place is request_value: write request_value: %d", fd.Name, *fd.Value)
		case derived != "":
			bad(key+".value", "field %s has %s and a constant value; a constant has no role, length_of or column", fd.Name, derived)
		case fd.RequestValue != nil || fd.ResponseValue != nil:
			bad(key+".value", "field %s has value and request_value or response_value; value is both ways, so give either value or the other two", fd.Name)
		case fits("value", *fd.Value):
			f.value, f.send = uint64(*fd.Value), true
			f.want, f.check = f.value, true
		}
	}
	if fd.RequestValue != nil {
		switch {
		case derived != "" && fd.Role != "status":
			bad(key+".request_value", "field %s has %s and a request_value; only a status field takes one (what requests carry at its place)", fd.Name, derived)
		case fd.Value == nil && fits("request_value", *fd.RequestValue):
			f.value, f.send = uint64(*fd.RequestValue), true
		}
	}
	if fd.ResponseValue != nil {
		switch {
		case derived != "":
			bad(key+".response_value", "field %s has %s and a response_value; %s", fd.Name, derived, unchecked(fd))
		case fd.Value == nil && fits("response_value", *fd.ResponseValue):
			f.want, f.check = uint64(*fd.ResponseValue), true
		}
	}
}

// unchecked says why a derived field (fd: a role, length_of or column)
// takes no response_value.
func unchecked(fd schema.FrameField) string {
	switch {
	case fd.Role == "status":
		return "replies are judged at it by its success values"
	case fd.Role != "":
		return "replies are checked at it by its role"
	case fd.LengthOf != "":
		return "in replies it is the length of their part " + fd.LengthOf
	}
	return "a column field is sent from the data row and not checked in replies; to check replies, give them a constant on a field of its own"
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
// payload of n bytes (n ≤ the length field's range) to dst, its part
// lengths and column values 0.
func (l *Layout) AppendHeader(dst []byte, id uint64, n int) []byte {
	start := len(dst)
	dst = append(dst, make([]byte, l.hdrLen)...)
	l.PutHeader(dst[start:], id, n)
	return dst
}

// PutHeader writes the header of a request frame with id and a payload
// of n bytes into h, which is HeaderLen bytes, its part lengths and
// column values 0. It does not allocate.
func (l *Layout) PutHeader(h []byte, id uint64, n int) {
	l.PutRequest(h, &Request{ID: id, Length: n})
}

// Request is what a request frame's header says beyond the layout's
// constants.
type Request struct {
	// ID is the request id (cut to the id field).
	ID uint64
	// Length is the payload's length in bytes.
	Length int
	// Parts are the lengths in bytes of the layout's parts, in order
	// (Layout.Parts); each must fit its length_of field (Layout.PartMax).
	Parts [MaxParts]int
	// Columns are the values of the column fields, in field order
	// (Layout.Columns).
	Columns [MaxColumns]uint64
}

// PutRequest writes the header of request r into h, which is HeaderLen
// bytes. It does not allocate.
func (l *Layout) PutRequest(h []byte, r *Request) {
	for i, f := range l.fields {
		var v uint64
		switch {
		case f.send:
			v = f.value
		case i == l.id:
			v = r.ID & maxOf(f.size)
		case i == l.length:
			v = uint64(r.Length)
			if l.inclHeader {
				v += uint64(l.hdrLen)
			}
		case i == l.typ:
			v = l.reqType
		case f.part >= 0:
			v = uint64(r.Parts[f.part])
		case f.col >= 0:
			v = r.Columns[f.col]
		}
		l.put(h[f.off:f.off+f.size], v)
	}
}

// Parts returns the names and templates of the layout's payload parts
// (layout.parts), in order; none without parts.
func (l *Layout) Parts() (names, templates []string) {
	for _, p := range l.parts {
		names, templates = append(names, p.name), append(templates, p.template)
	}
	return names, templates
}

// PartMax returns the longest part j may be: its length field's range
// (the length field's without one).
func (l *Layout) PartMax(j int) uint64 {
	if f := l.parts[j].field; f >= 0 {
		return maxOf(l.fields[f].size)
	}
	return l.maxPayload
}

// PartField names part j's length_of field ("" without one).
func (l *Layout) PartField(j int) string {
	if f := l.parts[j].field; f >= 0 {
		return l.fields[f].name
	}
	return ""
}

// Column is a header field sent from a data column.
type Column struct {
	// Field is the field's index in layout.fields; Name the column's.
	Field int
	Name  string
	// Max is the largest value the field holds.
	Max uint64
}

// Columns returns the column fields in field order.
func (l *Layout) Columns() []Column {
	var cs []Column
	for i, f := range l.fields {
		if f.col >= 0 {
			cs = append(cs, Column{Field: i, Name: l.columns[f.col], Max: maxOf(f.size)})
		}
	}
	return cs
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
	// Failed is set when the status field holds a value outside its
	// success values; Status is the value (0 without a status field).
	Failed bool
	Status uint64
	// Parts are the lengths in bytes of the reply's parts (Layout.Parts),
	// in order: those the header declares and the rest of the payload;
	// they add up to Length.
	Parts [MaxParts]int64
}

// BadFrame is a reply header that breaks the layout. Code names the
// broken rule: bad-<field> (a constant field with another value),
// bad-type (not the response type), too-long (a declared length above
// max_payload), bad-length (a length counting the header that is shorter
// than it), bad-parts (part lengths that do not add up to the payload:
// more than it, or, when every part has a length field, other than it).
type BadFrame struct {
	Code string
	Msg  string
}

// Error returns the message, which names the value and the limit.
func (e *BadFrame) Error() string { return e.Msg }

// Parse decodes and checks a reply header; hdr is HeaderLen bytes. It
// never reads past hdr and never allocates for the declared lengths: a
// part length beyond the payload is a bad frame here, before any of the
// payload is read. A status outside the success values is not a bad
// frame (Header.Failed): the reply is whole, and the connection goes on.
func (l *Layout) Parse(hdr []byte) (Header, error) {
	var h Header
	if len(hdr) != l.hdrLen {
		return h, &BadFrame{Code: "short-header", Msg: fmt.Sprintf("header of %d bytes, expected %d", len(hdr), l.hdrLen)}
	}
	for i, f := range l.fields {
		v := l.get(hdr[f.off : f.off+f.size])
		switch {
		case f.check && v != f.want:
			return h, &BadFrame{Code: "bad-" + strings.ToLower(f.name), Msg: fmt.Sprintf("%s 0x%0*X, expected 0x%0*X", f.name, 2*f.size, v, 2*f.size, f.want)}
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
		case i == l.status:
			h.Status = v
			h.Failed = !slices.Contains(l.success, v)
		case f.part >= 0:
			// Bounded by the field's size (u64 too: compared, never
			// added, below before it is known to be within Length).
			h.Parts[f.part] = int64(min(v, math.MaxInt64))
		}
	}
	if len(l.parts) > 0 {
		left := h.Length
		for j, p := range l.parts {
			if p.field < 0 {
				continue
			}
			if h.Parts[j] > left {
				return h, &BadFrame{Code: "bad-parts", Msg: fmt.Sprintf("%s %d is more than the %d bytes of the payload left for part %s (payload %d bytes)", l.fields[p.field].name, h.Parts[j], left, p.name, h.Length)}
			}
			left -= h.Parts[j]
		}
		switch {
		case l.rest >= 0:
			h.Parts[l.rest] = left
		case left != 0:
			return h, &BadFrame{Code: "bad-parts", Msg: fmt.Sprintf("the parts' lengths add up to %d bytes, and the payload is %d", h.Length-left, h.Length)}
		}
	}
	return h, nil
}

// StatusCode is the error code of a reply with status v:
// status-0x<v in hexadecimal, two digits a byte of the field>
// (status-0x0001 for a u16 field holding 1).
func (l *Layout) StatusCode(v uint64) string {
	size := 8
	if l.status >= 0 {
		size = l.fields[l.status].size
	}
	return fmt.Sprintf("status-0x%0*X", 2*size, v)
}

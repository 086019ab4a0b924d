package frametarget

import (
	"encoding/binary"
	"fmt"
)

// The LKDF wire format. A frame is a 16-byte big-endian header followed by
// its payload:
//
//	offset size field
//	0      4    magic     0x4C4B4446 ("LKDF")
//	4      1    version   1
//	5      1    type      1 = request, 2 = response
//	6      2    flags     opaque; a response repeats its request's
//	8      4    requestId opaque; a response repeats its request's
//	12     4    length    payload length in bytes, header excluded; ≤ MaxPayload
const (
	// Magic is the first four bytes of every frame, "LKDF".
	Magic uint32 = 0x4C4B4446
	// Version is the only protocol version.
	Version = 1
	// TypeRequest is the type of a frame sent by a client.
	TypeRequest = 1
	// TypeResponse is the type of a frame sent by the target.
	TypeResponse = 2
	// HeaderSize is the size of a frame header, in bytes.
	HeaderSize = 16
	// MaxPayload is the largest payload a request may carry, in bytes
	// (1 MiB); a longer one is a bad frame.
	MaxPayload = 1 << 20
)

// header is a decoded frame header.
type header struct {
	magic   uint32
	version uint8
	typ     uint8
	flags   uint16
	id      uint32
	length  uint32
}

// putHeader encodes h into b[:HeaderSize].
func putHeader(b []byte, h header) {
	binary.BigEndian.PutUint32(b[0:4], h.magic)
	b[4] = h.version
	b[5] = h.typ
	binary.BigEndian.PutUint16(b[6:8], h.flags)
	binary.BigEndian.PutUint32(b[8:12], h.id)
	binary.BigEndian.PutUint32(b[12:16], h.length)
}

// parseHeader decodes b[:HeaderSize].
func parseHeader(b []byte) header {
	return header{
		magic:   binary.BigEndian.Uint32(b[0:4]),
		version: b[4],
		typ:     b[5],
		flags:   binary.BigEndian.Uint16(b[6:8]),
		id:      binary.BigEndian.Uint32(b[8:12]),
		length:  binary.BigEndian.Uint32(b[12:16]),
	}
}

// checkRequest says why h is not the header of an acceptable request
// frame, or returns nil.
func checkRequest(h header) error {
	switch {
	case h.magic != Magic:
		return fmt.Errorf("bad magic %#08x", h.magic)
	case h.version != Version:
		return fmt.Errorf("bad version %d", h.version)
	case h.typ != TypeRequest:
		return fmt.Errorf("bad type %d", h.typ)
	case h.length > MaxPayload:
		return fmt.Errorf("length %d over %d", h.length, MaxPayload)
	}
	return nil
}

package http

import (
	"bytes"
	"context"
	"io"
	"net"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/runner-dev/runner/drivers"
	"github.com/runner-dev/runner/schema"
)

// h2Frames builds server frames for the fuzz seeds: each op writes one
// or more frames with the Framer.
func h2Frames(ops ...func(fr *http2.Framer)) []byte {
	var b bytes.Buffer
	fr := http2.NewFramer(&b, nil)
	fr.AllowIllegalWrites = true
	for _, op := range ops {
		op(fr)
	}
	return b.Bytes()
}

// block HPACK-encodes fields (name, value, name, value, …).
func block(fields ...string) []byte {
	var b bytes.Buffer
	enc := hpack.NewEncoder(&b)
	for i := 0; i+1 < len(fields); i += 2 {
		enc.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]})
	}
	return b.Bytes()
}

// FuzzH2Response feeds arbitrary bytes as what a server sends on an
// HTTP/2 connection after its SETTINGS, while one request (stream 1)
// waits: frames, header blocks and their HPACK, flow control, resets,
// GOAWAY. Whatever the bytes, Do returns within its timeout without a
// panic, an ok outcome is a complete response with a status of three
// digits, and the bytes booked to the request are at most those sent.
func FuzzH2Response(f *testing.F) {
	headers := func(id uint32, end bool, b []byte) func(fr *http2.Framer) {
		return func(fr *http2.Framer) {
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: b, EndStream: end, EndHeaders: true})
		}
	}
	data := func(id uint32, end bool, s string) func(fr *http2.Framer) {
		return func(fr *http2.Framer) { fr.WriteData(id, end, []byte(s)) }
	}
	f.Add(h2Frames(headers(1, true, block(":status", "200"))))
	f.Add(h2Frames(headers(1, false, block(":status", "200", "content-type", "text/plain")), data(1, false, "hel"), data(1, true, "lo")))
	f.Add(h2Frames(headers(1, false, block(":status", "103")), headers(1, false, block(":status", "204")), headers(1, true, block("x-trailer", "1"))))
	f.Add(h2Frames(headers(1, true, block(":status", "2x0"))))
	f.Add(h2Frames(headers(1, true, block("x-no-status", "1"))))
	f.Add(h2Frames(func(fr *http2.Framer) { fr.WriteRSTStream(1, http2.ErrCodeRefusedStream) }))
	f.Add(h2Frames(func(fr *http2.Framer) { fr.WriteGoAway(0, http2.ErrCodeNo, []byte("bye")) }))
	f.Add(h2Frames(func(fr *http2.Framer) { fr.WriteGoAway(1, http2.ErrCodeEnhanceYourCalm, nil) }, headers(1, true, block(":status", "200"))))
	f.Add(h2Frames(func(fr *http2.Framer) { fr.WriteWindowUpdate(0, 1<<31-1) }, func(fr *http2.Framer) { fr.WriteWindowUpdate(0, 1<<31-1) }))
	f.Add(h2Frames(func(fr *http2.Framer) { fr.WritePing(false, [8]byte{1}) }, func(fr *http2.Framer) {
		fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 30}, http2.Setting{ID: http2.SettingHeaderTableSize, Val: 0})
	}, headers(1, true, block(":status", "404"))))
	f.Add(h2Frames(func(fr *http2.Framer) {
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block(":status", "200")[:1], EndHeaders: false})
		fr.WriteContinuation(1, true, block(":status", "200")[1:])
	}))
	f.Add(h2Frames(func(fr *http2.Framer) {
		fr.WritePushPromise(http2.PushPromiseParam{StreamID: 1, PromiseID: 2, BlockFragment: block(":method", "GET"), EndHeaders: true})
	}))
	f.Add(h2Frames(data(1, true, "body first"), headers(3, true, block(":status", "200"))))
	f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"))

	d, err := New(schema.HTTP{Version: "2", Success: `status == 200 && headers["Content-Type"] != "x" && body != "x"`}, "http://127.0.0.1:1", f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, in []byte) { fuzzOneWith(t, d, in) })
}

// fuzzOneWith runs one FuzzH2Response input against d.
func fuzzOneWith(t *testing.T, d *Driver, in []byte) {
	{
		client, server := net.Pipe()
		defer client.Close()
		defer server.Close()
		go func() {
			// The server: its SETTINGS, then the fuzzed bytes; it reads
			// (and drops) all the client writes.
			go io.Copy(io.Discard, server)
			var b bytes.Buffer
			http2.NewFramer(&b, nil).WriteSettings()
			server.Write(b.Bytes())
			server.Write(in)
		}()
		s := newSession(d, client)
		client.SetDeadline(time.Now().Add(time.Second))
		if err := s.handshake(); err != nil {
			return
		}
		client.SetDeadline(time.Time{})
		go s.readLoop()
		c := newH2Conn(d)
		c.sess = s
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		start := time.Now()
		out := c.Do(ctx, drivers.Request{Seq: 1, Deadline: time.Now().Add(50 * time.Millisecond)})
		if took := time.Since(start); took > 5*time.Second {
			t.Fatalf("Do took %s", took)
		}
		if out.Class == drivers.OK && !out.Responded {
			t.Fatalf("ok without a response: %+v", out)
		}
		if out.BytesIn > int64(len(in)) {
			t.Fatalf("%d bytes in booked, %d sent", out.BytesIn, len(in))
		}
		if out.Class == "" {
			t.Fatalf("no class: %+v", out)
		}
	}
}

package websocket

import (
	"bufio"
	"context"
	"crypto/sha1"
	"crypto/tls"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"io"
	"net"
	nethttp "net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/runner-dev/runner/drivers"
	"github.com/runner-dev/runner/drivers/internal/drivertest"
	"github.com/runner-dev/runner/schema"
)

// hostile is a raw TCP WebSocket server on 127.0.0.1, for what a
// well-behaved library would never send. On every connection it
// completes the handshake, reads the client's first message, calls send,
// then reads the client's frames until its close frame, whose status
// code it reports on the channel (0 when none came within 5 s). All is
// stopped and waited for when the test ends. With conf it speaks TLS
// (wss://).
func hostile(t *testing.T, conf *tls.Config, send func(c net.Conn)) (string, <-chan int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	scheme := "ws://"
	if conf != nil {
		ln, scheme = tls.NewListener(ln, conf), "wss://"
	}
	closes := make(chan int, 16)
	drivertest.Serve(t, ln, func(_ int, c net.Conn) {
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		br := bufio.NewReader(c)
		if handshake(c, br) != nil {
			return
		}
		if _, _, err := readFrame(br); err != nil {
			return
		}
		send(c)
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		code := 0
		for {
			op, p, err := readFrame(br)
			if err != nil {
				break
			}
			if op == 8 && len(p) >= 2 {
				code = int(binary.BigEndian.Uint16(p))
				break
			}
		}
		select {
		case closes <- code:
		default:
		}
	})
	return scheme + ln.Addr().String(), closes
}

// handshake reads the upgrade request and accepts it (RFC 6455 §4.2.2).
func handshake(c net.Conn, br *bufio.Reader) error {
	key := ""
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return err
		}
		line = strings.TrimSpace(line)
		if line == "" {
			break
		}
		if name, value, ok := strings.Cut(line, ":"); ok && strings.EqualFold(name, "Sec-WebSocket-Key") {
			key = strings.TrimSpace(value)
		}
	}
	if key == "" {
		return errors.New("no Sec-WebSocket-Key")
	}
	sum := sha1.Sum([]byte(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	_, err := io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Accept: "+base64.StdEncoding.EncodeToString(sum[:])+"\r\n\r\n")
	return err
}

// readFrame reads one client frame and returns its opcode and unmasked
// payload (at most 1 MiB).
func readFrame(br *bufio.Reader) (byte, []byte, error) {
	var h [2]byte
	if _, err := io.ReadFull(br, h[:]); err != nil {
		return 0, nil, err
	}
	n := uint64(h[1] & 0x7f)
	switch n {
	case 126:
		var x [2]byte
		if _, err := io.ReadFull(br, x[:]); err != nil {
			return 0, nil, err
		}
		n = uint64(binary.BigEndian.Uint16(x[:]))
	case 127:
		var x [8]byte
		if _, err := io.ReadFull(br, x[:]); err != nil {
			return 0, nil, err
		}
		n = binary.BigEndian.Uint64(x[:])
	}
	if n > 1<<20 {
		return 0, nil, errors.New("client frame too long")
	}
	var mask [4]byte
	if h[1]&0x80 != 0 {
		if _, err := io.ReadFull(br, mask[:]); err != nil {
			return 0, nil, err
		}
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(br, p); err != nil {
		return 0, nil, err
	}
	for i := range p {
		p[i] ^= mask[i%4]
	}
	return h[0] & 0x0f, p, nil
}

// header2G is a final text frame's header declaring 2^31 bytes.
var header2G = []byte{0x81, 127, 0, 0, 0, 0, 0x80, 0, 0, 0}

// closeCode waits for the close code the hostile server saw.
func closeCode(t *testing.T, closes <-chan int) int {
	t.Helper()
	select {
	case code := <-closes:
		return code
	case <-time.After(10 * time.Second):
		t.Fatal("the hostile server never finished")
		return 0
	}
}

// TestIssue12_WSHugeFrameRefusedFromHeader: a frame declaring 2^31
// bytes, its payload then streamed (24 MiB here), with max_message
// 16 MiB. It is refused from its header: bad-frame too-big, and the
// client does not read the payload into a buffer (coder/websocket's
// limit counts bytes as they are read: the buffer grew to max_message
// first, 32 MiB allocated here; 200 MiB peaks in the field). A message
// whose fragments' declared lengths add up past max_message is refused
// at the fragment that crosses it.
func TestIssue12_WSHugeFrameRefusedFromHeader(t *testing.T) {
	chunk := make([]byte, 1<<20)
	for i := range chunk {
		chunk[i] = 'a'
	}
	url, _ := hostile(t, nil, func(c net.Conn) {
		if _, err := c.Write(header2G); err != nil {
			return
		}
		for range 24 {
			if _, err := c.Write(chunk); err != nil {
				return
			}
		}
	})
	d := newDriver(t, schema.WebSocket{MaxMessage: 16 << 20}, url)
	c, err := d.Dial(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	o := do(c, 1, 5*time.Second)
	runtime.ReadMemStats(&m1)
	if o.Class != drivers.BadFrame || o.Code != "too-big" || !strings.Contains(o.Err.Error(), "declared 2147483648 bytes") {
		t.Errorf("%v %q %v, want bad-frame too-big, refused from its header", o.Class, o.Code, o.Err)
	}
	if alloc := m1.TotalAlloc - m0.TotalAlloc; alloc > 4<<20 {
		t.Errorf("allocated %d MiB for a frame refused from its header", alloc>>20)
	}

	t.Run("fragments", func(t *testing.T) {
		url, closes := hostile(t, nil, func(c net.Conn) {
			msg := append([]byte{0x01, 60}, strings.Repeat("a", 60)...)     // text, not final
			msg = append(append(msg, 0x80, 10), strings.Repeat("b", 10)...) // continuation, final
			c.Write(msg)
		})
		d := newDriver(t, schema.WebSocket{MaxMessage: 64}, url)
		c, err := d.Dial(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if o := do(c, 1, 5*time.Second); o.Class != drivers.BadFrame || o.Code != "too-big" || !strings.Contains(o.Err.Error(), "fragments so far held 60 bytes and the next one's header declared 10 more") {
			t.Errorf("%v %q %v, want bad-frame too-big at the second fragment", o.Class, o.Code, o.Err)
		}
		if code := closeCode(t, closes); code != 1009 {
			t.Errorf("close code %d, want 1009", code)
		}
	})
}

// TestIssue12_WSHugeFrameThenSilenceIsTooBig: a frame declaring 2^31
// bytes and then nothing is bad-frame too-big at once, and the
// connection is closed with 1009; it used to wait for the payload and
// end as a timeout.
func TestIssue12_WSHugeFrameThenSilenceIsTooBig(t *testing.T) {
	url, closes := hostile(t, nil, func(c net.Conn) { c.Write(header2G) })
	d := wantFailed(t, schema.WebSocket{}, url, closes, drivers.BadFrame, "too-big", 1009) // message too big
	if s := d.Strays(); len(s.Closes) != 0 {
		t.Errorf("our own close counted as a server close: %v", s.Closes)
	}
}

// TestIssue12_WSHugeFrameOverTLS: the frame headers are read after
// TLS (wss://): a 2^31 declaration is too-big there too.
func TestIssue12_WSHugeFrameOverTLS(t *testing.T) {
	cert := httptest.NewUnstartedServer(nethttp.NotFoundHandler())
	cert.StartTLS() // only for its certificate
	conf := cert.TLS.Clone()
	cert.Close()
	conf.NextProtos = nil
	url, closes := hostile(t, conf, func(c net.Conn) { c.Write(header2G) })
	wantFailed(t, schema.WebSocket{TLS: &schema.TLS{InsecureSkipVerify: true}}, url, closes, drivers.BadFrame, "too-big", 1009)
}

// TestIssue12_WSInvalidUTF8Text: a text reply that is not UTF-8 fails
// the connection (RFC 6455 §8.1): bad-frame invalid-utf8, closed with
// 1007. The same bytes in a binary reply are a reply.
func TestIssue12_WSInvalidUTF8Text(t *testing.T) {
	for _, c := range []struct {
		name   string
		frame  []byte
		class  drivers.Class
		code   string
		status int
	}{
		{"text", []byte{0x81, 2, 0xff, 0xfe}, drivers.BadFrame, "invalid-utf8", 1007},
		{"binary", []byte{0x82, 2, 0xff, 0xfe}, drivers.OK, "", 1000},
	} {
		t.Run(c.name, func(t *testing.T) {
			url, closes := hostile(t, nil, func(nc net.Conn) { nc.Write(c.frame) })
			wantFailed(t, schema.WebSocket{}, url, closes, c.class, c.code, c.status)
		})
	}
}

// TestIssue12_WSMaskedServerFrame: a masked frame from the server is a
// protocol error (RFC 6455 §5.1): bad-frame masked-frame, closed with
// 1002. The library read it as a reply, its payload still masked.
func TestIssue12_WSMaskedServerFrame(t *testing.T) {
	url, closes := hostile(t, nil, func(c net.Conn) {
		key := [4]byte{1, 2, 3, 4}
		frame := append([]byte{0x81, 0x80 | 5}, key[:]...)
		for i, b := range []byte("hello") {
			frame = append(frame, b^key[i%4])
		}
		c.Write(frame)
	})
	wantFailed(t, schema.WebSocket{}, url, closes, drivers.BadFrame, "masked-frame", 1002) // protocol error
}

// wantFailed sends one request to url (a hostile server) over a driver
// configured by cfg, and fails the test unless it ends as class with
// code and the server saw our close frame with status. It returns the
// driver, for the stray figures.
func wantFailed(t *testing.T, cfg schema.WebSocket, url string, closes <-chan int, class drivers.Class, code string, status int) *Driver {
	t.Helper()
	d := newDriver(t, cfg, url)
	c, err := d.Dial(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	o := do(c, 1, 3*time.Second)
	c.Close()
	if o.Class != class || o.Code != code {
		t.Errorf("%v %q %v, want %v %q", o.Class, o.Code, o.Err, class, code)
	}
	if got := closeCode(t, closes); got != status {
		t.Errorf("close code %d, want %d", got, status)
	}
	return d
}

// rwc makes a reader a ReadWriteCloser for frameGuard.
type rwc struct{ io.Reader }

func (rwc) Write(p []byte) (int, error) { return len(p), nil }
func (rwc) Close() error                { return nil }

// TestFrameGuard_SplitReads: frames pass through the guard unchanged
// however the reads cut them (headers split byte by byte included), and
// a refused header hands on exactly the bytes before it.
func TestFrameGuard_SplitReads(t *testing.T) {
	frame := func(b0 byte, n int) []byte {
		var h []byte
		switch {
		case n < 126:
			h = []byte{b0, byte(n)}
		case n < 1<<16:
			h = []byte{b0, 126, byte(n >> 8), byte(n)}
		default:
			h = binary.BigEndian.AppendUint64([]byte{b0, 127}, uint64(n))
		}
		return append(h, strings.Repeat("x", n)...)
	}
	var good []byte
	for _, f := range [][]byte{frame(0x81, 0), frame(0x81, 125), frame(0x89, 4), frame(0x02, 126), frame(0x80, 1000), frame(0x82, 70000)} {
		good = append(good, f...)
	}
	bad := append(append([]byte(nil), good...), frame(0x82, 100001)...)
	for _, split := range []bool{false, true} {
		var r io.Reader = strings.NewReader(string(bad))
		if split {
			r = iotest.OneByteReader(r)
		}
		g := &frameGuard{ReadWriteCloser: rwc{r}, max: 100000}
		got, err := io.ReadAll(g)
		var fe *frameError
		if !errors.As(err, &fe) || fe.Code != "too-big" {
			t.Errorf("split %v: error %v, want too-big", split, err)
		}
		// Read byte by byte, the refused header's first 9 bytes were
		// handed on before its length was complete.
		if extra := len(got) - len(good); !strings.HasPrefix(string(got), string(good)) || extra < 0 || extra > 9 || !split && extra != 0 {
			t.Errorf("split %v: handed on %d bytes, want the %d before the refused header", split, len(got), len(good))
		}
	}
}

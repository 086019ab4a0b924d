package http

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"golang.org/x/net/http2"
)

// The read side of an HTTP/2 session (h2.go): one goroutine per
// connection reads the server's frames and hands each to its stream;
// connection-level errors end the session and every stream on it.

// readLoop reads frames until the connection ends, and hands each to its
// stream. A connection-level error ends the session and every stream on
// it; we tell the server why with GOAWAY.
func (s *session) readLoop() {
	for {
		f, err := s.fr.ReadFrame()
		if err != nil {
			var se http2.StreamError
			if errors.As(err, &se) {
				s.streamError(se.StreamID, se.Code, fmt.Errorf("http2 stream error: %w", err))
				continue
			}
			if errors.Is(err, http2.ErrFrameTooLarge) {
				err = &h2ProtoError{http2.ErrCodeFrameSize, fmt.Sprintf("a frame larger than our SETTINGS_MAX_FRAME_SIZE %d", h2FrameSize)}
			}
			s.connError(err)
			return
		}
		if err := s.handle(f); err != nil {
			s.connError(err)
			return
		}
	}
}

// connError ends the session for a protocol error (telling the server by
// GOAWAY) or a transport error.
func (s *session) connError(err error) {
	var pe *h2ProtoError
	var ce http2.ConnectionError
	switch {
	case errors.As(err, &pe):
		s.writeControl(func() error { return s.fr.WriteGoAway(0, pe.code, nil) })
	case errors.As(err, &ce):
		s.writeControl(func() error { return s.fr.WriteGoAway(0, http2.ErrCode(ce), nil) })
	}
	s.fail(err)
}

// streamError ends one stream for a protocol error in its frames.
func (s *session) streamError(id uint32, code http2.ErrCode, err error) {
	st := s.lookup(id)
	if st == nil || !s.forget(st) {
		return
	}
	st.code = "h2-" + code.String()
	st.end(endProtocol, err)
	s.writeControl(func() error { return s.fr.WriteRSTStream(id, code) })
}

// lookup finds an open stream of ours.
func (s *session) lookup(id uint32) *stream {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.streams[id]
}

// handle takes one frame; an error is a connection error.
func (s *session) handle(f http2.Frame) error {
	switch f := f.(type) {
	case *http2.MetaHeadersFrame:
		return s.onHeaders(f)
	case *http2.DataFrame:
		return s.onData(f)
	case *http2.RSTStreamFrame:
		if st := s.lookup(f.StreamID); st != nil && s.forget(st) {
			s.mu.Lock()
			st.bytesIn += 9 + 4
			s.mu.Unlock()
			st.code = "rst-" + f.ErrCode.String()
			st.end(endReset, fmt.Errorf("the server reset the stream (RST_STREAM %s)", f.ErrCode))
		}
	case *http2.SettingsFrame:
		if f.IsAck() {
			return nil
		}
		if err := s.applySettings(f); err != nil {
			return err
		}
		s.writeControl(s.fr.WriteSettingsAck)
	case *http2.PingFrame:
		if !f.IsAck() {
			data := f.Data
			s.writeControl(func() error { return s.fr.WritePing(true, data) })
		}
	case *http2.WindowUpdateFrame:
		return s.onWindowUpdate(f)
	case *http2.GoAwayFrame:
		s.onGoAway(f)
	case *http2.PushPromiseFrame:
		return &h2ProtoError{http2.ErrCodeProtocol, "PUSH_PROMISE although we disabled push"}
	}
	// PRIORITY and unknown frame types are ignored (RFC 9113 §4.1, §5.5).
	return nil
}

// onHeaders takes a response header block: an interim 1xx head (skipped),
// the final head, or trailers (which must end the stream).
func (s *session) onHeaders(f *http2.MetaHeadersFrame) error {
	st := s.lookup(f.StreamID)
	if st == nil {
		if f.StreamID%2 == 0 || f.StreamID >= s.nextIDLocked() {
			return &h2ProtoError{http2.ErrCodeProtocol, fmt.Sprintf("HEADERS on stream %d, which we never opened", f.StreamID)}
		}
		// A stream we cancelled (its HPACK state is already taken): a
		// response to one that timed out is counted late.
		if status, err := parseH2Status(f.PseudoValue("status")); err == nil && status >= 200 {
			s.lateResponse(f.StreamID)
		}
		return nil
	}
	s.mu.Lock()
	if st.first.IsZero() {
		st.first = time.Now()
	}
	st.bytesIn += int64(9 + f.Header().Length)
	s.mu.Unlock()
	if f.Truncated {
		s.streamError(st.id, http2.ErrCodeProtocol, fmt.Errorf("response header list exceeds the limit of %d bytes (1 MiB)", MaxHeaderBytes))
		return nil
	}
	if st.gotFinal {
		if !f.StreamEnded() {
			s.streamError(st.id, http2.ErrCodeProtocol, errors.New("a second header block without END_STREAM"))
			return nil
		}
		s.complete(st)
		return nil
	}
	status, err := parseH2Status(f.PseudoValue("status"))
	if err != nil {
		s.streamError(st.id, http2.ErrCodeProtocol, err)
		return nil
	}
	if status >= 100 && status < 200 {
		if f.StreamEnded() {
			s.streamError(st.id, http2.ErrCodeProtocol, fmt.Errorf("interim status %d with END_STREAM", status))
		}
		return nil
	}
	st.gotFinal = true
	resp := &st.j.resp
	resp.status = status
	st.wantLen = -1
	wantHeaders := st.j.spec.rule != nil && st.j.spec.rule.needHeaders || st.j.spec.captureHeaders
	for _, hf := range f.RegularFields() {
		if hf.Name == "content-length" {
			n, err := parseContentLength(hf.Value)
			if err != nil || st.wantLen >= 0 && n != st.wantLen {
				if err == nil {
					err = fmt.Errorf("two content-length fields, %d and %d", st.wantLen, n)
				}
				s.streamError(st.id, http2.ErrCodeProtocol, fmt.Errorf("malformed response (RFC 9113 §8.1.1): %w", err))
				return nil
			}
			st.wantLen = n
		}
		if wantHeaders {
			if resp.headers == nil {
				resp.headers = map[string]string{}
			}
			k := canonicalKey(hf.Name)
			if _, dup := resp.headers[k]; !dup {
				resp.headers[k] = hf.Value
			}
		}
		if st.j.jar != nil && hf.Name == "set-cookie" {
			resp.cookies = append(resp.cookies, hf.Value)
		}
	}
	if f.StreamEnded() {
		s.complete(st)
	}
	return nil
}

// nextIDLocked returns the next stream id under s.mu.
func (s *session) nextIDLocked() uint32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nextID
}

// canonicalKey is the canonical form of a header name (content-type →
// Content-Type), as the HTTP/1.x reader keys headers for rules.
func canonicalKey(name string) string {
	b := []byte(name)
	up := true
	for i, c := range b {
		if up && 'a' <= c && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
		up = c == '-'
	}
	return string(b)
}

// parseH2Status reads :status: three digits (RFC 9113 §8.3.2).
func parseH2Status(v string) (int, error) {
	if len(v) != 3 || !isDigit(v[0]) || !isDigit(v[1]) || !isDigit(v[2]) {
		if v == "" {
			return 0, errors.New("response without :status")
		}
		return 0, fmt.Errorf("response :status %q is not three digits", clip([]byte(v)))
	}
	n, _ := strconv.Atoi(v)
	if n < 100 {
		return 0, fmt.Errorf("response :status %d is below 100", n)
	}
	return n, nil
}

// complete ends a stream whose response ended (END_STREAM).
//
// A response whose DATA add up to other than its content-length is
// malformed (RFC 9113 §8.1.1): a stream error PROTOCOL_ERROR, never ok.
// The content-length of a response to HEAD or of a 304 describes the
// body it would have had (RFC 9110 §8.6), so it is not checked there.
//
// A response may be complete before the request's body was all sent
// (RFC 9113 §8.1): the rest is not sent, and RST_STREAM CANCEL closes our
// side, so that the server does not hold the stream open (it would count
// against its concurrent streams while we count it as ended).
func (s *session) complete(st *stream) {
	if err := st.lengthError(true); err != nil {
		s.streamError(st.id, http2.ErrCodeProtocol, err)
		return
	}
	if s.forget(st) {
		s.mu.Lock()
		unsent := !st.sentAll
		s.mu.Unlock()
		st.end(endOK, nil)
		if unsent {
			s.writeControl(func() error { return s.fr.WriteRSTStream(st.id, http2.ErrCodeCancel) })
		}
	}
}

// onData takes a DATA frame: flow-control accounting (RFC 9113 §6.9),
// the body kept only as far as a rule or capture reads it, window grants
// once half a window was consumed.
func (s *session) onData(f *http2.DataFrame) error {
	n := int64(f.Header().Length) // padding counts against the window too
	s.mu.Lock()
	if n > 0 {
		s.recvUnack += n
	}
	connGrant := int64(0)
	if s.recvUnack >= h2ConnWindow/2 {
		connGrant, s.recvUnack = s.recvUnack, 0
	}
	if s.recvUnack+connGrant > h2ConnWindow {
		s.mu.Unlock()
		return &h2ProtoError{http2.ErrCodeFlowControl, "DATA beyond the connection's receive window"}
	}
	st := s.streams[f.StreamID]
	if st != nil {
		st.bytesIn += 9 + n
		if st.first.IsZero() {
			st.first = time.Now()
		}
	}
	s.mu.Unlock()
	if connGrant > 0 {
		s.writeControl(func() error { return s.fr.WriteWindowUpdate(0, uint32(connGrant)) })
	}
	if st == nil {
		if f.StreamID >= s.nextIDLocked() {
			return &h2ProtoError{http2.ErrCodeProtocol, fmt.Sprintf("DATA on stream %d, which we never opened", f.StreamID)}
		}
		return nil // a stream we cancelled
	}
	if !st.gotFinal {
		s.streamError(st.id, http2.ErrCodeProtocol, errors.New("DATA before the response's HEADERS"))
		return nil
	}
	st.recvWin -= n
	if st.recvWin < 0 {
		s.streamError(st.id, http2.ErrCodeFlowControl, errors.New("DATA beyond the stream's receive window"))
		return nil
	}
	st.j.resp.bodyLen += int64(len(f.Data()))
	if err := st.lengthError(false); err != nil {
		s.streamError(st.id, http2.ErrCodeProtocol, err)
		return nil
	}
	if len(f.Data()) > 0 {
		if st.head || st.j.resp.status == 204 || st.j.resp.status == 304 {
			s.streamError(st.id, http2.ErrCodeProtocol, fmt.Errorf("a body after status %d or HEAD", st.j.resp.status))
			return nil
		}
		if spec := st.j.spec; spec.rule != nil && spec.rule.needBody || spec.captureBody {
			if room := MaxRuleBody - st.j.body.Len(); room > 0 {
				d := f.Data()
				st.j.body.Write(d[:min(len(d), room)])
			}
		}
	}
	if f.StreamEnded() {
		s.complete(st)
		return nil
	}
	st.recvUn += n
	if st.recvUn >= h2StreamWindow/2 {
		grant := st.recvUn
		st.recvUn = 0
		st.recvWin += grant
		s.writeControl(func() error { return s.fr.WriteWindowUpdate(st.id, uint32(grant)) })
	}
	return nil
}

// onWindowUpdate grows a send window (RFC 9113 §6.9.1); a window past
// 2³¹ − 1 is a flow-control error.
func (s *session) onWindowUpdate(f *http2.WindowUpdateFrame) error {
	s.mu.Lock()
	over := false
	if f.StreamID == 0 {
		s.sendWin += int64(f.Increment)
		if s.sendWin > 1<<31-1 {
			s.mu.Unlock()
			return &h2ProtoError{http2.ErrCodeFlowControl, "connection send window over 2³¹ − 1"}
		}
	} else if st := s.streams[f.StreamID]; st != nil {
		st.sendWin += int64(f.Increment)
		over = st.sendWin > 1<<31-1
	}
	s.broadcast()
	s.mu.Unlock()
	if over {
		s.streamError(f.StreamID, http2.ErrCodeFlowControl, errors.New("stream send window over 2³¹ − 1"))
	}
	return nil
}

// onGoAway takes GOAWAY: no new stream on this session; streams above
// its last-stream-id were not processed (RFC 9113 §6.8) and end as
// refused (Do sends them again once on a fresh connection); those at or
// below it may still complete. The session closes after its last stream.
func (s *session) onGoAway(f *http2.GoAwayFrame) {
	s.mu.Lock()
	first := !s.goAway
	s.goAway = true
	s.goAwayCode = f.ErrCode
	if first || f.LastStreamID < s.lastID {
		s.lastID = f.LastStreamID
	}
	var refused []*stream
	for id, st := range s.streams {
		if id > s.lastID {
			refused = append(refused, st)
		}
	}
	s.broadcast()
	s.mu.Unlock()
	if first {
		s.d.goAways.Add(1)
		s.d.closeMu.Lock()
		if s.d.closes == nil {
			s.d.closes = map[string]int64{}
		}
		s.d.closes["goaway-"+f.ErrCode.String()]++
		s.d.closeMu.Unlock()
	}
	for _, st := range refused {
		if s.forget(st) {
			st.end(endRefused, fmt.Errorf("GOAWAY with last-stream-id %d (%s)", f.LastStreamID, f.ErrCode))
		}
	}
	s.mu.Lock()
	idle := s.active == 0
	s.mu.Unlock()
	if idle {
		s.fail(fmt.Errorf("the server sent GOAWAY (%s)", f.ErrCode))
	}
}

// parseContentLength reads a content-length value: decimal digits only
// (RFC 9110 §8.6), at most 18 of them, so that it fits an int64.
func parseContentLength(v string) (int64, error) {
	if v == "" || len(v) > 18 {
		return 0, fmt.Errorf("content-length %q is not a length", clip([]byte(v)))
	}
	for i := 0; i < len(v); i++ {
		if !isDigit(v[i]) {
			return 0, fmt.Errorf("content-length %q is not a length", clip([]byte(v)))
		}
	}
	n, _ := strconv.ParseInt(v, 10, 64)
	return n, nil
}

// lengthError reports a response body that disagrees with its
// content-length: more DATA than it declared, or at its end (ended)
// less. nil without one, for HEAD and for a 304; read-loop only.
func (st *stream) lengthError(ended bool) error {
	got, want := st.j.resp.bodyLen, st.wantLen
	switch {
	case want < 0 || st.head || st.j.resp.status == 304:
		return nil
	case got > want:
		return fmt.Errorf("malformed response (RFC 9113 §8.1.1): DATA of %d bytes or more, its content-length is %d", got, want)
	case ended && got < want:
		return fmt.Errorf("malformed response (RFC 9113 §8.1.1): the stream ended after %d bytes of DATA, its content-length is %d", got, want)
	}
	return nil
}

// Package http is the HTTP driver of the drivers stage (HTTP/1.x, and
// HTTP/2 with version "2": h2.go): it turns one drivers.Request into one
// request on the wire and says how it ended (drivers.Outcome).
//
// The driver owns its connections (net.Dialer, optional TLS) instead of
// using net/http's Transport, so that keep-alive, re-dials and the count
// of connections opened are exactly what the scenario asks for and can be
// reconciled with the target's own count. It writes the request bytes
// itself from templates split once at New ({{seq}} and {{data.NAME}},
// appended into a reused buffer), and reads responses with its
// own HTTP/1.x head parser (response.go: RFC 9112 framing, bodies by
// Content-Length, chunked or to the close, none after HEAD, 1xx, 204 or
// 304; tested against net/http's ReadResponse, which cost about 1 µs per
// request building header maps nobody read). It enforces each request's
// deadline on the socket (drivers.DeadlineKeeper), so a request costs no
// context and no timer (an HTTP/1.x connection even keeps an earlier
// request's socket deadline while it is well ahead, and resumes an I/O
// it cuts short up to the request's own: conn.arm), and allocates
// nothing unless a success rule reads the body or headers or cookies are
// on (a cookie jar per Conn, one virtual user, kept through re-dials). One request at a time per connection: no
// pipelining, and no retries: a kept-alive connection the server closes
// without notice after a request was written costs that request an eof or
// reset outcome, and the next request re-dials. A connection found closed,
// or holding an unsolicited response, before a request is written on it is
// re-dialled for that request (nothing was sent, so it is no retry).
//
// HTTP/2 (h2.go) uses golang.org/x/net/http2's Framer and hpack for the
// wire format and keeps the rest: one session (TCP or TLS connection, ALPN
// h2, or h2c with prior knowledge) per connection slot, carrying up to
// the phase's inflight streams under the server's
// SETTINGS_MAX_CONCURRENT_STREAMS, with our own flow control, receive
// limits, and GOAWAY handling (a stream above the last-stream-id is sent
// again once on a fresh connection, Outcome.Resent).
package http

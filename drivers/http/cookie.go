package http

import (
	"errors"
	"fmt"
	"net"
	nethttp "net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"time"

	"golang.org/x/net/publicsuffix"
)

// Bounds of a virtual user's cookie jar: RFC 6265 §6.1's minimums, which a
// user agent should support and browsers hold to. A target that goes
// past them does not grow the client's requests and memory without end.
// A new cookie beyond MaxCookies evicts the one set longest ago, as
// browsers do (RFC 6265 §5.3: the user agent evicts cookies when it has
// too many), so a site that sets a cookie per visit works on as it does
// for people. A cookie too long to keep fails its step, class
// drivers.ClientError with code drivers.CodeCookieLimit (the client's
// limit, not the target's error): a browser would drop it, and the
// target's next answer to a user without it would be blamed on the
// target.
const (
	// MaxCookies is the most cookies one virtual user keeps: 50, the
	// minimum per domain (a virtual user talks to one target host).
	MaxCookies = 50
	// MaxCookieSize is the longest cookie kept, in bytes of its name and
	// value (4096, as browsers measure it; §6.1 counts its attributes
	// too, which browsers bound apart).
	MaxCookieSize = 4096
	// MaxSetCookie is the longest Set-Cookie field value read, in bytes:
	// the cookie with its attributes.
	MaxSetCookie = 2 * MaxCookieSize
	// MaxCookieHeader is the longest Cookie header value sent, in bytes:
	// what MaxCookies cookies of MaxCookieSize make, with the "; "
	// between them and the quotes a value may need. It binds only if the
	// jar sends more than it was counted to keep.
	MaxCookieHeader = MaxCookies * (MaxCookieSize + 4)
)

// jar is one virtual user's cookie jar: net/http/cookiejar (RFC 6265,
// with the public suffix list) bounded by MaxCookies and MaxCookieSize.
// cookiejar cannot say how many cookies it holds, nor drop one, so jar
// counts them itself, by the identity cookiejar files them under
// (domain, path, name), with their expiry and when they were set, and
// evicts one by setting it expired. One goroutine uses it at a time (its
// conn's).
type jar struct {
	j    *cookiejar.Jar
	kept map[cookieID]kept
	sets uint64 // cookies set so far: the order of kept.set
	// evicted counts the cookies evicted to make room.
	evicted int64
}

// kept is what jar knows of a cookie it holds.
type kept struct {
	exp    time.Time // zero for a session cookie
	domain string    // its Domain attribute as set ("" host-only)
	set    uint64    // when it was last set, in jar.sets
}

// cookieID is what a cookie replaces a stored one by (RFC 6265 §5.3
// step 11): its domain, path and name.
type cookieID struct{ domain, path, name string }

func newJar() *jar {
	// cookiejar.New returns no error (its signature keeps one for later
	// options).
	j, _ := cookiejar.New(&cookiejar.Options{PublicSuffixList: publicsuffix.List})
	return &jar{j: j, kept: map[cookieID]kept{}}
}

// errCookieLimit is the error of a step that went past a jar's bounds.
var errCookieLimit = errors.New("cookie jar overflow")

// store files the Set-Cookie values lines of a response to u in the jar.
// A value that does not parse is ignored (RFC 6265 §5.2); a cookie the
// jar would refuse (a Domain that does not cover u's host) is not
// counted. A cookie whose name and value are longer than MaxCookieSize,
// or a field longer than MaxSetCookie, is not stored, and store returns
// an error (errCookieLimit) naming the first such cookie and how many
// there were; the others are stored all the same. A new cookie that
// would make the jar hold more than MaxCookies evicts the cookie set
// longest ago (expired ones are dropped first).
func (jr *jar) store(u *url.URL, lines []string, now time.Time) error {
	for id, k := range jr.kept {
		if !k.exp.IsZero() && !k.exp.After(now) {
			delete(jr.kept, id)
		}
	}
	host := strings.ToLower(u.Hostname())
	cookies := make([]*nethttp.Cookie, 0, len(lines))
	var refused int
	var first string
	refuse := func(why string) {
		if refused++; refused == 1 {
			first = why
		}
	}
	for _, line := range lines {
		ck, err := nethttp.ParseSetCookie(line)
		if err != nil {
			continue
		}
		if n := len(ck.Name) + len(ck.Value); n > MaxCookieSize {
			refuse(fmt.Sprintf("cookie %s is %d bytes (name and value), more than the %d a cookie may hold", ck.Name, n, MaxCookieSize))
			continue
		}
		if len(line) > MaxSetCookie {
			refuse(fmt.Sprintf("cookie %s is set by a field of %d bytes, more than the %d the client reads", ck.Name, len(line), MaxSetCookie))
			continue
		}
		id, ok := idOf(ck, host, u.Path)
		if !ok {
			cookies = append(cookies, ck) // the jar refuses it too
			continue
		}
		switch exp, gone := expiry(ck, now); {
		case gone:
			delete(jr.kept, id)
		default:
			if _, had := jr.kept[id]; !had && len(jr.kept) >= MaxCookies {
				cookies = append(cookies, jr.evict())
			}
			jr.sets++
			jr.kept[id] = kept{exp: exp, domain: ck.Domain, set: jr.sets}
		}
		cookies = append(cookies, ck)
	}
	jr.j.SetCookies(u, cookies)
	if refused > 0 {
		return fmt.Errorf("%w: %d of the response's %d Set-Cookie fields not kept (RFC 6265 §6.1 bounds); first: %s", errCookieLimit, refused, len(lines), first)
	}
	return nil
}

// evict forgets the cookie set longest ago and returns the Set-Cookie
// that deletes it from the cookiejar (its identity, expired).
func (jr *jar) evict() *nethttp.Cookie {
	var oldest cookieID
	first := true
	for id, k := range jr.kept {
		if first || k.set < jr.kept[oldest].set {
			oldest, first = id, false
		}
	}
	k := jr.kept[oldest]
	delete(jr.kept, oldest)
	jr.evicted++
	return &nethttp.Cookie{Name: oldest.name, Path: oldest.path, Domain: k.domain, MaxAge: -1}
}

// appendHeader appends the Cookie header field for u, "Cookie: a=1;
// b=2\r\n", with cookies in the jar's order (RFC 6265 §5.4: longer paths
// first, then earlier creation); nothing when there are none. It is an
// error (errCookieLimit, w unchanged) when there are more than
// MaxCookies or the value is longer than MaxCookieHeader.
func (jr *jar) appendHeader(w []byte, u *url.URL) ([]byte, error) {
	cookies := jr.j.Cookies(u)
	if len(cookies) == 0 {
		return w, nil
	}
	if len(cookies) > MaxCookies {
		return w, fmt.Errorf("%w: %d cookies for %s, more than the %d a virtual user sends", errCookieLimit, len(cookies), u.Path, MaxCookies)
	}
	n := len(w)
	w = append(w, "Cookie: "...)
	start := len(w)
	for i, ck := range cookies {
		if i > 0 {
			w = append(w, "; "...)
		}
		w = append(w, ck.String()...)
	}
	if size := len(w) - start; size > MaxCookieHeader {
		return w[:n], fmt.Errorf("%w: a Cookie header of %d bytes for %s, more than the %d a virtual user sends", errCookieLimit, size, u.Path, MaxCookieHeader)
	}
	return append(w, '\r', '\n'), nil
}

// idOf is the identity cookiejar files ck under, set in a response to a
// request for host and path; ok is false when cookiejar refuses ck: a
// Domain that is not host and does not cover it, or is a public suffix
// (RFC 6265 §5.3 steps 5 and 6; an IP host takes only its own).
func idOf(ck *nethttp.Cookie, host, path string) (cookieID, bool) {
	id := cookieID{domain: host, path: ck.Path, name: ck.Name}
	if d := strings.ToLower(strings.TrimPrefix(ck.Domain, ".")); d != "" && d != host {
		if !strings.HasSuffix(host, "."+d) || net.ParseIP(host) != nil {
			return id, false
		}
		if ps, _ := publicsuffix.PublicSuffix(d); ps == d {
			return id, false
		}
		id.domain = d
	}
	if !strings.HasPrefix(id.path, "/") {
		// The default path (RFC 6265 §5.1.4): the request path up to,
		// not including, its last slash; "/" when that is empty.
		id.path = "/"
		if i := strings.LastIndex(path, "/"); i > 0 {
			id.path = path[:i]
		}
	}
	return id, true
}

// expiry is when ck expires (zero: at the end of the session) or gone
// when it deletes the cookie: Max-Age ≤ 0, or an Expires not after now
// without Max-Age, which takes precedence (RFC 6265 §5.3 step 3).
func expiry(ck *nethttp.Cookie, now time.Time) (exp time.Time, gone bool) {
	switch {
	case ck.MaxAge < 0:
		return time.Time{}, true
	case ck.MaxAge > 0:
		return now.Add(time.Duration(ck.MaxAge) * time.Second), false
	case ck.Expires.IsZero():
		return time.Time{}, false
	default:
		return ck.Expires, !ck.Expires.After(now)
	}
}

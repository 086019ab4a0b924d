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
// past them does not grow the client's requests and memory without end:
// the step that would go past fails, class drivers.ClientError with code
// drivers.CodeCookieLimit (the client's limit, not the target's error).
const (
	// MaxCookies is the most cookies one virtual user keeps: 50, the
	// minimum per domain (a virtual user talks to one target host).
	MaxCookies = 50
	// MaxCookieSize is the longest Set-Cookie value kept, in bytes: its
	// name, value and attributes, as §6.1 measures a cookie (4096).
	MaxCookieSize = 4096
	// MaxCookieHeader is the longest Cookie header value sent, in bytes:
	// what MaxCookies cookies of MaxCookieSize make, with the "; "
	// between them and the quotes a value may need. It binds only if the
	// jar sends more than it was counted to keep.
	MaxCookieHeader = MaxCookies * (MaxCookieSize + 4)
)

// jar is one virtual user's cookie jar: net/http/cookiejar (RFC 6265,
// with the public suffix list) bounded by MaxCookies and MaxCookieSize.
// cookiejar cannot say how many cookies it holds, so jar counts them
// itself, by the identity cookiejar files them under (domain, path,
// name) and with their expiry. One goroutine uses it at a time (its
// conn's).
type jar struct {
	j    *cookiejar.Jar
	kept map[cookieID]time.Time // expiry; zero for a session cookie
}

// cookieID is what a cookie replaces a stored one by (RFC 6265 §5.3
// step 11): its domain, path and name.
type cookieID struct{ domain, path, name string }

func newJar() *jar {
	// cookiejar.New returns no error (its signature keeps one for later
	// options).
	j, _ := cookiejar.New(&cookiejar.Options{PublicSuffixList: publicsuffix.List})
	return &jar{j: j, kept: map[cookieID]time.Time{}}
}

// errCookieLimit is the error of a step that went past a jar's bounds.
var errCookieLimit = errors.New("cookie jar overflow")

// store files the Set-Cookie values lines of a response to u in the jar.
// A value that does not parse is ignored (RFC 6265 §5.2); a cookie the
// jar would refuse (a Domain that does not cover u's host) is not
// counted. A value longer than MaxCookieSize, or a new cookie that would
// make the jar hold more than MaxCookies, is not stored, and store
// returns an error (errCookieLimit) naming the first such cookie and how
// many there were; the others are stored all the same. Changing or
// deleting a cookie already kept is always allowed.
func (jr *jar) store(u *url.URL, lines []string, now time.Time) error {
	for id, exp := range jr.kept {
		if !exp.IsZero() && !exp.After(now) {
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
		if len(line) > MaxCookieSize {
			refuse(fmt.Sprintf("cookie %s is %d bytes, more than the %d a cookie may hold", ck.Name, len(line), MaxCookieSize))
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
				refuse(fmt.Sprintf("cookie %s would be the jar's %d-th, more than the %d a virtual user keeps", ck.Name, len(jr.kept)+1, MaxCookies))
				continue
			}
			jr.kept[id] = exp
		}
		cookies = append(cookies, ck)
	}
	jr.j.SetCookies(u, cookies)
	if refused > 0 {
		return fmt.Errorf("%w: %d of the response's %d Set-Cookie fields not kept (RFC 6265 §6.1 bounds); first: %s", errCookieLimit, refused, len(lines), first)
	}
	return nil
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

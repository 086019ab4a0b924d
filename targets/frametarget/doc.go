// Package frametarget is the binary-frame reference target (`runner serve
// frame`): a TCP server speaking LKDF, a length-prefixed binary request /
// response protocol, whose behaviour is known exactly, so that what a
// binary-frame load generator measures can be checked against what the
// target did. Each request frame gets one response frame with the same
// requestId (an echo of its payload, or an iterated SHA-256 digest), run
// on one of a fixed number of Netty-style event loops. The truth knobs
// make it misbehave in known ways: late, reordered or malformed replies,
// replies to ids never sent, and server-initiated closes. The same port
// answers HTTP GET /healthz and GET /stats (its counters as flat JSON),
// for the spawner's health checks and for reconciliation.
package frametarget

// Package wsgateway is the WebSocket reference target (`runner serve
// ws-gateway`): a synthetic message gateway whose behaviour is known
// exactly, so that what a WebSocket load generator measures can be checked
// against what the gateway did. Clients send JSON messages with an id and
// get one reply per message, after a known service time, or at once when a
// per-connection token bucket is empty; a serial mode serves one message
// at a time per connection. The truth knobs (truth.go) make it misbehave
// in known ways: server-initiated closes, replies that never come, come
// out of order, twice, with unknown ids, or late. It counts what it does
// and publishes the counters at GET /stats and in reply to the control
// message {"cmd":"stats"}, for reconciliation.
package wsgateway

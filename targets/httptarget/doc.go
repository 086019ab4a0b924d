// Package httptarget is the HTTP reference target (`runner serve http`):
// a server whose behaviour is known exactly, so that what runner measures
// can be checked against what the target did. It counts what it serves
// and publishes the counters at GET /stats for reconciliation.
package httptarget

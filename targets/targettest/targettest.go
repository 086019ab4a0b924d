// Package targettest is a test kit for the reference targets: it runs a
// target's Serve in a test on a free loopback port, stopped (and its return
// checked) when the test ends.
package targettest

import (
	"context"
	"sync"
	"testing"
	"time"
)

// Serve is a reference target's Serve with its configuration bound.
type Serve func(ctx context.Context, ready func(addr string)) error

// Start runs serve and returns the host:port it listens on, once ready
// (failing the test if it errs or is not ready within 5 s), and stop,
// which cancels it and checks that it returned nil within 5 s; stop
// returns how long that took, runs once, and runs when the test ends.
func Start(t testing.TB, serve Serve) (addr string, stop func() time.Duration) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- serve(ctx, func(a string) { addrc <- a }) }()
	select {
	case addr = <-addrc:
	case err := <-done:
		cancel()
		t.Fatalf("Serve: %v", err)
	case <-time.After(5 * time.Second):
		cancel()
		t.Fatal("not ready within 5s")
	}
	var once sync.Once
	var took time.Duration
	stop = func() time.Duration {
		once.Do(func() {
			t0 := time.Now()
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Serve returned %v after cancel", err)
				}
			case <-time.After(5 * time.Second):
				t.Error("Serve did not return within 5s of cancel")
			}
			took = time.Since(t0)
		})
		return took
	}
	t.Cleanup(func() { stop() })
	return addr, stop
}

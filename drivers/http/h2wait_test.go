package http

import (
	"context"
	"errors"
	nethttp "net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runner-dev/runner/drivers"
)

// The wait for a stream under the server's SETTINGS_MAX_CONCURRENT_STREAMS
// is the client's queue, not the request's service: a request waiting
// longer than its timeout is not a timeout (its timeout starts with its
// stream) and succeeds once a stream frees; one still waiting when the
// phase's drain runs out (Request.QueueEnd) or its context ends was never
// sent (Outcome.Unsent, class cancelled, no byte out), and the server
// never saw it. Before the fix the first timed out as a target timeout
// and the others were counted as sent.
func TestH2_StreamWaitIsTheClientsQueue(t *testing.T) {
	var served atomic.Int64
	hold := make(chan chan struct{}, 4)
	s := newH2Server(t, false, 1, func(w nethttp.ResponseWriter, r *nethttp.Request) {
		served.Add(1)
		if r.URL.Path == "/1" {
			release := make(chan struct{})
			hold <- release
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
	})
	cfg := h2Config(s)
	cfg.Path = "/{{seq}}"
	d := newDriver(t, cfg, s.URL)
	c := dial(t, d)
	if got, ok := d.StreamCap(); got != 1 || !ok {
		t.Fatalf("StreamCap = %d, %v; want 1", got, ok)
	}
	holder := func() (release chan struct{}, done <-chan drivers.Outcome) {
		t.Helper()
		ch := make(chan drivers.Outcome, 1)
		go func() {
			ch <- c.Do(context.Background(), drivers.Request{Seq: 1, Deadline: time.Now().Add(10 * time.Second)})
		}()
		select {
		case release = <-hold:
		case <-time.After(10 * time.Second):
			t.Fatal("the holding request never reached the server")
		}
		return release, ch
	}
	waiter := func(ctx context.Context, timeout time.Duration, queueEnd chan struct{}) <-chan drivers.Outcome {
		ch := make(chan drivers.Outcome, 1)
		go func() {
			ch <- c.Do(ctx, drivers.Request{Seq: 2, Deadline: time.Now().Add(timeout), QueueEnd: queueEnd})
		}()
		return ch
	}

	t.Run("waits past its timeout, then is sent", func(t *testing.T) {
		release, held := holder()
		w := waiter(context.Background(), 100*time.Millisecond, make(chan struct{}))
		select {
		case out := <-w:
			t.Fatalf("the waiting request ended before a stream freed: %s %s %v", out.Class, out.Code, out.Err)
		case <-time.After(400 * time.Millisecond): // four times its timeout
		}
		freed := time.Now()
		close(release)
		if out := <-held; out.Class != drivers.OK {
			t.Fatalf("holder: %s %s %v", out.Class, out.Code, out.Err)
		}
		out := <-w
		if out.Class != drivers.OK || out.Unsent {
			t.Fatalf("waiting request: %s %s unsent %v: %v; want ok once its stream came", out.Class, out.Code, out.Unsent, out.Err)
		}
		if out.Sent.Before(freed) {
			t.Errorf("Sent %v is before the stream freed at %v: the wait is not service", out.Sent, freed)
		}
	})

	for _, how := range []string{"drain ran out", "context cancelled"} {
		t.Run(how, func(t *testing.T) {
			release, held := holder()
			before := served.Load()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			queueEnd := make(chan struct{})
			w := waiter(ctx, 10*time.Second, queueEnd)
			time.Sleep(50 * time.Millisecond) // let it reach the wait
			if how == "drain ran out" {
				close(queueEnd)
			} else {
				cancel()
			}
			out := <-w
			close(release)
			<-held
			if !out.Unsent || out.Class != drivers.Cancelled || out.BytesOut != 0 || out.Responded {
				t.Fatalf("got %s %q unsent %v bytes out %d: %v; want unsent, cancelled, nothing written", out.Class, out.Code, out.Unsent, out.BytesOut, out.Err)
			}
			if how == "drain ran out" && out.Code != drivers.CodePhaseEnd {
				t.Errorf("code %q, want %q", out.Code, drivers.CodePhaseEnd)
			}
			// The holder's response came; the unsent request must not
			// have reached the server since.
			time.Sleep(50 * time.Millisecond)
			if got := served.Load() - before; got != 0 {
				t.Errorf("the server served %d request(s) after the holder, want 0", got)
			}
			if out.Err == nil || !errors.Is(out.Err, context.Canceled) && how == "context cancelled" {
				t.Errorf("error %v does not say the context ended", out.Err)
			}
		})
	}
}

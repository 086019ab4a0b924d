package relink

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

type link struct{ n int }

// Many requests find the link gone at once: one opens, the others use it.
func TestOneOpenerForMany(t *testing.T) {
	var s Slot[link]
	var opens atomic.Int32
	open := func(context.Context) (*link, error) {
		n := opens.Add(1)
		time.Sleep(20 * time.Millisecond)
		return &link{n: int(n)}, nil
	}
	var wg sync.WaitGroup
	got := make([]*link, 16)
	openedBy := atomic.Int32{}
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, opened, _, err := s.Get(context.Background(), open, func(*link) {})
			if err != nil {
				t.Error(err)
			}
			if opened {
				openedBy.Add(1)
			}
			got[i] = l
		}()
	}
	wg.Wait()
	if opens.Load() != 1 || openedBy.Load() != 1 {
		t.Fatalf("%d opens, %d callers say they opened", opens.Load(), openedBy.Load())
	}
	for _, l := range got {
		if l != got[0] {
			t.Fatal("callers got different links")
		}
	}
	s.Clear(got[0])
	if l, opened, _, _ := s.Get(context.Background(), open, func(*link) {}); !opened || l.n != 2 {
		t.Errorf("after Clear: opened %v link %d", opened, l.n)
	}
}

func TestReleaseAndErrors(t *testing.T) {
	var s Slot[link]
	boom := errors.New("refused")
	if _, opened, _, err := s.Get(context.Background(), func(context.Context) (*link, error) { return nil, boom }, nil); err != boom || opened {
		t.Errorf("failed open: %v %v", opened, err)
	}
	first := &link{}
	if !s.Set(first) {
		t.Fatal("Set refused")
	}
	if l := s.Release(); l != first {
		t.Errorf("Release returned %v", l)
	}
	if s.Release() != nil || !s.Released() || s.Set(&link{}) {
		t.Error("released twice, or Set after release")
	}
	if _, _, _, err := s.Get(context.Background(), nil, nil); err != ErrReleased {
		t.Errorf("Get after release: %v", err)
	}
	// Released while opening: the new link is discarded.
	var s2 Slot[link]
	discarded := make(chan *link, 1)
	started := make(chan struct{})
	go func() {
		<-started
		s2.Release()
	}()
	_, _, _, err := s2.Get(context.Background(), func(context.Context) (*link, error) {
		close(started)
		time.Sleep(20 * time.Millisecond)
		return &link{n: 7}, nil
	}, func(l *link) { discarded <- l })
	if err != ErrReleased || (<-discarded).n != 7 {
		t.Errorf("release during open: %v", err)
	}
}

// A waiter whose context ends stops waiting for the opener.
func TestWaitCancelled(t *testing.T) {
	var s Slot[link]
	release := make(chan struct{})
	go s.Get(context.Background(), func(context.Context) (*link, error) { <-release; return &link{}, nil }, nil)
	time.Sleep(10 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, _, _, err := s.Get(ctx, nil, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("%v", err)
	}
	close(release)
}

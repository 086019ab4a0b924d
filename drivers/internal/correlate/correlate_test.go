package correlate

import (
	"sync"
	"testing"
)

func TestDeliverAndStrays(t *testing.T) {
	var tb Table[uint64, string]
	a, b := tb.Add(1), tb.Add(2)
	if tb.Len() != 2 {
		t.Fatalf("len %d", tb.Len())
	}
	if tb.Add(1) != nil {
		t.Error("an id in flight was registered again (wrapped ids must not steal a reply)")
	}
	// Out of order.
	if _, ok := tb.Deliver(2, "two"); !ok || <-b != "two" {
		t.Error("2 not delivered")
	}
	if _, ok := tb.Deliver(1, "one"); !ok || <-a != "one" {
		t.Error("1 not delivered")
	}
	if s, ok := tb.Deliver(1, "again"); ok || s != Duplicate {
		t.Errorf("second reply to 1: %v %v, want duplicate", s, ok)
	}
	if s, ok := tb.Deliver(99, "x"); ok || s != Unknown {
		t.Errorf("99: %v %v, want unknown", s, ok)
	}
	c := tb.Add(3)
	tb.Forget(3, c, true)
	if s, ok := tb.Deliver(3, "late"); ok || s != Late {
		t.Errorf("after timeout: %v %v, want late", s, ok)
	}
	if s, _ := tb.Deliver(3, "late again"); s != Duplicate {
		t.Errorf("a second late reply: %v, want duplicate", s)
	}
	d := tb.Add(4)
	tb.Forget(4, d, false)
	if s, _ := tb.Deliver(4, "x"); s != Unknown {
		t.Errorf("reply to a cancelled request: %v, want unknown", s)
	}
	if tb.Len() != 0 {
		t.Errorf("len %d after everything ended", tb.Len())
	}
}

// The memory of answered ids is bounded: the oldest is forgotten first.
func TestBounded(t *testing.T) {
	var tb Table[int, int]
	for i := 0; i < RememberAnswered+10; i++ {
		tb.Add(i)
		tb.Deliver(i, i)
	}
	if s, _ := tb.Deliver(0, 0); s != Unknown {
		t.Errorf("id 0, %d answers ago: %v, want forgotten (unknown)", RememberAnswered+10, s)
	}
	if s, _ := tb.Deliver(RememberAnswered+9, 0); s != Duplicate {
		t.Errorf("the newest answered id: %v, want duplicate", s)
	}
	if n := len(tb.answered.set); n > RememberAnswered {
		t.Errorf("remembers %d ids", n)
	}
}

func TestConcurrent(t *testing.T) {
	var tb Table[int, int]
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g * 1000; i < g*1000+1000; i++ {
				ch := tb.Add(i)
				go tb.Deliver(i, i)
				if v := <-ch; v != i {
					t.Errorf("got %d for %d", v, i)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// BenchmarkAddDeliver is the correlate path of one request: register its
// id, deliver its reply, read it (issue 7 wants no allocation here).
func BenchmarkAddDeliver(b *testing.B) {
	var tb Table[uint64, int]
	b.ReportAllocs()
	for i := range b.N {
		id := uint64(i)
		ch := tb.Add(id)
		tb.Deliver(id, i)
		<-ch
		tb.Release(ch)
	}
}

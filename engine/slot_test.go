package engine

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/runner-dev/runner/drivers"
	"github.com/runner-dev/runner/drivers/fake"
	"github.com/runner-dev/runner/schema"
)

// Request.Slot is the connection slot a request is sent on, global across
// segments: the segments of a run use between them exactly the slots
// 0 … connections−1 one generator uses, segment K of N only those ≡ K mod N.
func TestRequestSlotIsGlobalAcrossSegments(t *testing.T) {
	for name, ph := range map[string]schema.Phase{
		"closed": {Closed: &schema.Closed{Connections: 7}, Duration: dur("1s")},
		"open":   {Open: &schema.Open{Rate: constRate(200), Connections: 5}, Duration: dur("1s")},
	} {
		conns := 7
		if ph.Open != nil {
			conns = 5
		}
		for _, n := range []int{1, 2, 3} {
			t.Run(name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					pl := onePhase(t, ph, time.Second)
					union := map[int]bool{}
					for k := range n {
						var mu sync.Mutex
						seen := map[int]int{}
						d := &fake.Driver{StepService: func(r drivers.Request) time.Duration {
							mu.Lock()
							seen[r.Slot]++
							mu.Unlock()
							return 20 * time.Millisecond
						}}
						r := &Runner{Driver: d, Timeout: time.Second, NewSleeper: NewTimerSleeper, Segment: Segment{K: k, N: n}}
						if _, err := r.Run(context.Background(), pl); err != nil {
							t.Fatal(err)
						}
						for slot := range seen {
							if slot < 0 || slot >= conns || slot%n != k {
								t.Errorf("segment %d/%d sent on slot %d; want one of 0…%d that is %d mod %d", k, n, slot, conns-1, k, n)
							}
							if union[slot] {
								t.Errorf("slot %d used by two segments", slot)
							}
							union[slot] = true
						}
					}
					if len(union) != conns {
						t.Errorf("N=%d: slots used %v, want all of 0…%d", n, union, conns-1)
					}
				})
			})
		}
	}
}

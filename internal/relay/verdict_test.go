package relay

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

func TestCombineKeepsBothReplyHooks(t *testing.T) {
	var order []string
	first := Verdict{Params: []byte(`{"a":1}`), OnReply: func(r, e []byte) ([]byte, []byte) {
		order = append(order, "first")
		return append(r, '1'), e
	}}
	second := Verdict{OnReply: func(r, e []byte) ([]byte, []byte) {
		order = append(order, "second")
		return append(r, '2'), e
	}}
	v := Combine(first, second)
	if string(v.Params) != `{"a":1}` {
		t.Errorf("params %s, want first's", v.Params)
	}
	r, _ := v.OnReply([]byte("r"), nil)
	if string(r) != "r21" || len(order) != 2 || order[0] != "second" {
		t.Errorf("reply %q, order %v: want both hooks, innermost first", r, order)
	}
	if v := Combine(Verdict{Refuse: "no"}, second); v.Refuse != "no" || v.OnReply != nil {
		t.Errorf("first's refusal must end the command: %+v", v)
	}
	if v := Combine(first, Verdict{Local: []byte("{}")}); string(v.Local) != "{}" {
		t.Errorf("second's local answer lost: %+v", v)
	}
	if v := Combine(first, Verdict{Params: []byte(`{"b":2}`)}); string(v.Params) != `{"b":2}` || v.OnReply == nil {
		t.Errorf("second's params must win and first's hook stay: %+v", v)
	}
}

func TestShareRateAndWindow(t *testing.T) {
	// In a bubble (testing/synctest) the burst is taken in one instant and
	// the slot wait is exact, however loaded the machine.
	synctest.Test(t, func(t *testing.T) {
		s := NewShare(10, 2)
		n := 0
		for range 100 {
			if s.allow() {
				n++
			}
		}
		if n != 20 {
			t.Errorf("allowed %d in a burst, want 20 (twice the rate)", n)
		}
		ctx := context.Background()
		for i := range 2 {
			if !s.acquire(ctx, nil) {
				t.Fatalf("slot %d of the window's two was not free", i+1)
			}
		}
		start := time.Now()
		if s.acquire(ctx, nil) {
			t.Error("a third slot of a window of two")
		}
		if d := time.Since(start); d != slotWait {
			t.Errorf("a full window waited %v, want %v", d, slotWait)
		}
		s.release()
		if !s.acquire(ctx, nil) {
			t.Error("a released slot was not free again")
		}
		quit := make(chan struct{})
		close(quit)
		if s.acquire(ctx, quit) {
			t.Error("acquire on a closed agent took a slot")
		}
	})
}

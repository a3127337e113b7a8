package dialogs

import (
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type rec struct {
	mu  sync.Mutex
	got []map[string]any
}

func (r *rec) Send(session, method string, params any) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, map[string]any{"session": session, "method": method, "params": params})
	return nil
}

func (r *rec) n() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.got)
}

func TestAnswers(t *testing.T) {
	for _, c := range []struct {
		typ    string
		accept bool
	}{{"alert", false}, {"confirm", false}, {"prompt", false}, {"beforeunload", true}} {
		r := &rec{}
		h := New(r, 0, nil)
		h.Opening("S1", []byte(`{"type":"`+c.typ+`","message":"m","url":"http://a.test/"}`))
		if r.n() != 1 {
			t.Fatalf("%s: %d answers", c.typ, r.n())
		}
		got := r.got[0]
		if got["session"] != "S1" || got["method"] != "Page.handleJavaScriptDialog" || got["params"].(map[string]any)["accept"] != c.accept {
			t.Errorf("%s: answer %v", c.typ, got)
		}
		h.Close()
	}
}

func TestGrace(t *testing.T) {
	r := &rec{}
	h := New(r, 50*time.Millisecond, nil)
	h.Opening("S1", []byte(`{"type":"alert"}`))
	if r.n() != 0 {
		t.Fatal("answered before the grace period")
	}
	deadline := time.Now().Add(2 * time.Second)
	for r.n() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if r.n() != 1 {
		t.Fatal("not answered after the grace period")
	}
	h.Opening("S1", []byte(`{"type":"alert"}`))
	h.Close() // stops the pending answer
	time.Sleep(100 * time.Millisecond)
	if r.n() != 1 {
		t.Fatal("answered after Close")
	}
}

func TestLateAnswer(t *testing.T) {
	res, errRaw := LateAnswer(nil, []byte(`{"code":-32602,"message":"No dialog is showing"}`))
	if string(res) != "{}" || errRaw != nil {
		t.Fatalf("LateAnswer = %s, %s", res, errRaw)
	}
	res, errRaw = LateAnswer([]byte(`{}`), nil)
	if string(res) != "{}" || errRaw != nil {
		t.Fatalf("LateAnswer passthrough = %s, %s", res, errRaw)
	}
}
